package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.metrics.SpannerChannelMetrics;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Streams closed at their {@code last} message hold a stream slot while they drain: the guard lets
 * them drain only while their connection has slots to spare, at most the limit less a tenth in
 * flight, and cancels the others as the client would. One channel, the production-like {@link
 * MockSpannerServer} (100 concurrent streams per connection, 2-5 ms per query) with its trailers
 * held back by a chosen delay, and closed-loop point selects ({@code next()} once, then close).
 * Every bound here is a count the guard's rule fixes, not a rate or a time: a draining stream is
 * one of its connection's calls in flight, so the draining streams never pass the bound however the
 * threads are scheduled.
 *
 * <p>Tagged {@code shares-machine}: its bounds are counts, and its waits seconds (the drain
 * timeout's slack), so it runs beside another test JVM.
 */
@Tag("shares-machine")
class DrainingStreamSlotsIT {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  /** The server's concurrent streams per connection, and the guard's limit: their default. */
  private static final int STREAM_LIMIT = 100;

  /** A close drains only while at most this many calls, its own included, are in flight. */
  private static final int DRAINING_CAP = STREAM_LIMIT - STREAM_LIMIT / 10;

  /** Closed-loop workers: a few per connection, as an application has. */
  private static final int WORKERS = 16;

  /** More closed-loop workers than the connection has slots: it is always full. */
  private static final int FULL = 128;

  private static final Duration RUN = Duration.ofSeconds(2);

  /**
   * Trailers 1 s late: the channel fills with draining streams once its workers close more than
   * {@value #DRAINING_CAP} streams a second. Not 200 ms: that needed 450 closes a second, and with
   * another test's JVM beside it on 2 cores the 16 workers closed 232 a second, so the bound was
   * never reached and nothing was cancelled.
   */
  @Test
  void withTrailers1sLateStreamsDrainUntilTheConnectionIsNearlyFullAndTheRestIsCancelled()
      throws Exception {
    try (Slots slots = Slots.open(trailersLate(1000), SpannerTuning.DEFAULT_DRAIN_TIMEOUT)) {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      SpannerTuningState state = slots.client().state();
      new SpannerChannelMetrics(state, "spanner", Tags.empty()).bindTo(registry);
      Outcome outcome = slots.runUntilIdle(WORKERS, "trailers 1 s late");
      Run run = outcome.run();
      Counts counts = outcome.counts();
      String figures = outcome.figures();
      assertThat(
              registry
                  .get("spanner.tuning.stream.end.guard.cancelled.at.limit")
                  .functionCounter()
                  .count())
          .as("the cancelled-at-limit meter: " + figures)
          .isEqualTo(state.streamEndGuardCancelledAtLimitCount());
      assertThat(
              registry
                  .get("spanner.tuning.channel.draining.streams")
                  .tag("channel", "0")
                  .gauge()
                  .value())
          .as("the channel's draining-streams gauge, once idle: " + figures)
          .isZero();

      // Each worker closes a stream every few milliseconds and each drains for 1 s: without the
      // rule the 100 slots would fill with streams awaiting trailers, and the queries would wait.
      assertThat(run.maxDraining())
          .as("streams draining at once on the channel, sampled: " + figures)
          .isPositive();
      assertCancelledPastTheBound(run, counts, figures);
      assertThat(counts.drainTimeouts()).as("drain timeouts: " + figures).isZero();
    }
  }

  @Test
  void onAConnectionFullOfQueriesClosesAtLastCancelAsTheClientDoes() throws Exception {
    try (Slots slots = Slots.open(trailersLate(200), SpannerTuning.DEFAULT_DRAIN_TIMEOUT)) {
      Outcome outcome = slots.runUntilIdle(FULL, "trailers 200 ms late, more workers than slots");

      // The connection's slots go to the calls waiting for them.
      assertCancelledPastTheBound(outcome.run(), outcome.counts(), outcome.figures());
    }
  }

  /**
   * No more streams drained at once than the bound allows, some closes were cancelled past it, and
   * each of those, and only those, reached gRPC.
   */
  private static void assertCancelledPastTheBound(Run run, Counts counts, String figures) {
    System.out.println(figures);
    assertThat(run.maxDraining())
        .as("streams draining at once on the channel, sampled: " + figures)
        .isLessThanOrEqualTo(DRAINING_CAP);
    assertThat(counts.cancelledAtLimit())
        .as("closes at last cancelled instead of drained: " + figures)
        .isPositive();
    assertThat(run.cancels())
        .as("cancels reaching gRPC: the closes cancelled at the limit, each counted: " + figures)
        .isEqualTo(counts.cancelledAtLimit());
    assertThat(counts.closedAtLast() + counts.cancelledAtLimit())
        .as(
            "every point select: drained (its cancel skipped where the client sends one), or"
                + " cancelled at the limit: "
                + figures)
        .isEqualTo(run.queries());
    assertNoSkipWhereTheClientSkips(counts, figures);
  }

  /** Where the client sends no cancel after last itself, the guard has none to skip. */
  private static void assertNoSkipWhereTheClientSkips(Counts counts, String figures) {
    if (GuardLine.clientSkipsCancelAtLast()) {
      assertThat(counts.skipped())
          .as("skipped, on a client that skips itself: " + figures)
          .isZero();
    }
  }

  @Test
  void withTrailers1MsLateEveryCloseDrainsAndNoResetIsSent() throws Exception {
    try (Slots slots = Slots.open(trailersLate(1), SpannerTuning.DEFAULT_DRAIN_TIMEOUT)) {
      Outcome outcome = slots.runUntilIdle(WORKERS, "trailers 1 ms late");
      Run run = outcome.run();
      Counts counts = outcome.counts();
      String figures = outcome.figures();

      assertThat(run.queries()).as("point selects: " + figures).isPositive();
      assertThat((double) run.rstFrames() / run.queries())
          .as("RST_STREAM frames per point select: " + figures)
          .isZero();
      assertThat(run.cancels()).as("cancels reaching gRPC: " + figures).isZero();
      assertThat(counts.cancelledAtLimit()).as("cancelled at the limit: " + figures).isZero();
      assertThat(counts.closedAtLast())
          .as("drained (cancels skipped where the client sends them): " + figures)
          .isEqualTo(run.queries());
      assertNoSkipWhereTheClientSkips(counts, figures);
    }
  }

  @Test
  void trailersThatNeverComeGiveTheirSlotsBackWithinTheDrainTimeout() throws Exception {
    Duration drainTimeout = Duration.ofSeconds(1);
    // Time for the timer's cancel to reach gRPC and the call to close, on a machine whose cores
    // are taken: the trailers never come, so without the timeout no slot would come back at all.
    Duration slack = Duration.ofSeconds(2);
    try (Slots slots =
        Slots.open(
            MockSpannerServer.builder()
                .countFrames()
                .trailersDelay(MockSpannerServer.TRAILERS_NEVER),
            drainTimeout)) {
      Run run = slots.closedLoop(WORKERS);
      long stopped = System.nanoTime();
      MockSpannerServer server = slots.server();
      SpannerTuningState state = slots.client().state();
      ChannelLoad.ChannelStats channel = slots.channel();
      await("active and draining streams back to 0")
          .pollInterval(Duration.ofMillis(5))
          .atMost(drainTimeout.plus(slack).plusSeconds(5))
          .until(() -> channel.activeStreams() == 0 && channel.drainingStreams() == 0);
      long freedAfter = System.nanoTime() - stopped;
      await("the server sees every stream cancelled")
          .atMost(Duration.ofSeconds(5))
          .until(() -> server.awaitingTrailers() == 0);
      String figures = run.describe("trailers never sent", state);

      assertThat(freedAfter)
          .as("ns from the last close until every slot was given back: " + figures)
          .isLessThanOrEqualTo(drainTimeout.plus(slack).toNanos());
      Counts counts = run.counts(state);
      assertThat(run.maxDraining())
          .as("streams draining at once, sampled: " + figures)
          .isPositive()
          .isLessThanOrEqualTo(DRAINING_CAP);
      assertThat(counts.drainTimeouts()).as("drain timeouts: " + figures).isPositive();
      assertThat(counts.skipped()).as("skipped: " + figures).isZero();
      assertThat(counts.drainTimeouts() + counts.cancelledAtLimit())
          .as("every point select cancelled, at its close or at its drain timeout: " + figures)
          .isEqualTo(run.queries());
    }
  }

  /**
   * The stock figure beside the tuned one, trailers never sent: the same point selects, one at a
   * time (fewer than the connection's slots, so the stock client never waits for one), then the
   * streams the server still holds open once the drain timeout and its slack have passed. Where the
   * client cancels a stream closed at last (up to 6.124), stock holds none either; where it drops
   * the call instead (6.125+), stock holds every one until the call's deadline, and only the
   * guard's drain timeout gives them back.
   */
  @Test
  void trailersThatNeverComeHoldEveryStockSlotWhereTheClientDropsItsCall() throws Exception {
    Duration drainTimeout = Duration.ofSeconds(1);
    Duration slack = Duration.ofSeconds(2);
    int selects = STREAM_LIMIT / 2;
    try (Slots slots =
        Slots.open(
            MockSpannerServer.builder().trailersDelay(MockSpannerServer.TRAILERS_NEVER),
            drainTimeout)) {
      MockSpannerServer server = slots.server();
      GuardedTestClient tuned = slots.client();
      Spanner stock = server.clientOptions(1).build().getService();
      int stockHeld;
      int tunedHeld;
      try {
        // Counted as differences: streams the other client holds stay as they are meanwhile.
        stockHeld =
            heldAfter(server, stock.getDatabaseClient(DATABASE), selects, drainTimeout.plus(slack));
        tunedHeld = heldAfter(server, tuned.database(), selects, drainTimeout.plus(slack));
      } finally {
        // The server first: stock's held streams end with it, and the client's close does not
        // wait for them.
        server.close();
        stock.close();
      }
      String figures =
          String.format(
              Locale.ROOT,
              "[slots %s] trailers never sent, %d point selects one at a time, 1 channel: streams"
                  + " still open on the server %d ms after the last close: stock %d, tuned %d"
                  + " (drain timeout %d ms) | tuned drain timeouts %d",
              ClientVersions.detected().spanner(),
              selects,
              drainTimeout.plus(slack).toMillis(),
              stockHeld,
              tunedHeld,
              drainTimeout.toMillis(),
              tuned.state().streamEndGuardDrainTimeoutCount());
      System.out.println(figures);
      assertThat(tunedHeld).as("tuned: " + figures).isZero();
      assertThat(stockHeld)
          .as("stock: " + figures)
          .isEqualTo(GuardLine.clientSkipsCancelAtLast() ? selects : 0);
    }
  }

  /** Runs point selects one at a time, waits, and returns the streams the server still holds. */
  private static int heldAfter(
      MockSpannerServer server, DatabaseClient database, int selects, Duration wait)
      throws InterruptedException {
    // The first opens the session; the count starts after it.
    assertThat(readOneRow(database)).isTrue();
    Thread.sleep(wait.toMillis());
    int before = server.awaitingTrailers();
    for (int i = 0; i < selects; i++) {
      assertThat(readOneRow(database)).isTrue();
    }
    Thread.sleep(wait.toMillis());
    return server.awaitingTrailers() - before;
  }

  private static boolean readOneRow(DatabaseClient database) {
    try (ResultSet rs =
        database.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
      return rs.next();
    }
  }

  /** The guard's counters of one client. */
  private record Counts(long skipped, long drained, long drainTimeouts, long cancelledAtLimit) {

    static Counts of(SpannerTuningState state) {
      return new Counts(
          state.streamEndGuardSkippedCount(),
          state.streamEndGuardDrainedCount(),
          state.streamEndGuardDrainTimeoutCount(),
          state.streamEndGuardCancelledAtLimitCount());
    }

    /**
     * Point selects closed on their last row that drained: counted as skipped where the client
     * cancels them, as drained where it does not (6.125+).
     */
    long closedAtLast() {
      return GuardLine.clientSkipsCancelAtLast() ? this.drained : this.skipped;
    }

    Counts minus(Counts other) {
      return new Counts(
          this.skipped - other.skipped,
          this.drained - other.drained,
          this.drainTimeouts - other.drainTimeouts,
          this.cancelledAtLimit - other.cancelledAtLimit);
    }
  }

  /** What one closed-loop run did; the guard's counters are read as deltas from its start. */
  private record Run(
      int workers,
      int queries,
      int cancels,
      int rstFrames,
      int serverMaxAwaitingTrailers,
      int maxDraining,
      Counts before) {

    /** The guard's counters for this run's streams. */
    Counts counts(SpannerTuningState state) {
      return Counts.of(state).minus(this.before);
    }

    String describe(String what, SpannerTuningState state) {
      Counts counts = counts(state);
      return String.format(
          Locale.ROOT,
          "[slots %s] %s, 1 channel, %d streams/connection, %d workers for %d ms: %d point selects,"
              + " server max awaiting trailers %d, client max draining (sampled) %d | skipped %d,"
              + " drained %d, cancelled at limit %d, drain timeouts %d | cancels reaching gRPC %d,"
              + " RST_STREAM frames %d",
          ClientVersions.detected().spanner(),
          what,
          STREAM_LIMIT,
          this.workers,
          RUN.toMillis(),
          this.queries,
          this.serverMaxAwaitingTrailers,
          this.maxDraining,
          counts.skipped(),
          counts.drained(),
          counts.cancelledAtLimit(),
          counts.drainTimeouts(),
          this.cancels,
          this.rstFrames);
    }
  }

  /** The production-like server, counting frames, its trailers the given time late. */
  private static MockSpannerServer.Builder trailersLate(long millis) {
    return MockSpannerServer.builder().countFrames().trailersDelay(Duration.ofMillis(millis));
  }

  /** A closed-loop run, once the channel is idle again: its figures and the guard's counters. */
  private record Outcome(Run run, Counts counts, String figures) {}

  /**
   * A test server and a tuned one-channel client of it, with a cancel counter below grpc-gcp: the
   * guard's limit is the server's, and its releases are not budgeted.
   */
  private record Slots(MockSpannerServer server, GuardedTestClient client)
      implements AutoCloseable {

    static Slots open(MockSpannerServer.Builder server, Duration drainTimeout) throws Exception {
      MockSpannerServer started = server.start();
      try {
        SpannerTuning.Builder tuning =
            SpannerTuning.newBuilder()
                .streamEndGuardDrainTimeout(drainTimeout)
                .streamEndGuardMaxConcurrentStreams(STREAM_LIMIT)
                // The slot rule itself: where the guard is native, releases are budgeted by
                // default (GuardedStreamAtLastTest), and this server has no reset limit.
                .streamEndGuardReleaseBudget(Integer.MAX_VALUE, Duration.ofSeconds(30));
        return new Slots(started, GuardedTestClient.open(started, 1, tuning, true));
      } catch (RuntimeException | AssertionError ex) {
        started.close();
        throw ex;
      }
    }

    ChannelLoad.ChannelStats channel() {
      List<ChannelLoad.ChannelStats> channels = this.client.state().channelLoad().channels();
      assertThat(channels).as("data channels that carried calls").hasSize(1);
      return channels.get(0);
    }

    void awaitIdle(Duration atMost) {
      ChannelLoad.ChannelStats channel = channel();
      await()
          .pollInterval(Duration.ofMillis(10))
          .atMost(atMost)
          .until(() -> channel.activeStreams() == 0 && channel.drainingStreams() == 0);
    }

    /** {@link #closedLoop}, then up to 10 s for the channel to be idle again. */
    Outcome runUntilIdle(int workers, String what) throws Exception {
      Run run = closedLoop(workers);
      awaitIdle(Duration.ofSeconds(10));
      SpannerTuningState state = this.client.state();
      return new Outcome(run, run.counts(state), run.describe(what, state));
    }

    /**
     * Closed-loop point selects from {@code workers} threads for {@link #RUN}, after one that opens
     * the session and the channel; counts from then on, sampling the channel's draining streams
     * every millisecond.
     */
    Run closedLoop(int workers) throws Exception {
      DatabaseClient database = this.client.database();
      assertThat(readOneRow(database)).isTrue();
      awaitIdle(Duration.ofSeconds(10));
      ChannelLoad.ChannelStats channel = channel();
      this.server.reset();
      this.client.counter().reset();
      Counts before = Counts.of(this.client.state());

      AtomicInteger queries = new AtomicInteger();
      AtomicInteger maxDraining = new AtomicInteger();
      try (Loops.Background sampler =
          Loops.inBackground(
              1,
              (thread, i) -> {
                maxDraining.accumulateAndGet(channel.drainingStreams(), Math::max);
                TimeUnit.MILLISECONDS.sleep(1);
              })) {
        Loops.forTime(
            workers,
            RUN,
            (thread, i) -> {
              assertThat(readOneRow(database)).isTrue();
              queries.incrementAndGet();
            });
      }
      return new Run(
          workers,
          queries.get(),
          this.client.counter().cancels(),
          this.server.rstStreams(),
          this.server.maxAwaitingTrailers(),
          maxDraining.get(),
          before);
    }

    @Override
    public void close() throws Exception {
      this.server.closeAfter(this.client);
    }
  }
}
