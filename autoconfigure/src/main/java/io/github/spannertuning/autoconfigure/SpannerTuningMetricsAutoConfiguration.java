package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.metrics.SpannerChannelMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;

/**
 * Binds {@link SpannerChannelMetrics} for every tuned Spanner client, tagged with its bean name,
 * including clients created after the registry. Boot's own switch {@code
 * management.metrics.enable.spanner.tuning=false} filters them out as well.
 *
 * <p>Ordered by name after the auto-configurations that make the {@link MeterRegistry}: Boot 3's
 * (in spring-boot-actuator-autoconfigure) and Boot 4's (moved to spring-boot-micrometer-metrics),
 * so that one artifact works on both. Without the ordering the {@code @ConditionalOnBean} below is
 * evaluated before the registry exists and no meter appears.
 */
@AutoConfiguration(
    after = SpannerTuningAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"
    })
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean({MeterRegistry.class, SpannerTuningRegistry.class})
// Not @ConditionalOnBooleanProperty: Boot 3.3 and 3.4 lack it (see
// ConditionalOnSpannerTuningEnabled).
@ConditionalOnProperty(
    name = "spanner.tuning.metrics.enabled",
    havingValue = "true",
    matchIfMissing = true)
public class SpannerTuningMetricsAutoConfiguration {

  @Autowired
  void bindSpannerClientsToRegistry(SpannerTuningRegistry clients, MeterRegistry registry) {
    clients.onRegister(
        (name, state) -> new SpannerChannelMetrics(state, name, Tags.empty()).bindTo(registry));
  }
}
