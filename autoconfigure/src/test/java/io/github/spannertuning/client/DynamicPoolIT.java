package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.grpc.GcpManagedChannelOptions.GcpChannelPoolOptions;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Arrival;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import io.github.spannertuning.testing.StockAndTuned;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Routing on grpc-gcp's dynamic channel pool, whose channels come and go with its load, against the
 * production-like {@link MockSpannerServer} (2 to 5 ms per query unless a test sets another pace,
 * {@code last} on the final message, trailers 1 ms later, streams served in parallel). Stock and
 * tuned clients of the same pool options run the same load, one after the other, and stock's
 * figures are printed beside tuned's.
 *
 * <p>The pool's options are Spanner's defaults (4 channels to start, 2 to 10, one added past 25
 * calls in flight per channel, removed below 15) but for its timing, shortened so that a test sees
 * it scale in seconds: the scale-down is checked every half second (3 minutes in production), and
 * on grpc-gcp 1.20 a scale-up may follow another after half a second (10 s) and a removed channel
 * is closed a second after its last call (a minute).
 *
 * <p>Tagged {@code dynamic-pool}: the suite runs it on 6.119 (grpc-gcp 1.12) and 6.127 (grpc-gcp
 * 1.20, whose pool primes the channels it adds and penalises failing ones), the two pools it
 * follows.
 */
@Tag("dynamic-pool")
class DynamicPoolIT {

  private static final String VERSION = ClientVersions.detected().spanner();

  /** Spanner's dynamic pool defaults, on a test's time scale (see the class comment). */
  static GcpChannelPoolOptions poolOptions() {
    GcpChannelPoolOptions.Builder builder =
        GcpChannelPoolOptions.newBuilder(SpannerOptions.createDefaultDynamicChannelPoolOptions())
            .setDynamicScaling(15, 25, Duration.ofMillis(500));
    // grpc-gcp 1.20's knobs, absent from 1.12.
    setIfPresent(builder, "setScaleUpCooldown", Duration.ofMillis(500));
    setIfPresent(builder, "setDrainIdleGrace", Duration.ofSeconds(1));
    return builder.build();
  }

  private static void setIfPresent(
      GcpChannelPoolOptions.Builder builder, String setter, Object value) {
    try {
      builder.getClass().getMethod(setter, value.getClass()).invoke(builder, value);
    } catch (NoSuchMethodException ex) {
      // Not on this grpc-gcp: its default is already a test's.
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException(ex);
    }
  }

  /**
   * 950 reads a second for 3 s from a server that takes 200 ms per query, so about 190 calls in
   * flight, then none: the pool grows from 4 channels to 8 or more and, idle, shrinks back. Tuned,
   * it does so at the load where stock does, within one of the pool's own steps, while no call goes
   * to a channel it drains, no query fails and no finished stream is cancelled. The reads arrive on
   * a schedule (open loop), so that both clients put the same calls in flight whatever each spends
   * of the machine's CPU per call: a closed loop would give the client that spends less more calls
   * in flight, and a pool that counts them more channels.
   */
  @Test
  void thePoolGrowsAndShrinksAtTheLoadWhereStocksDoes() throws Exception {
    StockAndTuned<Scaling> runs =
        onFreshClients(
            MockSpannerServer.builder()
                .serviceTime(ServiceTime.uniform(Duration.ofMillis(200), Duration.ofMillis(202))),
            DynamicPoolIT::scaling);
    int step = scaleUpStep();
    String figures =
        runs.print(
            "[dynamic pool %s] 950 reads/s for 3 s, then idle: pool size every 0.25 s (the"
                + " pool's step: %d)",
            VERSION, step);
    Scaling stock = runs.stock();
    Scaling tuned = runs.tuned();
    assertThat(stock.peak())
        .as("stock: the pool grew to 8 channels or more: " + figures)
        .isGreaterThanOrEqualTo(8);
    assertThat(tuned.peak())
        .as("tuned: the pool's peak, within one step (%d) of stock's: %s", step, figures)
        .isBetween(stock.peak() - step, stock.peak() + step);
    assertThat(tuned.atEndOfLoad())
        .as("tuned: its size as the load ended: " + figures)
        .isBetween(stock.atEndOfLoad() - step, stock.atEndOfLoad() + step);
    assertThat(tuned.last())
        .as("tuned: its size once idle, within one step of stock's: " + figures)
        .isBetween(stock.last() - step, stock.last() + step)
        .isLessThan(tuned.peak());
    assertThat(tuned.failed()).as("tuned: failed queries: " + figures).isZero();
    assertThat(tuned.callsWhileDraining())
        .as("tuned: calls made on a channel while it drained: " + figures)
        .isZero();
    assertThat(tuned.cancels()).as("tuned: streams the server saw cancelled: " + figures).isZero();
  }

