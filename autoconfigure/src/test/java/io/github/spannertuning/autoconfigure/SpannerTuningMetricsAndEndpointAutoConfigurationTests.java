package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.actuate.autoconfigure.endpoint.jackson.JacksonEndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.actuate.endpoint.jackson.EndpointObjectMapper;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Meters and endpoint auto-configuration, with applications' own Spanner clients. */
class SpannerTuningMetricsAndEndpointAutoConfigurationTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  SpannerTuningAutoConfiguration.class,
                  SpannerTuningMetricsAutoConfiguration.class,
                  SpannerTuningEndpointAutoConfiguration.class))
          .withUserConfiguration(TwoClients.class);

  @Test
  void twoClientsAreTaggedApart() {
    this.contextRunner
        .withBean(SimpleMeterRegistry.class)
        .run(
            (context) -> {
              pointSelects(context, "spannerA", 5);
              pointSelects(context, "spannerB", 3);
              MeterRegistry registry = context.getBean(MeterRegistry.class);
              assertThat(channelCalls(registry, "spannerA")).isGreaterThanOrEqualTo(5);
              assertThat(channelCalls(registry, "spannerB")).isGreaterThanOrEqualTo(3);
              assertThat(
                      registry
                          .get("spanner.tuning.channel.count")
                          .tag("client", "spannerA")
                          .gauge()
                          .value())
                  .isPositive();
              assertThat(
                      registry
                          .get("spanner.tuning.stream.end.guard.skipped")
                          .tag("client", "spannerB")
                          .functionCounter()
                          .getId()
                          .getDescription())
                  .isNotBlank();
            });
  }

  @Test
  void metersAbsentWithoutARegistry() {
    this.contextRunner.run(
        (context) -> {
          assertThat(context).hasNotFailed();
          assertThat(context).doesNotHaveBean(SpannerTuningMetricsAutoConfiguration.class);
          pointSelects(context, "spannerA", 2);
        });
  }

  @Test
  void tuningMetricsSwitchTurnsThemOff() {
    this.contextRunner
        .withBean(SimpleMeterRegistry.class)
        .withPropertyValues("spanner.tuning.metrics.enabled=false")
        .run(
            (context) -> {
              assertThat(context).doesNotHaveBean(SpannerTuningMetricsAutoConfiguration.class);
              pointSelects(context, "spannerA", 2);
              assertThat(
                      context
                          .getBean(MeterRegistry.class)
                          .find("spanner.tuning.channel.calls")
                          .meters())
                  .isEmpty();
            });
  }

  /** The runner with Boot's metrics auto-configurations and its simple registry. */
  private ApplicationContextRunner withBootsMetrics() {
    return this.contextRunner.withConfiguration(
        AutoConfigurations.of(
            MetricsAutoConfiguration.class,
            SimpleMetricsExportAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class));
  }

  @Test
  void bootsMetricsEnableSwitchTurnsThemOff() {
    withBootsMetrics()
        .withPropertyValues("management.metrics.enable.spanner.tuning=false")
        .run(
            (context) -> {
              pointSelects(context, "spannerA", 2);
              MeterRegistry registry = context.getBean(MeterRegistry.class);
              assertThat(registry.find("spanner.tuning.channel.calls").meters()).isEmpty();
              assertThat(registry.find("spanner.tuning.channel.count").meters()).isEmpty();
            });
  }

  @Test
  void metersWithBootsRegistryWhenNotSwitchedOff() {
    withBootsMetrics()
        .run(
            (context) -> {
              pointSelects(context, "spannerA", 2);
              assertThat(channelCalls(context.getBean(MeterRegistry.class), "spannerA"))
                  .isGreaterThanOrEqualTo(2);
            });
  }

  @Test
  void endpointAbsentWhenNotAvailable() {
    this.contextRunner.run(
        (context) -> assertThat(context).doesNotHaveBean(SpannerTuningEndpoint.class));
    this.contextRunner
        .withPropertyValues(
            "management.endpoints.web.exposure.include=spannertuning",
            "management.endpoint.spannertuning.access=NONE")
        .run((context) -> assertThat(context).doesNotHaveBean(SpannerTuningEndpoint.class));
    this.contextRunner
        .withPropertyValues("management.endpoints.web.exposure.include=spannertuning")
        .run(
            (context) -> {
              assertThat(context).hasSingleBean(SpannerTuningEndpoint.class);
              assertThat(context.getBean(SpannerTuningEndpoint.class).clients().clients())
                  .containsOnlyKeys("spannerA", "spannerB");
            });
  }

  /** The endpoint's property is bound with it: a bad value stops startup, explained. */
  @Test
  void aBadShowStatementsStopsStartupNamingTheValuesItAccepts() {
    this.contextRunner
        .withPropertyValues(
            "management.endpoints.web.exposure.include=spannertuning",
            "management.endpoint.spannertuning.show-statements=sometimes")
        .run(
            (context) -> {
              assertThat(context).hasFailed();
              FailureAnalysis analysis =
                  new SpannerTuningPropertiesFailureAnalyzer().analyze(context.getStartupFailure());
              assertThat(analysis).isNotNull();
              assertThat(analysis.getAction())
                  .isEqualTo(
                      "Set 'management.endpoint.spannertuning.show-statements' to never,"
                          + " when-authorized or always.");
            });
  }

  @Test
  void imbalanceIsNullButPresentInTheJsonBeforeAnyCall() {
    this.contextRunner
        .withConfiguration(AutoConfigurations.of(JacksonEndpointAutoConfiguration.class))
        .withPropertyValues("management.endpoints.web.exposure.include=spannertuning")
        .run(
            (context) -> {
              ObjectMapper json = context.getBean(EndpointObjectMapper.class).get();
              SpannerTuningEndpoint endpoint = context.getBean(SpannerTuningEndpoint.class);
              JsonNode idle = json.valueToTree(endpoint.client("spannerA"));
              assertThat(idle.has("imbalance")).as("imbalance key present").isTrue();
              assertThat(idle.get("imbalance").isNull()).isTrue();
              pointSelects(context, "spannerA", 4);
              JsonNode busy = json.valueToTree(endpoint.client("spannerA"));
              assertThat(busy.get("imbalance").isNumber()).isTrue();
            });
  }

  @Test
  void closedClientLeavesTheRegistryAndItsMetersGo() {
    this.contextRunner
        .withBean(SimpleMeterRegistry.class)
        .run(
            (context) -> {
              pointSelects(context, "spannerA", 2);
              context.getBean("spannerA", Spanner.class).close();
              assertThat(context.getBean(SpannerTuningRegistry.class).clients())
                  .containsOnlyKeys("spannerB");
              MeterRegistry registry = context.getBean(MeterRegistry.class);
              assertThat(
                      registry
                          .find("spanner.tuning.channel.calls")
                          .tag("client", "spannerA")
                          .meters())
                  .isEmpty();
              assertThat(
                      registry
                          .find("spanner.tuning.channel.count")
                          .tag("client", "spannerB")
                          .meters())
                  .isNotEmpty();
            });
  }

  private static double channelCalls(MeterRegistry registry, String client) {
    return registry
        .find("spanner.tuning.channel.calls")
        .tag("client", client)
        .functionCounters()
        .stream()
        .mapToDouble((counter) -> counter.count())
        .sum();
  }

  private static void pointSelects(AssertableApplicationContext context, String bean, int count) {
    Spanner spanner = context.getBean(bean, Spanner.class);
    MockSpannerServer.pointSelects(spanner.getDatabaseClient(MockSpannerServer.DATABASE), count);
  }

  @Configuration(proxyBeanMethods = false)
  static class TwoClients {

    @Bean
    SpannerOptions optionsA() {
      return server.get().clientOptions(4).build();
    }

    @Bean
    SpannerOptions optionsB() {
      return server.get().clientOptions(2).build();
    }

    @Bean(destroyMethod = "close")
    Spanner spannerA(@Qualifier("optionsA") SpannerOptions options) {
      return options.getService();
    }

    @Bean(destroyMethod = "close")
    Spanner spannerB(@Qualifier("optionsB") SpannerOptions options) {
      return options.getService();
    }
  }
}
