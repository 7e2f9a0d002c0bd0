package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ClientDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ExperimentDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.FeatureDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.RefusedRequestException;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The endpoint's experiment operations on their own, on real tuned clients against the test server:
 * start, progress, result, stop, the requests it refuses, and the aborts. Clients drain for at most
 * 500 ms, so the carry-over is the latency estimates' 2 s and a slice of 2.5 s records 0.5 s.
 * Access over HTTP is {@link SpannerTuningEndpointWebTests}' and {@link
 * SpannerTuningEndpointReadOnlyWebTests}'.
 *
 * <p>Tagged {@code default-line}: the operations, their refusals and aborts are the starter's own
 * code, the same on every client line, as the experiment's slicing is ({@code ExperimentIT}).
 */
@Tag("default-line")
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningEndpointExperimentTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private static final SpannerTuning TUNING =
      SpannerTuning.newBuilder().streamEndGuardDrainTimeout(Duration.ofMillis(500)).build();

  /** What the endpoint shows for every switchable feature on this line when tuned. */
  private static final String ON =
      System.getProperty("spanner-tuning.expected.single-use-distribution", "on");

  private final Map<String, SpannerTuningState> clients = new LinkedHashMap<>();

  private final List<Spanner> spanners = new ArrayList<>();

  private final SpannerTuningEndpoint endpoint =
      new SpannerTuningEndpoint(() -> new LinkedHashMap<>(this.clients));

  @AfterEach
  void closeClients() {
    this.clients.values().forEach((state) -> state.stopExperiment("test over"));
    this.spanners.stream().filter((spanner) -> !spanner.isClosed()).forEach(Spanner::close);
  }

  @Test
  void startShowsTheRunningExperimentAndTheArmItPutTheClientIn(CapturedOutput output) {
    tuned("spanner", TUNING);
    ExperimentDescriptor started =
        this.endpoint.startExperiment(
            "spanner", "experiment", "10s", "2500ms", null, null, () -> "alice");
    ClientDescriptor client = this.endpoint.client("spanner");
    ExperimentDescriptor shown = client.experiment();
    assertThat(started.state()).isEqualTo("running");
    assertThat(started.reason()).isNull();
    assertThat(started.pairs()).isZero();
    assertThat(started.slice()).isEqualTo("2500ms");
    assertThat(started.duration()).isEqualTo("10s");
    assertThat(started.carryOver()).isEqualTo("2s");
    assertThat(started.progress().slices()).isEqualTo(4);
    assertThat(started.results().get("single-use").pairs()).isZero();
    assertThat(shown.state()).isEqualTo("running");
    assertThat(shown.progress().arm()).isIn("tuned", "stock");
    // The features were read before the experiment, and both in the first slice: in its arm.
    if (shown.progress().slicesDone() == 0 && !shown.progress().recording()) {
      String guard = client.features().get("stream-end-guard").state();
      assertThat(guard)
          .as("stream-end-guard in a %s slice", shown.progress().arm())
          .isEqualTo(shown.progress().arm().equals("stock") ? "off" : GuardLine.expectedName());
    }
    assertThat(this.endpoint.experiment("spanner", "experiment").state()).isEqualTo("running");
    assertThat(output)
        .contains(
            "spanner-tuning: experiment of 2 pairs of 2500ms slices started on Spanner client"
                + " 'spanner' by alice through the spannertuning endpoint");
  }

  @Test
  void stopLeavesTheClientTunedAsConfigured(CapturedOutput output) {
    tuned("spanner", TUNING);
    SpannerTuningState state = this.clients.get("spanner");
    Map<Feature, Status> configured = statuses(state);
    this.endpoint.startExperiment("spanner", "experiment", "20s", "2500ms", null, null, null);
    assertThat(state.isExperimentRunning()).isTrue();
    ExperimentDescriptor stopped = this.endpoint.stopExperiment("spanner", "experiment", null);
    assertThat(stopped.state()).isEqualTo("stopped");
    assertThat(stopped.reason())
        .isEqualTo("stopped by anonymous through the spannertuning endpoint");
    assertThat(stopped.progress().arm()).isNull();
    assertThat(statuses(state)).isEqualTo(configured);
    assertThat(this.endpoint.client("spanner").features().get("stream-end-guard").state())
        .isEqualTo(GuardLine.expectedName());
    // A second stop changes nothing and shows the same experiment.
    assertThat(this.endpoint.stopExperiment("spanner", "experiment", null).state())
        .isEqualTo("stopped");
    assertThat(output)
        .contains(
            "spanner-tuning: experiment stopped on Spanner client 'spanner' by anonymous through"
                + " the spannertuning endpoint");
  }

  @Test
  void aFinishedExperimentShowsItsResultPerKindOfCall() throws Exception {
    Spanner spanner = tuned("spanner", TUNING);
    SpannerTuningState state = this.clients.get("spanner");
    AtomicBoolean running = new AtomicBoolean(true);
    AtomicLong selects = new AtomicLong();
    Thread traffic = new Thread(() -> pointSelectsWhile(spanner, running, selects));
    traffic.start();
    try {
      // A warm client: each slice records half a second, and a fresh client's first calls, on a
      // busy machine, can take longer than that.
      await().atMost(Duration.ofSeconds(30)).until(() -> selects.get() >= 50);
      this.endpoint.startExperiment("spanner", "experiment", "5s", "2500ms", null, null, null);
      await().atMost(Duration.ofSeconds(30)).until(() -> !state.isExperimentRunning());
    } finally {
      running.set(false);
      traffic.join();
    }
    ExperimentDescriptor done = this.endpoint.client("spanner").experiment();
    assertThat(done.state()).as("%s", done).isEqualTo("done");
    assertThat(done.reason()).isNull();
    assertThat(done.pairs()).isEqualTo(1);
    assertThat(done.progress().slicesDone()).isEqualTo(2);
    assertThat(done.results()).containsOnlyKeys("single-use", "transaction-query", "commit");
    KindResult singleUse = done.results().get("single-use");
    assertThat(singleUse.calls().tuned()).as("%s", singleUse).isPositive();
    assertThat(singleUse.calls().stock()).as("%s", singleUse).isPositive();
    assertThat(singleUse.p50Ratio()).isPositive();
    assertThat(singleUse.p99Ratio()).isPositive();
    // One pair: no interval, and so no verdict but this one.
    assertThat(singleUse.p99RatioLow()).isNull();
    assertThat(singleUse.p99RatioHigh()).isNull();
    assertThat(singleUse.failedRate().tuned()).isZero();
    assertThat(singleUse.failedRate().stock()).isZero();
    assertThat(singleUse.verdict()).isEqualTo("no-detectable-difference");
    assertThat(done.results().get("commit").calls().tuned()).isZero();
    // The stock slice's point selects were cancelled after their last row, where the client line
    // cancels a stream closed at last (up to 6.124); the tuned one's never.
    if (GuardLine.clientSkipsCancelAtLast()) {
      assertThat(done.cancelsOfFinishedStreams().stock()).isZero();
    } else {
      assertThat(done.cancelsOfFinishedStreams().stock()).isPositive();
    }
    assertThat(done.cancelsOfFinishedStreams().tuned()).isZero();
    assertThat(done.warnings()).anyMatch((warning) -> warning.contains("pairs"));
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(GuardLine.expected());
  }

  @Test
  void aFeatureSwitchedByHandAbortsTheExperimentAndItsSwitchStays() {
    tuned("spanner", TUNING);
    SpannerTuningState state = this.clients.get("spanner");
    this.endpoint.startExperiment("spanner", "experiment", "20s", "2500ms", null, null, null);
    ClientDescriptor after =
        this.endpoint.switchFeature("spanner", "stream-end-guard", false, null);
    assertThat(after.experiment().state()).isEqualTo("aborted");
    assertThat(after.experiment().reason())
        .isEqualTo(
            "stream-end-guard was switched off by hand; the client went back to its configured"
                + " states before that switch");
    assertThat(after.features().get("stream-end-guard"))
        .isEqualTo(new FeatureDescriptor("off", "switched off at runtime", null));
    assertThat(after.features().get("single-use-distribution").state()).isEqualTo(ON);
    assertThat(after.features().get("transaction-routing").state()).isEqualTo(ON);
    assertThat(state.isExperimentRunning()).isFalse();
  }

  @Test
  void closingTheClientAbortsTheExperiment() {
    Spanner spanner = tuned("spanner", TUNING);
    SpannerTuningState state = this.clients.get("spanner");
    this.endpoint.startExperiment("spanner", "experiment", "20s", "2500ms", null, null, null);
    spanner.close();
    assertThat(state.isExperimentRunning()).isFalse();
    assertThat(state.experiment().state()).isEqualTo("aborted");
    assertThat(state.experiment().reason()).isEqualTo("the client was closed");
  }

  @Test
  void oneExperimentPerClientAtATime() {
    tuned("spanner", TUNING);
    this.endpoint.startExperiment("spanner", "experiment", "20s", "2500ms", null, null, null);
    assertThatExceptionOfType(InvalidEndpointRequestException.class)
        .isThrownBy(
            () ->
                this.endpoint.startExperiment(
                    "spanner", "experiment", null, null, null, null, null))
        .satisfies(
            (ex) ->
                assertThat(ex.getReason())
                    .startsWith("an experiment is already running on this client (slice 1 of 8)"));
  }

  @Test
  void aBadPlanIsRefusedNamingTheFieldAndWhatItTakes() {
    tuned("spanner", TUNING);
    assertRefused(
        "1s",
        "2s",
        "slice must be longer than the carry-over discarded after each switch (2s), was 2s");
    // 5s holds exactly one pair of 2.5s slices.
    assertThat(
            this.endpoint
                .startExperiment("spanner", "experiment", "5s", "2500ms", null, null, null)
                .state())
        .isEqualTo("running");
    this.endpoint.stopExperiment("spanner", "experiment", null);
    assertRefused(
        "4s", "2500ms", "duration must hold at least one pair of slices (2 x slice = 5s), was 4s");
    assertRefused(
        "twenty minutes",
        null,
        "duration must be a duration such as 20m, 60s or 500ms (Boot's duration format), was"
            + " 'twenty minutes'");
    assertRefused(
        "3000h",
        "4s",
        "duration must hold at most 500 pairs of slices (duration / (2 x slice)), was 1350000"
            + " pairs (3000h of 4s slices)");
    // A refused start leaves the last experiment as it was.
    assertThat(this.endpoint.client("spanner").experiment().state()).isEqualTo("stopped");
  }

  @Test
  void anUnknownClientOrPathIsRefusedAndNothingRunsWhereNothingIsTuned() {
    assertThatExceptionOfType(InvalidEndpointRequestException.class)
        .isThrownBy(
            () -> this.endpoint.startExperiment("nope", "experiment", null, null, null, null, null))
        .satisfies((ex) -> assertThat(ex.getReason()).isEqualTo("Unknown Spanner client 'nope'"));
    tuned("spanner", TUNING);
    assertThatExceptionOfType(InvalidEndpointRequestException.class)
        .isThrownBy(
            () ->
                this.endpoint.startExperiment(
                    "spanner", "experiments", null, null, null, null, null))
        .satisfies(
            (ex) ->
                assertThat(ex.getReason())
                    .isEqualTo("Unknown operation 'experiments'; the only one is 'experiment'"));
    assertThat(this.endpoint.experiment("spanner", "experiment")).isNull();
    assertThat(this.endpoint.experiment("spanner", "experiments")).isNull();
    assertThatExceptionOfType(InvalidEndpointRequestException.class)
        .isThrownBy(() -> this.endpoint.stopExperiment("spanner", "experiment", null))
        .satisfies(
            (ex) ->
                assertThat(ex.getReason())
                    .isEqualTo("no experiment was started on Spanner client 'spanner'"));
    tuned(
        "untuned",
        SpannerTuning.newBuilder()
            .singleUseDistribution(false)
            .transactionRouting(false)
            .streamEndGuard(false)
            .build());
    assertThatExceptionOfType(InvalidEndpointRequestException.class)
        .isThrownBy(
            () ->
                this.endpoint.startExperiment(
                    "untuned", "experiment", null, null, null, null, null))
        .satisfies(
            (ex) ->
                assertThat(ex.getReason())
                    .startsWith(
                        "no feature spanner-tuning applies itself is on on this client, so the"
                            + " two arms would be the same client: single-use-distribution=off"));
  }

  /**
   * One feature compared: configured off, it is on in the tuned arm and off in the stock arm, every
   * other feature stays as configured in both, and once stopped the client has exactly the states
   * it had before, the configuration's reason included.
   */
  @ParameterizedTest
  @ValueSource(strings = {"stream-end-guard", "single-use-distribution"})
  void aFeatureConfiguredOffIsOnInItsTunedArmAndTheClientGoesBackToExactlyItsStates(String id) {
    Feature feature = Feature.fromId(id);
    SpannerTuning.Builder configured = SpannerTuning.newBuilder();
    if (feature == Feature.STREAM_END_GUARD) {
      configured.streamEndGuard(false);
    } else {
      configured.singleUseDistribution(false);
    }
    tuned("spanner", configured.streamEndGuardDrainTimeout(Duration.ofMillis(500)).build());
    SpannerTuningState state = this.clients.get("spanner");
    Map<Feature, FeatureState> before = Map.copyOf(state.features());
    assertThat(before.get(feature).byConfiguration()).isTrue();

    ExperimentDescriptor started =
        this.endpoint.startExperiment("spanner", "experiment", "10s", "2500ms", id, null, null);
    assertThat(started.feature()).isEqualTo(id);
    assertThat(started.fleet()).isNull();
    assertThat(started.sliceIndex()).isZero();
    Set<String> armsSeen = new HashSet<>();
    for (long slice = 0; slice < 2; slice++) {
      long current = slice;
      await()
          .atMost(Duration.ofSeconds(10))
          .until(() -> current == this.endpoint.client("spanner").experiment().sliceIndex());
      ClientDescriptor client = this.endpoint.client("spanner");
      String arm = client.experiment().arm();
      armsSeen.add(arm);
      assertThat(client.features().get(id).state())
          .as("%s in a %s slice", id, arm)
          .isEqualTo(arm.equals("tuned") ? onState(feature) : "off");
      for (Feature other : Feature.values()) {
        if (other != feature) {
          assertThat(state.feature(other))
              .as("%s in a %s slice", other, arm)
              .isEqualTo(before.get(other));
        }
      }
    }
    assertThat(armsSeen).as("a pair runs both arms").containsExactlyInAnyOrder("tuned", "stock");
    assertThat(this.endpoint.stopExperiment("spanner", "experiment", null).state())
        .isEqualTo("stopped");
    assertThat(state.features()).isEqualTo(before);
  }

  @Test
  void aFeatureThatCannotBeSwitchedOnThisClientIsRefusedWithTheReason() {
    tuned("spanner", TUNING);
    assertFeatureRefused(
        "grpc-gcp",
        "grpc-gcp is chosen when the channels are built and cannot be switched at runtime;"
            + " features that can be switched: ");
    assertFeatureRefused("turbo", "Unknown feature 'turbo'; features that can be switched: ");
    SpannerOptions.Builder withoutGrpcGcp = server.get().clientOptions(2).disableGrpcGcpExtension();
    SpannerTuningState gax =
        SpannerTuning.newBuilder()
            .grpcGcpExtension(false)
            .streamEndGuardDrainTimeout(Duration.ofMillis(500))
            .build()
            .applyTo(withoutGrpcGcp);
    this.spanners.add(withoutGrpcGcp.build().getService());
    this.clients.put("spanner", gax);
    assertFeatureRefused(
        "single-use-distribution",
        "single-use-distribution cannot be switched on this client: it is unsupported (the"
            + " grpc-gcp extension is off");
    assertThat(gax.experiment()).as("nothing started").isNull();
  }

  private void assertFeatureRefused(String feature, String reason) {
    assertThatExceptionOfType(RefusedRequestException.class)
        .isThrownBy(
            () ->
                this.endpoint.startExperiment(
                    "spanner", "experiment", "10s", "2500ms", feature, null, null))
        .satisfies(
            (ex) -> {
              assertThat(ex.getReason()).startsWith(reason);
              assertThat(ex.field()).isEqualTo("feature");
            });
  }

  /** What the endpoint shows for a feature spanner-tuning applies on this client line. */
  private static String onState(Feature feature) {
    return (feature == Feature.STREAM_END_GUARD) ? GuardLine.expectedName() : ON;
  }

  private void assertRefused(String duration, String slice, String reason) {
    assertThatExceptionOfType(InvalidEndpointRequestException.class)
        .isThrownBy(
            () ->
                this.endpoint.startExperiment(
                    "spanner", "experiment", duration, slice, null, null, null))
        .satisfies((ex) -> assertThat(ex.getReason()).isEqualTo(reason));
  }

  private static Map<Feature, Status> statuses(SpannerTuningState state) {
    Map<Feature, Status> statuses = new LinkedHashMap<>();
    state.features().forEach((feature, value) -> statuses.put(feature, value.status()));
    return statuses;
  }

  private Spanner tuned(String name, SpannerTuning tuning) {
    SpannerOptions.Builder builder = server.get().clientOptions(2);
    SpannerTuningState state = tuning.applyTo(builder);
    Spanner spanner = builder.build().getService();
    this.spanners.add(spanner);
    this.clients.put(name, state);
    return spanner;
  }

  private static void pointSelectsWhile(
      Spanner spanner, AtomicBoolean running, AtomicLong selects) {
    DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
    while (running.get()) {
      MockSpannerServer.pointSelect(client);
      selects.incrementAndGet();
    }
  }
}
