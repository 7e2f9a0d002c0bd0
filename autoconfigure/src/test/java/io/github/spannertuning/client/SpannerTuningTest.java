package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

import com.google.api.gax.grpc.GrpcInterceptorProvider;
import com.google.api.gax.rpc.FixedHeaderProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.LogCapture;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Duration;
import java.util.List;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link SpannerTuning} on plain {@link SpannerOptions}, without Spring. */
class SpannerTuningTest {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  @Test
  void logsOneInfoLinePerClientWhenBuilt() {
    try (LogCapture info =
        LogCapture.start(TunedSpannerRpcFactory.class.getName(), (level) -> level == Level.INFO)) {
      List<String> lines = info.messages();
      SpannerOptions.Builder quiet = server.get().clientOptions(3);
      SpannerTuning.newBuilder().logWhenBuilt(false).build().applyTo(quiet);
      try (Spanner spanner = quiet.build().getService()) {
        assertThat(lines).isEmpty();
      }
      SpannerOptions.Builder builder = server.get().clientOptions(3);
      SpannerTuning.newBuilder().streamEndGuard(false).build().applyTo(builder);
      try (Spanner spanner = builder.build().getService()) {
        assertThat(lines)
            .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
            .startsWith(
                "spanner-tuning: tuned Spanner client of project 'test-project' (google-cloud-spanner "
                    + SpannerOptions.class.getPackage().getImplementationVersion()
                    + ", grpc-gcp ")
            .contains("; pool grpc-gcp of 3 channels): single-use-distribution=")
            .contains(
                ", stream-end-guard=off (disabled by configuration), hedging=off (disabled by configuration), grpc-gcp=");
      }
    }
  }

  @Test
  void rebuildingOptionsKeepsWhatToBuilderDrops() {
    OpenTelemetry openTelemetry = OpenTelemetry.noop();
    GrpcInterceptorProvider interceptors = List::of;
    SpannerOptions options =
        SpannerOptions.newBuilder()
            .setProjectId("test-project")
            .setEmulatorHost("127.0.0.1:" + server.get().port())
            .setHeaderProvider(FixedHeaderProvider.create("user-agent", "my-app/1.0"))
            .setOpenTelemetry(openTelemetry)
            .disableLeaderAwareRouting()
            .setInterceptorProvider(interceptors)
            .build();

    SpannerOptions tuned = SpannerTuning.defaults().tune(options);

    assertThat(tuned).isNotSameAs(options);
    assertThat(SpannerTuning.stateOf(tuned)).isPresent();
    assertThat(tuned.getUserAgent()).isEqualTo("my-app/1.0");
    assertThat(tuned.getOpenTelemetry()).isSameAs(openTelemetry);
    assertThat(tuned.isLeaderAwareRoutingEnabled()).isFalse();
    assertThat(tuned.getInterceptorProvider())
        .isInstanceOfSatisfying(
            LoadCountingInterceptorProvider.class,
            (provider) -> assertThat(provider.applicationProvider()).isSameAs(interceptors));
    assertThat(tuned.getHost()).isEqualTo(options.getHost());
    assertThat(tuned.getCredentials()).isEqualTo(NoCredentials.getInstance());
    assertThat(tuned.getNumChannels()).isEqualTo(options.getNumChannels());
    // The emulator's plaintext configurator survives: the tuned client reaches the server.
    assertThat(pointSelects(tuned, 3)).isEqualTo(3);
  }

  @Test
  void tuningTwiceChangesNothing() {
    SpannerOptions.Builder builder = server.get().clientOptions(4);
    SpannerTuningState first = SpannerTuning.defaults().applyTo(builder);
    SpannerTuningState second = SpannerTuning.defaults().applyTo(builder);
    assertThat(second).isSameAs(first);
    SpannerOptions options = builder.build();
    assertThat(SpannerTuning.defaults().tune(options)).isSameAs(options);
  }

  @Test
  void applicationRpcFactoryIsKeptAndReported() {
    SpannerOptions.Builder builder = server.get().clientOptions(4);
    com.google.cloud.spanner.spi.SpannerRpcFactory own =
        (options) -> new com.google.cloud.spanner.spi.v1.GapicSpannerRpc(options);
    builder.setServiceRpcFactory(own);
    SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(Status.UNSUPPORTED);
    assertThat(state.feature(Feature.STREAM_END_GUARD).reason()).contains("SpannerRpcFactory");
    assertThat(pointSelects(builder.build(), 3)).isEqualTo(3);
    assertThat(state.streamEndGuardSkippedCount()).isZero();
  }

  @Test
  void optionsNothingTunedAreTheOnesTuningWouldHaveReached() {
    assertThat(SpannerTuning.untunedButReachable(server.get().clientOptions(2).build())).isTrue();
    SpannerOptions.Builder tuned = server.get().clientOptions(2);
    SpannerTuning.defaults().applyTo(tuned);
    assertThat(SpannerTuning.untunedButReachable(tuned.build())).isFalse();
    assertThat(SpannerTuning.untunedButReachable(SpannerTuning.defaults().tune(tuned.build())))
        .isFalse();
    // Tuning saw these and warned: its hook is the application's.
    SpannerOptions.Builder own = server.get().clientOptions(2);
    own.setServiceRpcFactory(
        (options) -> new com.google.cloud.spanner.spi.v1.GapicSpannerRpc(options));
    SpannerTuning.defaults().applyTo(own);
    assertThat(SpannerTuning.untunedButReachable(own.build())).isFalse();
    assertThat(SpannerTuning.untunedButReachable(null)).isFalse();
  }