  private static Scaling scaling(RoutingSubject subject) {
    PoolSampler sampler = new PoolSampler(subject, Duration.ofMillis(250));
    try (sampler) {
      PointSelectLoads.Load load = PointSelectLoads.openLoop(subject, 950, Duration.ofSeconds(3));
      int atEnd = sampler.sample();
      // Idle: grpc-gcp 1.12 removes what the last check's load did not need at its next check;
      // 1.20 after three checks in a row, two channels at a time.
      sleep(Duration.ofSeconds(4));
      return new Scaling(
          sampler.sizes(),
          atEnd,
          load.failed(),
          sampler.callsWhileDraining(),
          subject.server.cancels());
    }
  }

  /** The pool's size over time, and what happened to the load and the channels. */
  record Scaling(
      List<Integer> sizes, int atEndOfLoad, int failed, long callsWhileDraining, int cancels) {

    int peak() {
      return this.sizes.stream().mapToInt(Integer::intValue).max().orElse(0);
    }

    int last() {
      return this.sizes.get(this.sizes.size() - 1);
    }

    @Override
    public String toString() {
      return String.format(
          "sizes %s (peak %d, %d as the load ended, %d idle), %d failed, %d calls on draining"
              + " channels, %d cancels",
          this.sizes,
          peak(),
          this.atEndOfLoad,
          last(),
          this.failed,
          this.callsWhileDraining,
          this.cancels);
    }
  }

  /**
   * One connection answers every call 20 ms later than the others, and 8 threads read: from the
   * moment it slows, learning included, it takes at most 0.15 of its even share of the reads over
   * the connections in use. The pool keeps its 4 channels: its scale-down is checked every 3
   * minutes here, as in production, so that the connection slowed is one the pool still has when
   * the reads are counted.
   */
  @Test
  void aConnection20MsSlowerTakesLittleFrom8Threads() throws Exception {
    slowedConnection(MockSpannerServer.builder(), 8, 20, false, steady());
  }

  /**
   * 64 threads read from a server that takes 100 ms per query, so that the client's cores stay
   * free, and one connection answers 100 ms later: from that moment it takes at most 0.15 of its
   * even share. The pool keeps its 4 channels, as above.
   */
  @Test
  void aConnectionTwiceAsSlowTakesLittleFrom64Threads() throws Exception {
    slowedConnection(
        MockSpannerServer.builder()
            .serviceTime(ServiceTime.uniform(Duration.ofMillis(100), Duration.ofMillis(102))),
        64,
        100,
        false,
        steady());
  }

  /**
   * A pool at its largest, capped at its 4 channels ({@code setMaxSize}): 80 threads read from a
   * server that takes 100 ms per query, so that the three fast connections carry past the 25 calls
   * per channel where the pool would grow, and one connection answers 100 ms later. From that
   * moment it takes at most 0.15 of its even share: the fast connections go past the pool's room,
   * up to the server's stream limit less the stream-end guard's margin, before it takes a call.
   */
  @Test
  void aPoolAtItsLargestKeepsASlowConnectionOutPastItsRoom() throws Exception {
    slowedConnection(
        MockSpannerServer.builder()
            .serviceTime(ServiceTime.uniform(Duration.ofMillis(100), Duration.ofMillis(102))),
        80,
        100,
        false,
        GcpChannelPoolOptions.newBuilder(steady()).setMaxSize(4).build());
  }

  /**
   * As {@link #aConnectionTwiceAsSlowTakesLittleFrom64Threads}, after a burst of 200 concurrent
   * reads has grown the pool: every channel the burst added takes reads, as it does for stock, and
   * the slowed connection still takes at most 0.15 of its even share over them.
   */
  @Test
  void afterABurstGrewThePoolEveryChannelTakesReadsAndASlowOneLittle() throws Exception {
    slowedConnection(
        MockSpannerServer.builder()
            .serviceTime(ServiceTime.uniform(Duration.ofMillis(100), Duration.ofMillis(102))),
        64,
        100,
        true,
        steady());
  }

