package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.observation.SpannerCallMeterObservationHandler;
import io.github.spannertuning.observation.SpannerCallObservations;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.annotation.Order;

/**
 * Observes every tuned Spanner client's calls in the application's {@link ObservationRegistry}:
 * {@code spanner.client.operation} and {@code spanner.client.attempt}, and the frontend's time as
 * {@code spanner.client.server.duration} in its {@link MeterRegistry}. Boot's own switch {@code
 * management.observations.enable.spanner.client=false} turns all of it off, as does {@code
 * spanner.tuning.observations.enabled=false}; {@code management.metrics.distribution.*} shapes the
 * timers.
 *
 * <p>Where Boot times observations with its plain {@link DefaultMeterObservationHandler} (metrics
 * without tracing), the Spanner calls' observations are timed by {@link
 * SpannerCallMeterObservationHandler} instead, ahead of it in the group of meter handlers: the same
 * timers for a fraction of the cost per call, and no long task timer. With tracing, Boot's
 * tracing-aware handler times them, so that a timer's exemplars name the span.
 *
 * <p>Ordered by name after the auto-configurations that make the registries, Boot 3's and Boot 4's,
 * so that one artifact works on both.
 */
@AutoConfiguration(
    afterName = {
      "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
      "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"
    })
@ConditionalOnClass(
    name = {
      "com.google.cloud.spanner.SpannerOptions",
      "io.micrometer.core.instrument.MeterRegistry"
    },
    value = ObservationRegistry.class)
@ConditionalOnSpannerTuningEnabled
@ConditionalOnBean(ObservationRegistry.class)
@ConditionalOnProperty(
    name = "spanner.tuning.observations.enabled",
    havingValue = "true",
    matchIfMissing = true)
@Conditional(SpannerClientObservationsEnabledCondition.class)
public class SpannerTuningObservationAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  SpannerCallObservations spannerCallObservations(
      ObservationRegistry observations, ObjectProvider<MeterRegistry> meters) {
    return new SpannerCallObservations(observations, meters.getIfAvailable());
  }

  /**
   * Ahead of Boot's {@link DefaultMeterObservationHandler} (unordered, so last) in the
   * first-matching group of meter handlers, which Boot builds in this order.
   */
  @Bean
  @Order(0)
  @ConditionalOnBean({DefaultMeterObservationHandler.class, MeterRegistry.class})
  @ConditionalOnMissingBean
  SpannerCallMeterObservationHandler spannerCallMeterObservationHandler(MeterRegistry meters) {
    return new SpannerCallMeterObservationHandler(meters);
  }
}
