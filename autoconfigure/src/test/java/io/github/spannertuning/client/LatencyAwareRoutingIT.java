package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Arrival;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import io.github.spannertuning.testing.StockAndTuned;
import io.grpc.Context;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Single-use reads go where they are answered: a connection far slower than the others gets few of
 * them, a connection that stopped answering gets none, a recovered one is used again, and a fresh
 * client's first traffic at high concurrency spreads over the pool. Routing is asserted by counting
 * on the server where each query arrived; stock's figures are printed beside tuned's. Every bound
 * is a count with a wide margin over what two CPU burners beside the test leave of it; how far the
 * share of a connection slowed by 20 ms falls under load, and latency and throughput, are the
 * benchmark's figures (degraded, stalled, recovered and fresh-client workloads), and {@link
 * io.github.spannertuning.routing.ChannelPickerTest} checks the pick itself on a fixed clock.
 *
 * <p>The server is the production-like {@link MockSpannerServer}: 2 to 5 ms per query, {@code last}
 * on the final message, trailers 1 ms later, 100 streams per connection.
 *
 * <p>Tagged {@code default-line}: the picker and its statistics under load are the starter's own
 * code on every client line, so the suite runs this on the default line (6.119) only. The hooks
 * that put each line's calls through the picker are checked on every line by {@code
 * SingleUseDistributionIT}, {@code TransactionRoutingIT} and {@code JdbcTuningIT}.
 */
@Tag("default-line")
class LatencyAwareRoutingIT {

  private static final int CHANNELS = RoutingSubject.CHANNELS;

  private static final String VERSION = ClientVersions.detected().spanner();

  private static ScheduledExecutorService deadlines;

  @BeforeAll
  static void warmUp() throws Exception {
    deadlines = Executors.newSingleThreadScheduledExecutor();
    // The JVM's own warm-up (class loading, JIT) would otherwise be part of the first test's
    // figures, whichever runs first.
    onFreshClient(
        MockSpannerServer.builder(),
        true,
        (subject) -> closedLoop(subject, 32, Duration.ofSeconds(2), Duration.ZERO));
  }

  @AfterAll
  static void stopDeadlines() {
    deadlines.shutdownNow();
  }

  /**
   * After a warm-up, the busiest connection answers 200 ms later than the others; one thread then
   * sends point selects, one after another, for 3 s. A delay that long stands far out of what a
   * busy machine adds to every connection alike, and one read at a time leaves the stock client
   * nothing to tell the connections apart by: its picks are spread evenly, the slow connection's
   * share included (on 6.113 its single-use reads all take one sticky channel).
   */
  @Test
  void aConnectionAnsweringFarLaterGetsFewOfTheReads() throws Exception {
    StockAndTuned<Double> share =
        onFreshClients(
            MockSpannerServer.builder(),
            (subject) -> {
              SocketAddress slow = busiestAfterWarmUp(subject, 8);
              subject.server.slowDown(slow, 200);
              subject.server.reset();
              closedLoop(subject, 1, Duration.ofSeconds(3), Duration.ZERO);
              return shareOf(slow, subject.server.arrivals());
            });
    System.out.printf(
        "[latency routing %s] connection +200 ms, sequential reads, its share of its even share:"
            + " stock %.2f | tuned %.2f%n",
        VERSION, share.stock(), share.tuned());
    // Its estimate is forgotten by halves every 250 ms without a sample, so it is tried again about
    // every second and a half: a few reads in 3 s, a small fraction of its even share.
    assertThat(share.tuned())
        .as("tuned: the slowed connection's share of its even share (stock %.2f)", share.stock())
        .isLessThanOrEqualTo(0.25);
  }

