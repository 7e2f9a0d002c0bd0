/** The sample application: a Spring Data Spanner service with spanner-tuning, and its page. */
package io.github.spannertuning.sample;
