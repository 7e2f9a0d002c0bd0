/** Micrometer meters of a tuned client's channel load and of the work spanner-tuning does. */
package io.github.spannertuning.metrics;