  /**
   * Four calls in flight on each connection, as in a busy service: 32 threads send point selects
   * that the server answers in 50 to 52 ms, so the client's cores are not what limits them, and
   * after a warm-up the busiest connection answers 50 ms later than the others. A frontend serves a
   * connection's streams in parallel, so the slowed connection's four calls in flight do not make
   * the others' answers later: latency, not calls in flight, must set it apart.
   */
  @Test
  void manyCallsInFlightPerConnectionStillAvoidTheSlowOne() throws Exception {
    int threads = 32;
    Duration service = Duration.ofMillis(50);
    StockAndTuned<Concurrent> runs =
        onFreshClients(
            MockSpannerServer.builder()
                .serviceTime(ServiceTime.uniform(service, service.plusMillis(2))),
            (subject) -> {
              SocketAddress slow = busiestAfterWarmUp(subject, threads);
              subject.server.slowDown(slow, 50);
              // The share measured is the settled one: the first second learns the change.
              closedLoop(subject, threads, Duration.ofSeconds(1), Duration.ZERO);
              subject.server.reset();
              Load load = closedLoop(subject, threads, Duration.ofSeconds(4), Duration.ZERO);
              return new Concurrent(shareOf(slow, subject.server.arrivals()), load);
            });
    String figures =
        runs.print(
            "[latency routing %s] %d threads, 50-52 ms per query, connection +50 ms, its share"
                + " of its even share",
            VERSION, threads);
    Concurrent tuned = runs.tuned();
    assertThat(tuned.load().failed()).as("tuned: failed queries: " + figures).isZero();
    // A median under half again the service time: the client's cores are not what limits it.
    assertThat(tuned.load().p50Millis())
        .as("tuned: median latency against 50-52 ms of service: " + figures)
        .isLessThan(service.toMillis() * 1.5);
    // Twice the others' latency is far outside the band of half again: what reaches it are the
    // probes of a forgotten estimate, one call at a time.
    assertThat(tuned.share())
        .as("tuned: the slowed connection's share of its even share: " + figures)
        .isLessThanOrEqualTo(0.15);
    assertThat(runs.stock().share())
        .as("stock: the same bound does not hold for the client's own pick: " + figures)
        .isGreaterThan(0.15);
  }

  /** The slowed connection's share of its even share, and the load that measured it. */
  private record Concurrent(double share, Load load) {

    @Override
    public String toString() {
      return String.format("%.2f (%s)", this.share, this.load);
    }
  }

  /**
   * After a warm-up, the busiest connection stops answering; 32 threads then send 40 point selects
   * each, every one with a 3 s deadline: long enough that a read sent elsewhere is answered in time
   * however busy the machine's cores are.
   */
  @Test
  void stalledConnectionTakesAtMostOneReadPerThread() throws Exception {
    int threads = 32;
    StockAndTuned<Stall> runs =
        onFreshClients(
            MockSpannerServer.builder(),
            (subject) -> {
              SocketAddress stalled = busiestAfterWarmUp(subject, threads);
              subject.server.stall(stalled);
              subject.server.reset();
              long start = System.nanoTime();
              Load load =
                  fixedCount(subject, threads, 40, Duration.ofSeconds(3), Duration.ofSeconds(30));
              List<Arrival> arrivals = subject.server.arrivals();
              long late = start + TimeUnit.MILLISECONDS.toNanos(200);
              long onStalled =
                  arrivals.stream().filter((a) -> a.connection().equals(stalled)).count();
              long onStalledLate =
                  arrivals.stream()
                      .filter((a) -> a.connection().equals(stalled) && a.nanos() > late)
                      .count();
              return new Stall(arrivals.size(), onStalled, onStalledLate, load.failed(), load.ok());
            });
    runs.print("[latency routing %s] stalled connection", VERSION);
    Stall stock = runs.stock();
    Stall tuned = runs.tuned();
    // A connection that has not answered for a while is expected to take at least that long, and
    // one whose read failed carries one read at a time: the reads it takes are those sent before
    // its silence stood out, a few, and its single retries. Stock 6.113 sends it one read in eight.
    assertThat(tuned.onStalled())
        .as("tuned: reads sent to the stalled connection (%s; stock %s)", tuned, stock)
        .isLessThanOrEqualTo(threads);
    assertThat(tuned.failed())
        .as("tuned: failed reads, all of them sent to the stalled connection (%s)", tuned)
        .isEqualTo(tuned.onStalled());
  }