  @Test
  void aClientTuningDidNotReachHasEveryFeatureUnsupportedAndItsOwnPool() {
    SpannerOptions options = server.get().clientOptions(3).enableGrpcGcpExtension().build();
    SpannerTuningState state = SpannerTuning.defaults().unsupported("not reached", options);
    for (Feature feature : Feature.values()) {
      assertThat(state.feature(feature)).isEqualTo(FeatureState.unsupported("not reached"));
    }
    // As the options set it: an unresolved state would show gax of 0 channels.
    assertThat(state.poolKind()).isEqualTo("grpc-gcp");
    assertThat(state.poolSize()).isEqualTo(3);
    assertThatIllegalStateException()
        .isThrownBy(() -> state.setEnabled(Feature.STREAM_END_GUARD, false))
        .withMessageContaining("not reached");
    assertThatIllegalStateException()
        .isThrownBy(() -> state.startExperiment(state.experimentPlan(null, null)))
        .withMessageContaining("not reached");
  }

  @Test
  void grpcGcpIsSwitchedOnOnlyWhenAskedTo() {
    SpannerOptions.Builder on = server.get().clientOptions(4).disableGrpcGcpExtension();
    assertThat(SpannerTuning.defaults().applyTo(on).feature(Feature.GRPC_GCP).status())
        .isEqualTo(Status.ON);
    assertThat(on.build().isGrpcGcpExtensionEnabled()).isTrue();

    SpannerOptions.Builder off = server.get().clientOptions(4).disableGrpcGcpExtension();
    SpannerTuningState state =
        SpannerTuning.newBuilder().grpcGcpExtension(false).build().applyTo(off);
    assertThat(off.build().isGrpcGcpExtensionEnabled()).isFalse();
    assertThat(state.feature(Feature.GRPC_GCP).status()).isEqualTo(Status.OFF);
    assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
        .isEqualTo(Status.UNSUPPORTED);
  }

  @Test
  void channelsSetsThePoolSizeWithinRange() {
    SpannerOptions.Builder builder = server.get().clientOptions(8);
    SpannerTuning.newBuilder().channels(5).build().applyTo(builder);
    assertThat(builder.build().getNumChannels()).isEqualTo(5);
    assertThatIllegalArgumentException().isThrownBy(() -> SpannerTuning.newBuilder().channels(0));
    assertThatIllegalArgumentException().isThrownBy(() -> SpannerTuning.newBuilder().channels(257));
  }

  @Test
  void drainTimeoutIsFiveSecondsByDefaultAndMustBePositive() {
    assertThat(SpannerTuning.defaults().getStreamEndGuardDrainTimeout())
        .isEqualTo(Duration.ofSeconds(5));
    assertThat(
            SpannerTuning.newBuilder()
                .streamEndGuardDrainTimeout(Duration.ofMillis(250))
                .build()
                .getStreamEndGuardDrainTimeout())
        .isEqualTo(Duration.ofMillis(250));
    assertThatIllegalArgumentException()
        .isThrownBy(() -> SpannerTuning.newBuilder().streamEndGuardDrainTimeout(Duration.ZERO));
    assertThatIllegalArgumentException()
        .isThrownBy(
            () -> SpannerTuning.newBuilder().streamEndGuardDrainTimeout(Duration.ofMillis(-1)));
  }

  @Test
  void runtimeSwitchTurnsTheGuardOffAndOn() {
    SpannerOptions.Builder builder = server.get().clientOptions(4);
    SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
    SpannerOptions options = builder.build();
    state.setEnabled(Feature.STREAM_END_GUARD, false);
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(Status.OFF);
    pointSelects(options, 20);
    assertThat(GuardLine.closedAtLastCount(state)).isZero();
    state.setEnabled(Feature.STREAM_END_GUARD, true);
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(GuardLine.expected());
    pointSelects(options, 20);
    await().atMost(Duration.ofSeconds(10)).until(() -> GuardLine.closedAtLastCount(state) > 0);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> state.setEnabled(Feature.GRPC_GCP, false));

    // Pinned by the build, not read back from the state: this client line's expected routing.
    Status expected = RoutingSubject.expected();
    assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status()).isEqualTo(expected);
    if (expected == Status.NATIVE) {
      assertThatIllegalStateException()
          .isThrownBy(() -> state.setEnabled(Feature.SINGLE_USE_DISTRIBUTION, false));
    } else {
      state.setEnabled(Feature.SINGLE_USE_DISTRIBUTION, false);
      long routed = state.singleUseRoutedCount();
      pointSelects(options, 20);
      assertThat(state.singleUseRoutedCount())
          .as("single-use reads routed while switched off")
          .isEqualTo(routed);
      state.setEnabled(Feature.SINGLE_USE_DISTRIBUTION, true);
      pointSelects(options, 20);
      assertThat(state.singleUseRoutedCount())
          .as("single-use reads routed once switched on again")
          .isGreaterThan(routed);
    }
  }

  private static int pointSelects(SpannerOptions options, int count) {
    int rows = 0;
    try (Spanner spanner = options.getService()) {
      DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
      for (int i = 0; i < count; i++) {
        rows += MockSpannerServer.pointSelect(client) ? 1 : 0;
      }
    }
    return rows;
  }
}