  /** Spanner's dynamic pool defaults, scaled down every 3 minutes as in production. */
  private static GcpChannelPoolOptions steady() {
    return SpannerOptions.createDefaultDynamicChannelPoolOptions();
  }

  private static void slowedConnection(
      MockSpannerServer.Builder server,
      int threads,
      long slowerMillis,
      boolean burstFirst,
      GcpChannelPoolOptions pool)
      throws Exception {
    StockAndTuned<Slowed> runs =
        onFreshClients(
            server,
            pool,
            (subject) -> {
              if (burstFirst) {
                Loops.onThreads(
                    200,
                    (thread) -> {
                      subject.pointSelect();
                      return null;
                    });
              }
              PointSelectLoads.closedLoop(subject, threads, Duration.ofSeconds(1));
              SocketAddress slow = subject.server.busiestConnection();
              subject.server.reset();
              subject.server.slowDown(slow, slowerMillis);
              PointSelectLoads.closedLoop(subject, threads, Duration.ofSeconds(3));
              List<Arrival> arrivals = subject.server.arrivals();
              return new Slowed(
                  shareOf(slow, arrivals), connectionsUsed(arrivals), poolSize(subject));
            });
    String figures =
        runs.print(
            "[dynamic pool %s] %d threads%s, a connection +%d ms from the moment it slows: its"
                + " share of its even share over the connections in use",
            VERSION, threads, burstFirst ? " after a 200-read burst" : "", slowerMillis);
    assertThat(runs.tuned().share()).as("tuned: " + figures).isLessThanOrEqualTo(0.15);
    assertThat(runs.tuned().used())
        .as("tuned: connections that took reads, at least stock's: " + figures)
        .isGreaterThanOrEqualTo(Math.min(runs.stock().used(), runs.tuned().pool()));
  }

  /** The slowed connection's share, the connections that took reads and the pool's size. */
  record Slowed(double share, int used, int pool) {

    @Override
    public String toString() {
      return String.format("%.2f on %d of %d connections", this.share, this.used, this.pool);
    }
  }

  static int connectionsUsed(List<Arrival> arrivals) {
    Set<SocketAddress> used = new HashSet<>();
    arrivals.forEach((arrival) -> used.add(arrival.connection()));
    return used.size();
  }

  /**
   * As {@link TransactionRoutingIT} on a fixed pool: one connection of the dynamic pool's four
   * (scaled down every 3 minutes, as in production, so that it keeps them) answers every call 200
   * ms later, and 16 threads run 800 transactions: read-only, also through Spring Data Spanner, and
   * read/write. The slowed connection's share of the transactions stays small for the tuned client,
   * and no transaction's calls are split between connections.
   */
  @Test
  void transactionsAvoidASlowerConnection() throws Exception {
    GcpChannelPoolOptions steady = SpannerOptions.createDefaultDynamicChannelPoolOptions();
    StockAndTuned<Transactions> runs =
        onFreshClients(
            MockSpannerServer.builder(),
            steady,
            (subject) -> {
              PointSelectLoads.closedLoop(subject, 8, Duration.ofSeconds(1));
              SocketAddress slowed = subject.server.busiestConnection();
              subject.server.slowDown(slowed, 200);
              subject.server.reset();
              int before = poolSize(subject);
              int ran = TransactionRoutingIT.transactionsFor(subject, 800, "t");
              return Transactions.of(subject, slowed, ran, before);
            });
    String figures = printed(runs, ", 800 transactions, a connection +200 ms");
    Transactions tuned = runs.tuned();
    assertThat(tuned.spread().transactions())
        .as("tuned: transactions the server saw: " + figures)
        .isEqualTo(800);
    assertThat(tuned.spread().split())
        .as("tuned: transactions split between connections: " + figures)
        .isZero();
    assertThat(tuned.spread().slowedShare())
        .as("tuned: the slowed connection's share of its even share: " + figures)
        .isLessThanOrEqualTo(0.12);
  }