  /**
   * A connection slowed by 20 ms for 2 s of traffic from 16 threads returns to normal; the same
   * traffic goes on for 5 s.
   */
  @Test
  void recoveredConnectionIsUsedAgainWithin5Seconds() throws Exception {
    double[] windows =
        onFreshClient(
            MockSpannerServer.builder(),
            true,
            (subject) -> {
              SocketAddress slow = busiestAfterWarmUp(subject, 16);
              subject.server.slowDown(slow, 20);
              closedLoop(subject, 16, Duration.ofSeconds(2), Duration.ZERO);
              subject.server.slowDown(slow, 0);
              subject.server.reset();
              long recovered = System.nanoTime();
              closedLoop(subject, 16, Duration.ofSeconds(5), Duration.ZERO);
              return sharePerWindow(slow, subject.server.arrivals(), recovered, 10);
            });
    System.out.printf(
        "[latency routing %s] recovered connection, share of its even share per 0.5 s: %s%n",
        VERSION, Arrays.toString(windows));
    assertThat(Arrays.stream(windows).anyMatch((share) -> share >= 0.5))
        .as(
            "tuned: a 0.5 s window in the 5 s after recovery where the recovered connection"
                + " carried at least half its even share: %s",
            Arrays.toString(windows))
        .isTrue();
  }

  /**
   * The shape of googleapis/google-cloud-java#12725: a fresh client whose first traffic is 400
   * closed-loop workers on 8 channels, against a server with 100 streams per connection: a pool
   * whose first traffic piles onto fewer than half of its channels runs into the stream limit. The
   * server takes 800 to 850 ms per query, and the JVM is warm (see {@link #warmUp()}): what is
   * counted is where the fresh client's queries went, from its second second on, when the stock
   * client's sticky keys have landed where they stay. Its throughput and latency against the
   * server's pace are the benchmark's fresh-client figures: on a machine whose cores are taken they
   * measure the machine.
   */
  @Test
  void freshClientAtHighConcurrencySpreadsOverThePool() throws Exception {
    int workers = 400;
    Duration serviceMin = Duration.ofMillis(800);
    Duration serviceMax = Duration.ofMillis(850);
    StockAndTuned<Fresh> runs =
        onFreshClients(
            MockSpannerServer.builder()
                .serviceTime(ServiceTime.uniform(serviceMin, serviceMax))
                .maxConcurrentStreams(100),
            (subject) -> {
              Load load =
                  closedLoop(subject, workers, Duration.ofSeconds(8), Duration.ofSeconds(1));
              return new Fresh(
                  load,
                  MockSpannerServer.perConnection(
                      subject.server.calls("ExecuteStreamingSql"), subject.server.connections()));
            });
    String figures =
        runs.print(
            "[latency routing %s] fresh client, %d workers, 800-850 ms per query",
            VERSION, workers);
    Fresh tuned = runs.tuned();
    assertThat(tuned.load().failed()).as("tuned: failed queries: " + figures).isZero();
    assertThat(tuned.perConnection()).as("tuned: connections used: " + figures).hasSize(CHANNELS);
    // The picker keeps each channel's calls in flight within half again of the least busy one's.
    assertThat(tuned.busiestOverMean())
        .as("tuned: the busiest connection's queries over the mean: " + figures)
        .isLessThanOrEqualTo(1.5);
  }

  /** A fresh client's closed loop, and its queries per connection, busiest first. */
  private record Fresh(Load load, List<Integer> perConnection) {

    double busiestOverMean() {
      double mean =
          this.perConnection.stream().mapToInt(Integer::intValue).sum() / (double) CHANNELS;
      return this.perConnection.get(0) / mean;
    }

    @Override
    public String toString() {
      return String.format(
          "%s, queries per connection %s, busiest/mean %.2f",
          this.load, this.perConnection, busiestOverMean());
    }
  }

  /**
   * The workload on a fresh stock client, then on a fresh tuned one, each with a server of its own
   * as {@code server} builds it.
   */
  private static <T> StockAndTuned<T> onFreshClients(
      MockSpannerServer.Builder server, Function<RoutingSubject, T> workload) throws Exception {
    return StockAndTuned.measure((tuned) -> onFreshClient(server, tuned, workload));
  }

  /** A fresh client with a server of its own: this class runs where single-use routing is on. */
  private static <T> T onFreshClient(
      MockSpannerServer.Builder server, boolean tuned, Function<RoutingSubject, T> workload)
      throws Exception {
    try (RoutingSubject subject =
        RoutingSubject.open(server.start(), tuned, () -> FeatureState.Status.ON)) {
      return workload.apply(subject);
    }
  }

  /**
   * The connection that carried the most of a second of closed-loop point selects from {@code
   * threads} threads: the one a test then slows or stalls.
   */
  private static SocketAddress busiestAfterWarmUp(RoutingSubject subject, int threads) {
    closedLoop(subject, threads, Duration.ofSeconds(1), Duration.ZERO);
    return subject.server.busiestConnection();
  }

