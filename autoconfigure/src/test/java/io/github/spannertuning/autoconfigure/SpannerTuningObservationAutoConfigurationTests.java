package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.observation.SpannerCallMeterObservationHandler;
import io.github.spannertuning.observation.SpannerCallObservations;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.MeterObservationHandler;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Every Spanner call as an observation, wired by Boot's own observation and metrics
 * auto-configurations, for two clients of the application's own; Boot's and the starter's switches.
 */
class SpannerTuningObservationAutoConfigurationTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  ObservationAutoConfiguration.class,
                  MetricsAutoConfiguration.class,
                  SimpleMetricsExportAutoConfiguration.class,
                  CompositeMeterRegistryAutoConfiguration.class,
                  SpannerTuningObservationAutoConfiguration.class,
                  SpannerTuningAutoConfiguration.class))
          .withUserConfiguration(TwoClients.class);

  @Test
  void eachClientsCallsAreTimedUnderItsName() {
    this.contextRunner.run(
        (context) -> {
          pointSelects(context, "spannerA", 5);
          pointSelects(context, "spannerB", 3);
          assertThat(reads(context, "spannerA").count()).isEqualTo(5);
          assertThat(reads(context, "spannerB").count()).isEqualTo(3);
          assertThat(
                  context
                      .getBean(MeterRegistry.class)
                      .get("spanner.client.attempt")
                      .tag("spanner.client", "spannerA")
                      .tag("db.operation.name", "ExecuteStreamingSql")
                      .timer()
                      .count())
              .isEqualTo(5);
          assertThat(state(context, "spannerA").observations().status())
              .isEqualTo(FeatureState.Status.ON);
        });
  }

  @Test
  void theStartersHandlerTimesTheCallsAheadOfBootsAndLeavesOtherObservationsToBoots() {
    this.contextRunner.run(
        (context) -> {
          assertThat(context).hasSingleBean(SpannerCallMeterObservationHandler.class);
          pointSelects(context, "spannerA", 4);
          MeterRegistry registry = context.getBean(MeterRegistry.class);
          assertThat(reads(context, "spannerA").count()).isEqualTo(4);
          assertThat(reads(context, "spannerA").getId().getTag("error")).isEqualTo("none");
          // Boot's default handler would also have made the long task timer: it never ran.
          assertThat(registry.find("spanner.client.operation.active").meters()).isEmpty();
          assertThat(registry.find("spanner.client.attempt.active").meters()).isEmpty();
          Observation.createNotStarted("app.work", context.getBean(ObservationRegistry.class))
              .observe(() -> {});
          assertThat(registry.get("app.work").timer().count()).isEqualTo(1);
          assertThat(registry.find("app.work.active").longTaskTimers()).hasSize(1);
        });
  }

  @Test
  void anApplicationsOwnMeterHandlerTimesTheCalls() {
    this.contextRunner
        .withBean("ownMeterHandler", OwnMeterHandler.class, OwnMeterHandler::new)
        .run(
            (context) -> {
              assertThat(context).doesNotHaveBean(SpannerCallMeterObservationHandler.class);
              pointSelects(context, "spannerA", 2);
              assertThat(
                      context
                          .getBean(MeterRegistry.class)
                          .find("spanner.client.operation")
                          .meters())
                  .isEmpty();
              assertThat(state(context, "spannerA").operations())
                  .filteredOn((operation) -> operation.method().equals("ExecuteStreamingSql"))
                  .singleElement()
                  .satisfies((operation) -> assertThat(operation.count()).isEqualTo(2));
            });
  }

  @Test
  void bootsDistributionPropertiesShapeTheTimers() {
    this.contextRunner
        .withPropertyValues(
            "management.metrics.distribution.percentiles.spanner.client.operation=0.5,0.99")
        .run(
            (context) -> {
              pointSelects(context, "spannerA", 3);
              assertThat(reads(context, "spannerA").takeSnapshot().percentileValues()).hasSize(2);
            });
  }

  @Test
  void bootsObservationSwitchTurnsThemOff() {
    this.contextRunner
        .withPropertyValues("management.observations.enable.spanner.client=false")
        .run((context) -> assertOff(context, "management.observations.enable.spanner.client"));
  }

  @Test
  void theStartersSwitchTurnsThemOff() {
    this.contextRunner
        .withPropertyValues("spanner.tuning.observations.enabled=false")
        .run((context) -> assertOff(context, "spanner.tuning.observations.enabled=false"));
  }

  @Test
  void withoutAnObservationRegistryNothingIsObserved() {
    new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(
                SpannerTuningObservationAutoConfiguration.class,
                SpannerTuningAutoConfiguration.class))
        .withUserConfiguration(TwoClients.class)
        .run(
            (context) -> {
              assertThat(context).doesNotHaveBean(SpannerCallObservations.class);
              pointSelects(context, "spannerA", 2);
              assertThat(state(context, "spannerA").observations().status())
                  .isEqualTo(FeatureState.Status.OFF);
              assertThat(state(context, "spannerA").operations()).isEmpty();
            });
  }

  /** An application's own meter handler, which makes no meter: Boot's default backs off for it. */
  static class OwnMeterHandler implements MeterObservationHandler<Observation.Context> {}

  private static void assertOff(AssertableApplicationContext context, String reason) {
    assertThat(context).hasNotFailed();
    assertThat(context).doesNotHaveBean(SpannerCallObservations.class);
    pointSelects(context, "spannerA", 2);
    MeterRegistry registry = context.getBean(MeterRegistry.class);
    assertThat(registry.find("spanner.client.operation").meters()).isEmpty();
    assertThat(registry.find("spanner.client.attempt").meters()).isEmpty();
    assertThat(registry.find("spanner.client.server.duration").meters()).isEmpty();
    FeatureState observations = state(context, "spannerA").observations();
    assertThat(observations.status()).isEqualTo(FeatureState.Status.OFF);
    assertThat(observations.reason()).contains(reason);
  }

  private static Timer reads(AssertableApplicationContext context, String client) {
    return context
        .getBean(MeterRegistry.class)
        .get("spanner.client.operation")
        .tag("spanner.client", client)
        .tag("db.operation.name", "ExecuteStreamingSql")
        .timer();
  }

  private static SpannerTuningState state(AssertableApplicationContext context, String client) {
    return context.getBean(SpannerTuningRegistry.class).client(client).orElseThrow();
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
