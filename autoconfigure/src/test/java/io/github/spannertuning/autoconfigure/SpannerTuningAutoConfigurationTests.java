package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.autoconfigure.core.GcpContextAutoConfiguration;
import com.google.cloud.spring.autoconfigure.spanner.GcpSpannerAutoConfiguration;
import com.google.cloud.spring.autoconfigure.spanner.GcpSpannerEmulatorAutoConfiguration;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.testing.DynamicPoolLine;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.grpc.ManagedChannelBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.gson.GsonAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The auto-configuration with spring-cloud-gcp's real Spanner auto-configuration, against Google's
 * mock Spanner server on loopback.
 */
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningAutoConfigurationTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  GsonAutoConfiguration.class,
                  GcpContextAutoConfiguration.class,
                  GcpSpannerEmulatorAutoConfiguration.class,
                  GcpSpannerAutoConfiguration.class,
                  SpannerTuningAutoConfiguration.class))
          .withPropertyValues(
              "spring.cloud.gcp.project-id=test-project",
              "spring.cloud.gcp.spanner.instance-id=test-instance",
              "spring.cloud.gcp.spanner.database=test-database")
          .withUserConfiguration(LocalServerConfiguration.class);

  @Test
  void tunesSpringCloudGcpClientWithApplicationCustomizer() {
    this.contextRunner.run(
        (context) -> {
          assertThat(context).hasNotFailed();
          SpannerTuningState state = tuningOf(context);
          assertThat(state.feature(Feature.STREAM_END_GUARD).status())
              .isEqualTo(GuardLine.expected());
          assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
              .isIn(Status.ON, Status.NATIVE);
          assertThat(state.feature(Feature.GRPC_GCP).status()).isIn(Status.ON, Status.NATIVE);
          // The application's customizer still applied: the client reaches the local server.
          assertThat(context.getBean(SpannerOptions.class).getHost())
              .isEqualTo("http://127.0.0.1:" + server.get().port());
          assertThat(context.getBean(SpannerTuningRegistry.class).clients())
              .containsOnlyKeys("spanner");
          assertTheGuardCountsPointSelects(context, state);
        });
  }

  @Test
  void logsOneInfoLineNamingTheBeanVersionsAndFeatures(CapturedOutput output) {
    this.contextRunner
        .withPropertyValues(
            "spanner.tuning.stream-end-guard.enabled=false", "spanner.tuning.channels=3")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              String prefix =
                  "spanner-tuning: tuned Spanner client 'spanner' (google-cloud-spanner "
                      + SpannerOptions.class.getPackage().getImplementationVersion()
                      + ", grpc-gcp ";
              assertThat(output.getAll().split(java.util.regex.Pattern.quote(prefix), -1))
                  .as("one line for the one client")
                  .hasSize(2);
              assertThat(output)
                  .contains("; pool grpc-gcp of 3 channels): single-use-distribution=")
                  .contains(
                      ", stream-end-guard=off (disabled by configuration), hedging=off (disabled by configuration), grpc-gcp=")
                  .doesNotContain("tuned Spanner client of project");
            });
  }

  @Test
  void anExperimentStartsOnTheClientAtStartupWhenItsPropertiesAreSet(CapturedOutput output) {
    this.contextRunner
        .withPropertyValues(
            "spanner.tuning.experiment.duration=4m", "spanner.tuning.experiment.slice=20s")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              SpannerTuningState state = tuningOf(context);
              ExperimentResult experiment = state.experiment();
              assertThat(experiment).isNotNull();
              assertThat(experiment.state()).isEqualTo("running");
              assertThat(experiment.slice()).isEqualTo("20s");
              assertThat(experiment.duration()).isEqualTo("4m");
              assertThat(experiment.progress().slices()).isEqualTo(12);
              assertThat(output)
                  .contains(
                      "spanner-tuning: experiment of 6 pairs of 20s slices started on Spanner"
                          + " client 'spanner' (spanner.tuning.experiment.*)");
            });
  }

  @Test
  void aFleetExperimentStartsAtStartupInTheSliceInForceOnTheWallClock(CapturedOutput output) {
    long sliceMillis = 20_000;
    long before = System.currentTimeMillis() / sliceMillis;
    this.contextRunner
        .withPropertyValues(
            "spanner.tuning.experiment.fleet=checkout-2026-12",
            "spanner.tuning.experiment.duration=4m",
            "spanner.tuning.experiment.slice=20s")
        .run(
            (context) -> {
              long after = System.currentTimeMillis() / sliceMillis;
              ExperimentResult experiment = tuningOf(context).experiment();
              assertThat(experiment.state()).isEqualTo("running");
              assertThat(experiment.fleet()).isEqualTo("checkout-2026-12");
              assertThat(experiment.sliceIndex()).isBetween(before, after);
              assertThat(experiment.arm()).isIn("tuned", "stock");
              assertThat(experiment.progress().recording()).isFalse();
              assertThat(experiment.sliceStarts()).hasSize(1);
              assertThat(output)
                  .contains(
                      "spanner-tuning: experiment of 6 pairs of 20s slices started on Spanner"
                          + " client 'spanner' (spanner.tuning.experiment.*); in fleet"
                          + " 'checkout-2026-12', joined in slice "
                          + experiment.sliceIndex()
                          + "; its result is in the spannertuning endpoint");
            });
  }

  @Test
  void noExperimentStartsWithoutItsProperties() {
    this.contextRunner.run(
        (context) -> {
          assertThat(context).hasNotFailed();
          assertThat(tuningOf(context).experiment()).isNull();
          assertThat(tuningOf(context).isExperimentRunning()).isFalse();
        });
  }

  @Test
  void singleUseDistributionSwitchTurnsItOff() {
    this.contextRunner
        .withPropertyValues("spanner.tuning.single-use-distribution.enabled=false")
        .run(
            (context) -> {
              SpannerTuningState state = tuningOf(context);
              assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
                  .isEqualTo(Status.OFF);
              assertThat(state.feature(Feature.STREAM_END_GUARD).status())
                  .isEqualTo(GuardLine.expected());
              pointSelects(context, 10);
              assertThat(state.singleUseRoutedCount()).isZero();
            });
  }

  @Test
  void streamEndGuardSwitchTurnsItOff() {
    this.contextRunner
        .withPropertyValues("spanner.tuning.stream-end-guard.enabled=false")
        .run(
            (context) -> {
              SpannerTuningState state = tuningOf(context);
              assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(Status.OFF);
              pointSelects(context, 20);
              assertThat(state.streamEndGuardSkippedCount()).isZero();
              assertThat(state.streamEndGuardDrainedCount()).isZero();
            });
  }

  @Test
  void grpcGcpIsSwitchedOnWhenTheApplicationHasItOff() {
    this.contextRunner
        .withPropertyValues("test.disable-grpc-gcp=true")
        .run(
            (context) -> {
              assertThat(context.getBean(SpannerOptions.class).isGrpcGcpExtensionEnabled())
                  .isTrue();
              assertThat(tuningOf(context).feature(Feature.GRPC_GCP).status()).isEqualTo(Status.ON);
            });
  }

  @Test
  void grpcGcpSwitchLeavesItOff() {
    this.contextRunner
        .withPropertyValues("test.disable-grpc-gcp=true", "spanner.tuning.grpc-gcp.enabled=false")
        .run(
            (context) -> {
              assertThat(context.getBean(SpannerOptions.class).isGrpcGcpExtensionEnabled())
                  .isFalse();
              SpannerTuningState state = tuningOf(context);
              assertThat(state.feature(Feature.GRPC_GCP).status()).isEqualTo(Status.OFF);
              assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
                  .isEqualTo(Status.UNSUPPORTED);
              pointSelects(context, 5);
            });
  }

  @Test
  void channelsSetsThePoolSize() {
    this.contextRunner
        .withPropertyValues("spanner.tuning.channels=3")
        .run(
            (context) ->
                assertThat(context.getBean(SpannerOptions.class).getNumChannels()).isEqualTo(3));
  }

  @Test
  void drainTimeoutIsBound() {
    assertThat(new SpannerTuningProperties().toTuning().getStreamEndGuardDrainTimeout())
        .isEqualTo(SpannerTuning.DEFAULT_DRAIN_TIMEOUT)
        .isEqualTo(Duration.ofSeconds(5));
    this.contextRunner
        .withPropertyValues("spanner.tuning.stream-end-guard.drain-timeout=750ms")
        .run(
            (context) ->
                assertThat(boundTuning(context).getStreamEndGuardDrainTimeout())
                    .isEqualTo(Duration.ofMillis(750)));
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({"learned, learned", "OFF, off", "45m, PT45M", "3s, PT3S"})
  void refreshAfterIsBound(String value, String bound) {
    assertThat(new SpannerTuningProperties().toTuning().getRefreshAfter()).isEqualTo("learned");
    this.contextRunner
        .withPropertyValues("spanner.tuning.warm-up.refresh-after=" + value)
        .run((context) -> assertThat(boundTuning(context).getRefreshAfter()).isEqualTo(bound));
  }

  @Test
  void maxConcurrentStreamsIsBound() {
    assertThat(new SpannerTuningProperties().toTuning().getStreamEndGuardMaxConcurrentStreams())
        .isEqualTo(SpannerTuning.DEFAULT_MAX_CONCURRENT_STREAMS)
        .isEqualTo(100);
    this.contextRunner
        .withPropertyValues("spanner.tuning.stream-end-guard.max-concurrent-streams=250")
        .run(
            (context) ->
                assertThat(boundTuning(context).getStreamEndGuardMaxConcurrentStreams())
                    .isEqualTo(250));
  }

  @Test
  void backsOffWhenDisabled() {
    this.contextRunner
        .withPropertyValues("spanner.tuning.enabled=false")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(SpannerTuningRegistry.class);
              assertThat(SpannerTuning.stateOf(context.getBean(SpannerOptions.class))).isEmpty();
              pointSelects(context, 5);
            });
  }

  @Test
  void tunesTheEmulatorPath() {
    this.contextRunner
        .withPropertyValues(
            "spring.cloud.gcp.spanner.emulator.enabled=true",
            "spring.cloud.gcp.spanner.emulator-host=127.0.0.1:" + server.get().port())
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              SpannerTuningState state = tuningOf(context);
              assertThat(state.feature(Feature.STREAM_END_GUARD).status())
                  .isEqualTo(GuardLine.expected());
              assertTheGuardCountsPointSelects(context, state);
            });
  }

  @Test
  void tunesTheApplicationsOwnSpannerOptions() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpannerTuningAutoConfiguration.class))
        .withUserConfiguration(OwnSpannerConfiguration.class)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(SpannerTuningRegistry.class).clients())
                  .containsOnlyKeys("mySpanner");
              assertThat(SpannerTuning.stateOf(context.getBean(SpannerOptions.class))).isPresent();
            });
  }

  @Test
  void anApplicationThatTurnsTheDynamicChannelPoolOnIsRoutedWhereTheLineCan(CapturedOutput output) {
    this.contextRunner
        .withPropertyValues("test.dynamic-channel-pool=true")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(SpannerOptions.class).isDynamicChannelPoolEnabled())
                  .isTrue();
              SpannerTuningState state = tuningOf(context);
              for (Feature routing :
                  new Feature[] {Feature.SINGLE_USE_DISTRIBUTION, Feature.TRANSACTION_ROUTING}) {
                assertThat(state.feature(routing).status()).isEqualTo(DynamicPoolLine.expected());
              }
              assertThat(state.feature(Feature.STREAM_END_GUARD).status())
                  .isEqualTo(GuardLine.expected());
              pointSelects(context, 10);
              if (DynamicPoolLine.routes()) {
                assertThat(state.singleUseRoutedCount()).isEqualTo(10);
                assertThat(state.isPoolDynamic()).isTrue();
                assertThat(output).contains("pool grpc-gcp dynamic, now 4 channels");
              } else {
                assertThat(state.singleUseRoutedCount()).isZero();
                assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).reason())
                    .startsWith("the client's dynamic channel pool is on");
                assertThat(output)
                    .contains(
                        "single-use-distribution=unsupported (the client's dynamic channel pool");
              }
            });
  }

  @Test
  void worksWithoutMicrometerOrActuator() {
    this.contextRunner
        .withClassLoader(new FilteredClassLoader(MeterRegistry.class, Endpoint.class))
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(tuningOf(context).feature(Feature.STREAM_END_GUARD).status())
                  .isEqualTo(GuardLine.expected());
              pointSelects(context, 5);
            });
  }

  /** The tuning the properties bound, as applied to the application's SpannerOptions. */
  private static SpannerTuning boundTuning(AssertableApplicationContext context) {
    return SpannerTuning.stateOf(context.getBean(SpannerOptions.class)).orElseThrow().tuning();
  }

  private static SpannerTuningState tuningOf(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed();
    return SpannerTuning.stateOf(context.getBean(Spanner.class).getOptions()).orElseThrow();
  }

  /**
   * Point selects on the context's client, closed on their last row: they drain, and the guard
   * counts them as their trailers arrive.
   */
  private static void assertTheGuardCountsPointSelects(
      AssertableApplicationContext context, SpannerTuningState state) {
    long before = GuardLine.closedAtLastCount(state);
    pointSelects(context, 20);
    await().atMost(Duration.ofSeconds(10)).until(() -> GuardLine.closedAtLastCount(state) > before);
  }

  @SuppressWarnings("unchecked")
  private static void pointSelects(AssertableApplicationContext context, int count) {
    DatabaseClient client =
        ((Supplier<DatabaseClient>) context.getBean("databaseClientProvider")).get();
    for (int i = 0; i < count; i++) {
      try (ResultSet resultSet =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(resultSet.next()).isTrue();
        assertThat(resultSet.getString("name")).isEqualTo("Alice");
      }
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class LocalServerConfiguration {

    @Bean
    CredentialsProvider credentialsProvider() {
      return NoCredentials::getInstance;
    }

    @Bean
    SpannerOptionsCustomizer localServer(org.springframework.core.env.Environment environment) {
      boolean disableGrpcGcp =
          environment.getProperty("test.disable-grpc-gcp", Boolean.class, false);
      boolean dynamicPool =
          environment.getProperty("test.dynamic-channel-pool", Boolean.class, false);
      return (builder) -> {
        builder
            .setHost("http://127.0.0.1:" + server.get().port())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
        if (disableGrpcGcp) {
          builder.disableGrpcGcpExtension();
        }
        if (dynamicPool) {
          builder.enableDynamicChannelPool();
        }
      };
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnSpannerConfiguration {

    @Bean
    SpannerOptions spannerOptions() {
      return server.get().clientOptions(4).build();
    }

    @Bean(destroyMethod = "close")
    Spanner mySpanner(SpannerOptions options) {
      return options.getService();
    }
  }
}
