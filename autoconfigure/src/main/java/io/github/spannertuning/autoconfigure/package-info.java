/**
 * Spring Boot auto-configuration of spanner-tuning: the {@code spanner.tuning.*} properties, the
 * post-processor that tunes every {@code SpannerOptions} and {@code SpannerOptions.Builder} bean,
 * the registry of tuned clients by bean name, and the auto-configurations of the meters and the
 * endpoint.
 */
package io.github.spannertuning.autoconfigure;
