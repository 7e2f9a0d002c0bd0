/** Tuning for the Spanner client that Google's JDBC driver builds. Knows nothing of Spring. */
package io.github.spannertuning.jdbc;