  /**
   * The pool grown to 8 channels or more by a burst, 16 threads run transactions for 3 s while the
   * idle pool scales down under them. None fails; a transaction's calls are split between
   * connections only where the pool removed its channel under it and grpc-gcp sent its next call
   * elsewhere (1.12 does, 1.20 follows the draining channel): at most one transaction per thread
   * for each channel removed.
   */
  @Test
  void transactionsOutliveAScaleDown() throws Exception {
    StockAndTuned<Transactions> runs =
        onFreshClients(
            MockSpannerServer.builder(),
            poolOptions(),
            (subject) -> {
              subject.server.setServiceTime(
                  ServiceTime.uniform(Duration.ofMillis(200), Duration.ofMillis(202)));
              int grown;
              try (PoolSampler sampler = new PoolSampler(subject, Duration.ofMillis(100))) {
                PointSelectLoads.closedLoop(subject, 200, Duration.ofSeconds(2));
                grown = sampler.sizes().stream().mapToInt(Integer::intValue).max().orElse(0);
              }
              subject.server.setServiceTime(
                  ServiceTime.uniform(Duration.ofMillis(2), Duration.ofMillis(5)));
              subject.server.reset();
              int ran = TransactionRoutingIT.transactionsFor(subject, Duration.ofSeconds(3), "t");
              return Transactions.of(subject, null, ran, grown);
            });
    String figures = printed(runs, " of transactions for 3 s, the pool scaling down");
    Transactions tuned = runs.tuned();
    assertThat(tuned.before()).as("tuned: the pool before: " + figures).isGreaterThanOrEqualTo(8);
    assertThat(tuned.after())
        .as("tuned: the pool scaled down: " + figures)
        .isLessThan(tuned.before());
    assertThat(tuned.spread().transactions())
        .as("tuned: transactions the server saw, all that ran: " + figures)
        .isEqualTo(tuned.ran());
    assertThat(tuned.spread().split())
        .as("tuned: transactions split between connections: " + figures)
        .isLessThanOrEqualTo((tuned.before() - tuned.after()) * TransactionRoutingIT.THREADS);
  }

  /** Prints both sides' transactions, {@code what} after the pool and the threads. */
  private static String printed(StockAndTuned<Transactions> runs, String what) {
    return runs.print(
        "[dynamic pool %s] %d threads%s", VERSION, TransactionRoutingIT.THREADS, what);
  }

  /** Where the transactions ran, and the pool's size before and after. */
  record Transactions(TransactionRoutingIT.Spread spread, int ran, int before, int after) {

    static Transactions of(RoutingSubject subject, SocketAddress slowed, int ran, int before) {
      Set<SocketAddress> used = new HashSet<>();
      subject.server.calls().forEach((call) -> used.add(call.connection()));
      return new Transactions(
          TransactionRoutingIT.Spread.of(subject.server.calls(), slowed, used.size()),
          ran,
          before,
          poolSize(subject));
    }

    @Override
    public String toString() {
      return String.format(
          "%d transactions, slowed share %.2f, %d split, on %d connections; pool %d -> %d",
          this.ran,
          this.spread.slowedShare(),
          this.spread.split(),
          this.spread.connections(),
          this.before,
          this.after);
    }
  }

  /**
   * Streams whose trailers never come: 200 threads read twice each from a server that takes 100 ms
   * per query, which grows the pool, then stop. Each stream closed at its last row holds a stream
   * slot of its channel while it drains, counts in the pool's load, and keeps a channel the pool
   * removed from being closed. The stream-end guard's drain timeout (2 s here) ends them: 6 s after
   * the load, no stream is left open on the server, the pool has shrunk, and every channel it
   * removed is closed. Stock's figures are printed beside (from 6.125 the client sends no cancel
   * after {@code last} and has no timeout: its streams stay open, and so does its pool).
   */
  @Test
  void aDrainingStreamHoldsNoChannelPastTheDrainTimeout() throws Exception {
    Duration drainTimeout = Duration.ofSeconds(2);
    StockAndTuned<Held> held =
        StockAndTuned.measure(
            (tuned) -> {
              MockSpannerServer server =
                  MockSpannerServer.builder()
                      .serviceTime(
                          ServiceTime.uniform(Duration.ofMillis(100), Duration.ofMillis(102)))
                      .trailersDelay(MockSpannerServer.TRAILERS_NEVER)
                      .start();
              SpannerOptions.Builder builder = server.dynamicPoolOptions(poolOptions());
              SpannerTuningState state =
                  tuned
                      ? SpannerTuning.newBuilder()
                          .streamEndGuardDrainTimeout(drainTimeout)
                          .logWhenBuilt(false)
                          .build()
                          .applyTo(builder)
                      : null;
              try (RoutingSubject subject =
                  RoutingSubject.of(server, builder.build().getService(), state)) {
                PoolSampler sampler = new PoolSampler(subject, Duration.ofMillis(250));
                try (sampler) {
                  Loops.onThreads(
                      200,
                      (thread) -> {
                        for (int i = 0; i < 2; i++) {
                          subject.pointSelect();
                        }
                        return null;
                      });
                  sleep(drainTimeout.plusSeconds(4));
                  Held result =
                      new Held(
                          server.awaitingTrailers(),
                          sampler.sizes().stream().mapToInt(Integer::intValue).max().orElse(0),
                          poolSize(subject),
                          removedButOpen(subject));
                  // The server goes first: a client that still holds its streams (stock from
                  // 6.125) would otherwise wait out its shutdown timeout for them.
                  server.stop();
                  return result;
                }
              }
            });
    String figures =
        held.print(
            "[dynamic pool %s] trailers never come, drain timeout %s, 6 s after the load",
            VERSION, drainTimeout);
    Held tuned = held.tuned();
    assertThat(tuned.open()).as("tuned: streams left open on the server: " + figures).isZero();
    assertThat(tuned.after()).as("tuned: the pool shrank: " + figures).isLessThan(tuned.peak());
    assertThat(tuned.removedButOpen())
        .as("tuned: channels the pool removed and has not closed: " + figures)
        .isZero();
  }

