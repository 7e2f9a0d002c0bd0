package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Arrival;
import io.github.spannertuning.testing.StockAndTuned;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A costly statement is not a slow connection. Against {@link MockSpannerServer}, whose report
 * ({@link MockSpannerServer#REPORT}) takes 100 ms longer than a point select on every connection,
 * 16 threads send single-use queries, one in ten the report, read to its end. After a second the
 * connection that carried the most calls answers everything 20 ms later; from that moment, learning
 * included, it takes at most 0.15 of its even share of the calls over the connections in use, on a
 * fixed pool and on the dynamic pool. Stock's figures, and both sides' point-read latencies, are
 * printed beside (a benchmark, {@code benchmarks/run.sh --workloads mixed}, measures those).
 *
 * <p>The fixed pool's check is tagged {@code default-line}: how a call's time is told from its
 * connection's is the starter's own on every line, and the suite runs it on 6.119; the dynamic
 * pool's is tagged {@code dynamic-pool}, run on 6.119 and 6.127.
 */
class CostlyStatementsIT {

  private static final String VERSION = ClientVersions.detected().spanner();

  private static final int THREADS = 16;

  private static final int REPORT_EVERY = 10;

  @Test
  @Tag("default-line")
  void onAFixedPoolTheSlowedConnectionTakesLittleBesideReports() throws Exception {
    Assumptions.assumeTrue(RoutingSubject.routes(), "routing is unsupported on " + VERSION);
    StockAndTuned<Slowed> runs =
        StockAndTuned.measure(
            (tuned) -> {
              try (RoutingSubject subject =
                  RoutingSubject.open(
                      RoutingSubject.results(MockSpannerServer.start()),
                      tuned,
                      RoutingSubject::expected)) {
                return slowed(subject);
              }
            });
    check(runs, "fixed pool of " + RoutingSubject.CHANNELS);
  }

  @Test
  @Tag("dynamic-pool")
  void onTheDynamicPoolTheSlowedConnectionTakesLittleBesideReports() throws Exception {
    StockAndTuned<Slowed> runs =
        DynamicPoolIT.onFreshClients(
            MockSpannerServer.builder(),
            SpannerOptions.createDefaultDynamicChannelPoolOptions(),
            CostlyStatementsIT::slowed);
    check(runs, "dynamic pool");
  }

  private static void check(StockAndTuned<Slowed> runs, String pool) {
    String figures =
        runs.print(
            "[costly statements %s, %s] %d threads, one query in %d a report 100 ms costlier,"
                + " the busiest connection +20 ms from the moment it slows",
            VERSION, pool, THREADS, REPORT_EVERY);
    assertThat(runs.tuned().load().failed()).as("tuned: failed queries: " + figures).isZero();
    assertThat(runs.tuned().share())
        .as("tuned: the slowed connection's share of its even share: " + figures)
        .isLessThanOrEqualTo(0.15);
  }

  private static Slowed slowed(RoutingSubject subject) {
    PointSelectLoads.mixedClosedLoop(subject, THREADS, REPORT_EVERY, Duration.ofSeconds(1));
    SocketAddress slow = subject.server.busiestConnection();
    subject.server.reset();
    subject.server.slowDown(slow, 20);
    PointSelectLoads.Mixed load =
        PointSelectLoads.mixedClosedLoop(subject, THREADS, REPORT_EVERY, Duration.ofSeconds(3));
    return Slowed.of(slow, subject.server.arrivals(), load);
  }

  /** The slowed connection's share of its even share, and the load's figures. */
  record Slowed(double share, int used, PointSelectLoads.Mixed load) {

    static Slowed of(SocketAddress slow, List<Arrival> arrivals, PointSelectLoads.Mixed load) {
      return new Slowed(
          DynamicPoolIT.shareOf(slow, arrivals), DynamicPoolIT.connectionsUsed(arrivals), load);
    }

    @Override
    public String toString() {
      return String.format("%.2f on %d connections, %s", this.share, this.used, this.load);
    }
  }
}
