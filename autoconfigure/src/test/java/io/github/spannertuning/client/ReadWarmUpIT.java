package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Spanner;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.client.SpannerTuningState.WarmUp;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Fault;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The warm-up of the read path ({@link SpannerTuning.Builder#warmUpReads}) against the test server
 * over real loopback TCP: a real client, its read path and grpc-gcp's pool; the backend simulated
 * (2-5 ms per query). What is checked is counted on the server and on the client, not timed, except
 * that a stalled server holds the warm-up no longer than its timeout, with a second's slack.
 *
 * <p>Tagged {@code shares-machine}: counts, and that one bound of seconds, so it runs beside
 * another test JVM.
 */
@Tag("shares-machine")
class ReadWarmUpIT {

  private static final int CHANNELS = 4;

  private static final int READS = 120;

  /** How long the stalled server holds each streaming query: past the warm-up's timeout. */
  private static final Duration STALL = Duration.ofSeconds(4);

  /**
   * From the first warm channel on, the warm-up sends its count of single-use {@code SELECT 1}
   * through the client, spread over the channels, reads no table, leaves no stream open and no
   * session beyond those the client creates without it, and is not counted as the application's
   * routed reads. With the count at 0 (off), the server sees none of them.
   */
  @Test
  void theWarmUpReadsItsCountThroughTheClientOverEveryChannelAndReadsNoTable() throws Exception {
    Run off = warmUp(0);
    Run on = warmUp(READS);

    assertThat(off.queries()).as("read warm-up off: the server saw no warm-up read").isEmpty();
    assertThat(on.warmUp().warm()).isTrue();
    assertThat(on.queries()).as("the warm-up's reads").hasSize(READS);
    assertThat(on.queries().stream().map(ExecuteSqlRequest::getSql).collect(Collectors.toSet()))
        .as("no warm-up read touches a table")
        .containsExactly("SELECT 1");
    assertThat(on.queries())
        .as("single-use reads")
        .allMatch((sql) -> !sql.hasTransaction() || sql.getTransaction().hasSingleUse());
    // From the first warm channel on, routing spreads them over the channels warm as they run.
    assertThat(on.connections().size()).as("the connections they went on").isGreaterThan(1);
    assertThat(on.warmUp().reads().answered()).isEqualTo(READS);
    assertThat(on.warmUpReads()).as("the warm-up read meter").isEqualTo(READS);
    assertThat(on.routed()).as("counted apart from the application's routed reads").isZero();
    assertThat(on.sessionsCreated())
        .as("sessions: as many as without the read warm-up")
        .isEqualTo(off.sessionsCreated());
    assertThat(on.activeStreamsAfter()).as("streams left open on the client").isZero();
    assertThat(on.readAfter()).as("the application's read after the warm-up").isTrue();
    assertThat(on.readsOfASecondWarmUp()).as("reads of a second warm-up of the client").isZero();
  }

  /**
   * An experiment running while the warm-up reads records none of them, and records the
   * application's 20 point selects right after. A short drain timeout keeps each slice's carry-over
   * (the calls an experiment leaves out after it switches arms) short, and the slices are long, so
   * every application read here is in the same recorded slice.
   */
  @Test
  void aRunningExperimentRecordsNoneOfTheWarmUpsReads() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      AtomicLong recorded = new AtomicLong();
      try (Tuned tuned =
          tuned(
              server,
              SpannerTuning.newBuilder()
                  .warmUpReads(READS)
                  .streamEndGuardDrainTimeout(Duration.ofMillis(100)))) {
        SpannerTuningState state = tuned.state();
        state.addExperimentCallListener((kind, arm, nanos) -> recorded.incrementAndGet());
        DatabaseClient client = tuned.spanner().getDatabaseClient(MockSpannerServer.DATABASE);
        state.startExperiment(state.experimentPlan(Duration.ofMinutes(10), Duration.ofMinutes(1)));
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> MockSpannerServer.pointSelect(client) && recorded.get() > 0);
        long before = recorded.get();
        WarmUp warmUp = state.warmUp(Duration.ofSeconds(30));
        long during = recorded.get() - before;
        for (int i = 0; i < 20; i++) {
          assertThat(MockSpannerServer.pointSelect(client)).isTrue();
        }
        long after = recorded.get() - before - during;
        state.stopExperiment("the test is done");

        assertThat(warmUp.reads().answered()).isEqualTo(READS);
        assertThat(during).as("calls the experiment recorded during the warm-up").isZero();
        assertThat(after).as("the application's reads it recorded after").isEqualTo(20);
      }
    }
  }

  /**
   * A server that stalls every streaming query once the channels are primed: the warm-up returns
   * within its timeout (plus a margin for the cancel), its reads end with the timeout, and neither
   * the client nor the server is left with a stream open.
   */
  @Test
  void aStalledServerHoldsTheWarmUpNoLongerThanItsTimeoutAndLeavesNoStreamOpen() throws Exception {
    Duration timeout = Duration.ofSeconds(2);
    try (MockSpannerServer server = MockSpannerServer.start()) {
      // Priming is ExecuteSql; the warm-up's reads are ExecuteStreamingSql. The server holds a
      // stalled call's events, its cancel included, for the stall: it sees the cancels after it.
      server.setFaults(
          (method, attempt) ->
              method.equals("ExecuteStreamingSql") ? Fault.delay(STALL.toMillis()) : Fault.NONE);
      try (Tuned tuned = tuned(server, SpannerTuning.newBuilder().warmUpReads(READS))) {
        SpannerTuningState state = tuned.state();
        tuned.spanner().getDatabaseClient(MockSpannerServer.DATABASE);
        long started = System.nanoTime();
        WarmUp warmUp = state.warmUp(timeout);
        Duration took = Duration.ofNanos(System.nanoTime() - started);

        assertThat(warmUp.warm()).as("the channels were primed: %s", warmUp).isTrue();
        assertThat(took).as("the warm-up's time").isLessThan(timeout.plusSeconds(1));
        assertThat(warmUp.reads().sent()).as("reads that stalled").isPositive();
        assertThat(warmUp.reads().answered()).isZero();
        int stalled = warmUp.reads().sent();
        await()
            .atMost(STALL.plusSeconds(5))
            .untilAsserted(
                () -> {
                  assertThat(activeStreams(state)).as("streams open on the client").isZero();
                  assertThat(server.cancels())
                      .as("the stalled reads the server saw cancelled")
                      .isEqualTo(stalled);
                });
      }
    }
  }

  private static Run warmUp(int reads) throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      try (Tuned tuned = tuned(server, SpannerTuning.newBuilder().warmUpReads(reads))) {
        SpannerTuningState state = tuned.state();
        DatabaseClient client = tuned.spanner().getDatabaseClient(MockSpannerServer.DATABASE);
        WarmUp warmUp = state.warmUp(Duration.ofSeconds(30));
        List<MockSpannerServer.Call> calls = server.calls("ExecuteStreamingSql");
        List<ExecuteSqlRequest> queries =
            calls.stream().map((call) -> (ExecuteSqlRequest) call.request()).toList();
        Set<SocketAddress> connections =
            calls.stream().map(MockSpannerServer.Call::connection).collect(Collectors.toSet());
        int sessions =
            server.calls("CreateSession").size() + server.calls("BatchCreateSessions").size();
        // A read to its end has had its last message; its stream ends when its trailers come, a
        // little later (the stream-end guard drains it): none may be left open after that.
        long active = openAfterTrailers(state);
        long routed = state.singleUseRoutedCount();
        long warmUpReads = state.warmUpReadCount();
        boolean readAfter = MockSpannerServer.pointSelect(client);
        // A second warm-up of the same client waits for its channels only: its code is warm.
        int again = state.warmUp(Duration.ofSeconds(30)).reads().sent();
        return new Run(
            warmUp, queries, connections, sessions, active, routed, warmUpReads, readAfter, again);
      }
    }
  }

  /** A client of the server, tuned so: its state, and the client built from the same options. */
  private static Tuned tuned(MockSpannerServer server, SpannerTuning.Builder tuning) {
    var builder = server.clientOptions(CHANNELS);
    SpannerTuningState state = tuning.logWhenBuilt(false).build().applyTo(builder);
    return new Tuned(state, builder.build().getService());
  }

  private record Tuned(SpannerTuningState state, Spanner spanner) implements AutoCloseable {

    @Override
    public void close() {
      this.spanner.close();
    }
  }

  private static long openAfterTrailers(SpannerTuningState state) {
    try {
      await().atMost(Duration.ofSeconds(5)).until(() -> activeStreams(state) == 0);
    } catch (org.awaitility.core.ConditionTimeoutException ex) {
      // Reported by the assertion, with the count.
    }
    return activeStreams(state);
  }

  private static long activeStreams(SpannerTuningState state) {
    return state.channelLoad().channels().stream().mapToLong(ChannelStats::activeStreams).sum();
  }

  private record Run(
      WarmUp warmUp,
      List<ExecuteSqlRequest> queries,
      Set<SocketAddress> connections,
      int sessionsCreated,
      long activeStreamsAfter,
      long routed,
      long warmUpReads,
      boolean readAfter,
      int readsOfASecondWarmUp) {}
}