  /** The connection's arrivals over its even share of all of them. */
  private static double shareOf(SocketAddress connection, List<Arrival> arrivals) {
    long on = arrivals.stream().filter((a) -> a.connection().equals(connection)).count();
    return on / (arrivals.size() / (double) CHANNELS);
  }

  private static double[] sharePerWindow(
      SocketAddress connection, List<Arrival> arrivals, long start, int windows) {
    long window = TimeUnit.MILLISECONDS.toNanos(500);
    double[] shares = new double[windows];
    for (int w = 0; w < windows; w++) {
      long from = start + w * window;
      long to = from + window;
      List<Arrival> in =
          arrivals.stream().filter((a) -> a.nanos() >= from && a.nanos() < to).toList();
      shares[w] = in.isEmpty() ? 0 : Math.round(shareOf(connection, in) * 100) / 100.0;
    }
    return shares;
  }

  /** What the stalled-connection workload saw. */
  record Stall(long reads, long onStalled, long onStalledAfter200Ms, int failed, int ok) {}

  /**
   * Queries made, failed, and their latencies.
   *
   * @param seconds the time the measured queries were sent in
   */
  record Load(int ok, int failed, double seconds, double p50Millis, double p99Millis) {

    double perSecond() {
      return this.ok / this.seconds;
    }

    @Override
    public String toString() {
      return String.format(
          "%.0f/s, P50 %.1f ms, P99 %.1f ms, %d failed",
          perSecond(), this.p50Millis, this.p99Millis, this.failed);
    }
  }

  /**
   * {@code threads} threads send point selects for the given time; the first {@code skip} is not
   * measured.
   */
  private static Load closedLoop(
      RoutingSubject subject, int threads, Duration time, Duration skip) {
    long start = System.nanoTime();
    long measureFrom = start + skip.toNanos();
    long end = start + time.toNanos();
    return run(subject, threads, Integer.MAX_VALUE, null, measureFrom, end);
  }

  /**
   * {@code threads} threads send {@code perThread} point selects each, each with the given
   * deadline, giving up when the time limit has passed.
   */
  private static Load fixedCount(
      RoutingSubject subject, int threads, int perThread, Duration deadline, Duration limit) {
    long start = System.nanoTime();
    return run(subject, threads, perThread, deadline, start, start + limit.toNanos());
  }

  private static Load run(
      RoutingSubject subject,
      int threads,
      int perThread,
      Duration deadline,
      long measureFrom,
      long end) {
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    List<long[]> latencies =
        Loops.onThreads(
            threads,
            (thread) -> {
              long[] mine = new long[1024];
              int count = 0;
              for (int i = 0; i < perThread && System.nanoTime() < end; i++) {
                long begin = System.nanoTime();
                boolean done = pointSelect(subject, deadline);
                long took = System.nanoTime() - begin;
                if (begin < measureFrom) {
                  continue;
                }
                (done ? ok : failed).incrementAndGet();
                if (done) {
                  if (count == mine.length) {
                    mine = Arrays.copyOf(mine, count * 2);
                  }
                  mine[count++] = took;
                }
              }
              return Arrays.copyOf(mine, count);
            });
    long[] all = latencies.stream().flatMapToLong(Arrays::stream).sorted().toArray();
    double seconds = (Math.min(System.nanoTime(), end) - measureFrom) / 1e9;
    return new Load(ok.get(), failed.get(), seconds, percentile(all, 0.50), percentile(all, 0.99));
  }

  private static boolean pointSelect(RoutingSubject subject, Duration deadline) {
    if (deadline == null) {
      return query(subject);
    }
    Context.CancellableContext context =
        Context.current().withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS, deadlines);
    try {
      return context.call(() -> query(subject));
    } catch (Exception ex) {
      return false;
    } finally {
      context.cancel(null);
    }
  }

  private static boolean query(RoutingSubject subject) {
    try (ResultSet rs = subject.client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      return rs.next();
    } catch (RuntimeException ex) {
      return false;
    }
  }

  private static double percentile(long[] sorted, double p) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int index = (int) Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1);
    return sorted[Math.max(0, index)] / 1e6;
  }
}