  /** What streams without trailers left of the pool. */
  record Held(int open, int peak, int after, int removedButOpen) {

    @Override
    public String toString() {
      return String.format(
          "%d streams open, pool %d at its peak -> %d, %d removed channels not closed",
          this.open, this.peak, this.after, this.removedButOpen);
    }
  }

  /** Channels grpc-gcp removed from the pool and has not closed, as grpc-gcp has them. */
  private static int removedButOpen(RoutingSubject subject) {
    Object pool = PoolRouting.pool((GapicSpannerRpc) subject.spanner.getOptions().getRpc());
    try {
      java.lang.reflect.Field removed = pool.getClass().getDeclaredField("removedChannelRefs");
      removed.setAccessible(true);
      return ((java.util.Collection<?>) removed.get(pool)).size();
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException(ex);
    }
  }

  static int poolSize(RoutingSubject subject) {
    return PoolRouting.pool((GapicSpannerRpc) subject.spanner.getOptions().getRpc())
        .getNumberOfChannels();
  }

  /** The connection's arrivals over its even share of all of them, over the connections used. */
  static double shareOf(SocketAddress connection, List<Arrival> arrivals) {
    Set<SocketAddress> used = new HashSet<>();
    long on = 0;
    for (Arrival arrival : arrivals) {
      used.add(arrival.connection());
      if (arrival.connection().equals(connection)) {
        on++;
      }
    }
    used.add(connection);
    return Math.round(100.0 * on / (arrivals.size() / (double) used.size())) / 100.0;
  }

  /** As {@link #onFreshClients(MockSpannerServer.Builder, GcpChannelPoolOptions, Function)}. */
  static <T> StockAndTuned<T> onFreshClients(
      MockSpannerServer.Builder server, Function<RoutingSubject, T> workload) throws Exception {
    return onFreshClients(server, poolOptions(), workload);
  }

  /**
   * The workload on a fresh stock client, then on a fresh tuned one, each on a dynamic pool with
   * these options and a server of its own.
   */
  static <T> StockAndTuned<T> onFreshClients(
      MockSpannerServer.Builder server,
      GcpChannelPoolOptions pool,
      Function<RoutingSubject, T> workload)
      throws Exception {
    return StockAndTuned.measure((tuned) -> onFreshClient(server, tuned, pool, workload));
  }

  /**
   * A fresh client on a dynamic pool with these options, stock or tuned, on a server of its own.
   */
  private static <T> T onFreshClient(
      MockSpannerServer.Builder server,
      boolean tuned,
      GcpChannelPoolOptions pool,
      Function<RoutingSubject, T> workload)
      throws Exception {
    try (RoutingSubject subject =
        RoutingSubject.openDynamic(RoutingSubject.results(server.start()), tuned, pool)) {
      return workload.apply(subject);
    }
  }

  /**
   * The channels the pool adds at one scale-up, at 8 to 10 channels: one on grpc-gcp 1.12; on 1.20
   * at most 30 % of those it has, and at least two (its {@code setScaleUpCooldown} tells the line).
   */
  static int scaleUpStep() {
    try {
      GcpChannelPoolOptions.Builder.class.getMethod("setScaleUpCooldown", Duration.class);
      return 3;
    } catch (NoSuchMethodException ex) {
      return 1;
    }
  }

  static void sleep(Duration time) {
    try {
      Thread.sleep(time.toMillis());
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(ex);
    }
  }
}
