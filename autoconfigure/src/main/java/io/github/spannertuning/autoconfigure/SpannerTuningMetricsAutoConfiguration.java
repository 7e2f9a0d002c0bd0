package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.metrics.SpannerChannelMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;

/**
 * Binds {@link SpannerChannelMetrics} for every tuned Spanner client, tagged with its bean name,
 * including clients created after the registry. Boot's own switch {@code
 * management.metrics.enable.spanner.tuning=false} filters them out as well.
 */
@AutoConfiguration(
    after = SpannerTuningAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
      "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration"
    })
@ConditionalOnClass(MeterRegistry.class)
@ConditionalOnBean({MeterRegistry.class, SpannerTuningRegistry.class})
@ConditionalOnBooleanProperty(name = "spanner.tuning.metrics.enabled", matchIfMissing = true)
public class SpannerTuningMetricsAutoConfiguration {

  @Autowired
  void bindSpannerClientsToRegistry(SpannerTuningRegistry clients, MeterRegistry registry) {
    clients.onRegister(
        (name, state) -> new SpannerChannelMetrics(state, name, Tags.empty()).bindTo(registry));
  }
}
