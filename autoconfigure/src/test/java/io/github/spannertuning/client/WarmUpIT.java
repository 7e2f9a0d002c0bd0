package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.client.SpannerTuningState.WarmUp;
import io.github.spannertuning.testing.DynamicPoolLine;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.StockAndTuned;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Reads against a server whose connections cost time to set up, and which retires them, stock
 * client beside tuned, over real loopback TCP: every call on a connection waits until a set-up time
 * after that connection's first call ({@code MockSpannerServer.Builder#connectionSetUp}), and the
 * server retires connections by age with grpc-java's {@code maxConnectionAge}, as Google's
 * frontends do about hourly (seconds here). The server counts the calls that waited for a set-up;
 * that count, not a latency, is what the checks bound.
 *
 * <p>Simulated: the set-up (a wait on the server; TCP and TLS are loopback) and the backend. Real:
 * the client, grpc-gcp's pool, gRPC's GOAWAY and reconnects, Netty and TCP.
 */
class WarmUpIT {

  private static final int CHANNELS = 4;

  private static final String VERSION = ClientVersions.detected().spanner();

  /**
   * The aging checks' refresh: two thirds of the server's 3 s, as a user whose server retires
   * connections that often would set {@code spanner.tuning.warm-up.refresh-after}. The default
   * (learned, an hour until the server retires one) would let this server retire the client's first
   * connections together, all within the 0.6 s of its jitter; what it learns is checked on a test
   * clock ({@code ConnectionRefreshTest}).
   */
  private static final Duration REFRESH_AFTER = Duration.ofSeconds(2);

  /** The aging checks' connection set-up. */
  private static final Duration AGING_SET_UP = Duration.ofMillis(100);

  /**
   * A new instance: the client is built, asks for a database client, and the application reports
   * ready (tuned: once {@link SpannerTuningState#warmUp} returns; stock: at once). Then 32 threads
   * read 10 point selects each. Tuned, no read waits for a connection; it is warm within the
   * session's set-up and the priming call's (two set-ups, in parallel over the channels) plus a
   * margin for a cold JVM.
   */
  @Test
  void aWarmedClientsFirstReadsWaitForNoConnection() throws Exception {
    start(false);
  }

  /** As {@link #aWarmedClientsFirstReadsWaitForNoConnection}, on grpc-gcp's dynamic pool. */
  @Test
  @Tag("dynamic-pool")
  void onTheDynamicPoolAWarmedClientsFirstReadsWaitForNoConnection() throws Exception {
    start(true);
  }

  private static void start(boolean dynamicPool) throws Exception {
    Duration setUp = Duration.ofMillis(200);
    StockAndTuned<Start> start =
        StockAndTuned.measure(
            (tuned) -> {
              try (MockSpannerServer server =
                  MockSpannerServer.builder().connectionSetUp(setUp).start()) {
                SpannerOptions.Builder builder = options(server, dynamicPool);
                SpannerTuningState state = tuned ? SpannerTuning.defaults().applyTo(builder) : null;
                long built = System.nanoTime();
                try (Spanner spanner = builder.build().getService()) {
                  DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
                  WarmUp warmUp = tuned ? state.warmUp(Duration.ofSeconds(10)) : null;
                  long ready = System.nanoTime() - built;
                  server.reset();
                  AtomicLong wrong = new AtomicLong();
                  Loops.together(32, 10, (thread, i) -> read(client, wrong));
                  return new Start(
                      Duration.ofNanos(ready),
                      readsThatWaited(server),
                      wrong.get(),
                      warmUp,
                      server.connectionsSetUp());
                }
              }
            });
    String figures =
        start.print(
            "[warm-up %s, %s pool] set-up %d ms, %d channels, then 32 threads x 10 reads"
                .formatted(VERSION, poolName(dynamicPool), setUp.toMillis(), CHANNELS));

    assertThat(start.tuned().warmUp().warm()).as(figures).isTrue();
    assertThat(start.tuned().warmUp().warmChannels()).as(figures).isEqualTo(CHANNELS);
    assertThat(start.tuned().waited()).as("tuned: reads that waited: " + figures).isZero();
    assertThat(start.stock().waited()).as("stock: reads that waited: " + figures).isPositive();
    assertThat(start.tuned().wrongRows()).isZero();
    assertThat(start.stock().wrongRows()).isZero();
    assertThat(start.tuned().ready())
        .as("tuned: from the client's build to warm: " + figures)
        .isLessThanOrEqualTo(setUp.multipliedBy(2).plusSeconds(1));
  }

  /**
   * Connections retired every 3 s (grace 1 s), a set-up of 100 ms, 8 threads in a closed loop for
   * 15 s. Tuned ({@link #REFRESH_AFTER refresh after 2 s}), each connection is refreshed before the
   * server retires it, one channel at a time, and a retired or refreshed channel takes no read
   * until its new connection is up and primed: at most a tenth of stock's reads wait for a
   * connection, none fails, every row is right.
   *
   * <p>On a fixed pool, and where routing follows grpc-gcp's dynamic pool on this line ({@link
   * DynamicPoolLine#routes}: 6.119 and later), on the dynamic pool at the same time: four clients,
   * each on its own server. The bounds are on counted waits, not on latency, so the clients share
   * the machine as they would share it with two CPU burners.
   */
  @Test
  void retiredConnectionsMakeNoReadWait() throws Exception {
    CompletableFuture<StockAndTuned<Aging>> onDynamicPool =
        DynamicPoolLine.routes() ? Loops.onItsOwnThread(() -> aging(true)) : null;
    checkAging(aging(false), false);
    if (onDynamicPool != null) {
      checkAging(onDynamicPool.get(), true);
    }
  }

  /**
   * Stock and tuned at once, each on its own server, so that both meet the same machine: the bound
   * is on counted waits, not on latency.
   */
  private static StockAndTuned<Aging> aging(boolean dynamicPool) throws Exception {
    return atOnce(
        (tuned) -> {
          try (MockSpannerServer server =
              MockSpannerServer.builder()
                  .connectionSetUp(AGING_SET_UP)
                  .maxConnectionAge(Duration.ofSeconds(3), Duration.ofSeconds(1))
                  .start()) {
            SpannerOptions.Builder builder = options(server, dynamicPool);
            SpannerTuningState state =
                tuned
                    ? SpannerTuning.newBuilder()
                        .refreshAfter(REFRESH_AFTER)
                        .build()
                        .applyTo(builder)
                    : null;
            try (Spanner spanner = builder.build().getService()) {
              DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
              if (tuned) {
                state.warmUp(Duration.ofSeconds(10));
              } else {
                MockSpannerServer.pointSelects(client, CHANNELS);
              }
              server.reset();
              int before = server.connectionsSetUp();
              AtomicLong reads = new AtomicLong();
              AtomicLong failed = new AtomicLong();
              AtomicLong wrong = new AtomicLong();
              Loops.forTime(
                  8,
                  Duration.ofSeconds(15),
                  (thread, i) -> {
                    reads.incrementAndGet();
                    try {
                      read(client, wrong);
                    } catch (RuntimeException ex) {
                      failed.incrementAndGet();
                    }
                  });
              return new Aging(
                  reads.get(),
                  readsThatWaited(server),
                  failed.get(),
                  wrong.get(),
                  server.connectionsSetUp() - before,
                  tuned ? state.warmer().coldReads() : -1,
                  tuned ? state.warmer().refreshed() : -1,
                  tuned ? state.warmer().refresh().toString() : "none");
            }
          }
        });
  }

  private static void checkAging(StockAndTuned<Aging> aging, boolean dynamicPool) {
    String figures =
        aging.print(
            "[warm-up %s, %s pool] retired every 3 s, set-up %d ms, 8 threads 15 s, refresh 2 s"
                .formatted(VERSION, poolName(dynamicPool), AGING_SET_UP.toMillis()));

    assertThat(aging.stock().connectionsSetUp())
        .as("the server retired connections: " + figures)
        .isGreaterThanOrEqualTo(CHANNELS * 3);
    assertThat(aging.tuned().refreshed())
        .as("tuned: connections refreshed: " + figures)
        .isGreaterThanOrEqualTo(CHANNELS);
    assertThat(aging.tuned().failed()).as("tuned: failed reads: " + figures).isZero();
    assertThat(aging.tuned().wrongRows()).as("tuned: wrong rows: " + figures).isZero();
    assertThat(aging.stock().waited()).as("stock: reads that waited: " + figures).isPositive();
    assertThat(aging.tuned().waited() * 10)
        .as("tuned: reads that waited, at most a tenth of stock's: " + figures)
        .isLessThanOrEqualTo(aging.stock().waited());
  }

  /**
   * A fixed pool of {@value #CHANNELS} channels, or the dynamic pool on the client's defaults
   * (which start at 4 channels).
   */
  private static SpannerOptions.Builder options(MockSpannerServer server, boolean dynamicPool) {
    return dynamicPool ? server.dynamicPoolOptions(null) : server.clientOptions(CHANNELS);
  }

  private static String poolName(boolean dynamicPool) {
    return dynamicPool ? "dynamic" : "fixed";
  }

  /** The workload on a stock and on a tuned client at the same time. */
  private static <T> StockAndTuned<T> atOnce(StockAndTuned.Workload<T> workload) throws Exception {
    CompletableFuture<T> stock = Loops.onItsOwnThread(() -> workload.run(false));
    T tuned = workload.run(true);
    return new StockAndTuned<>(stock.get(), tuned);
  }

  private static void read(DatabaseClient client, AtomicLong wrong) {
    try (ResultSet rows = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      if (!rows.next() || rows.getLong(0) != 1 || !"Alice".equals(rows.getString(1))) {
        wrong.incrementAndGet();
      }
    }
  }

  /** The application's reads that waited for a connection's set-up. */
  private static long readsThatWaited(MockSpannerServer server) {
    return server.callsThatWaitedForSetUp().stream()
        .filter((call) -> call.method().equals("ExecuteStreamingSql"))
        .count();
  }

  record Start(Duration ready, long waited, long wrongRows, WarmUp warmUp, int connectionsSetUp) {}

  /**
   * @param coldReads the tuned client's reads that routing sent to a cold channel because no warm
   *     one had room, or {@code -1} for stock
   * @param refreshed the tuned client's connections refreshed before the server retired them
   * @param refresh the tuned client's refresh, with the age it learned
   */
  record Aging(
      long reads,
      long waited,
      long failed,
      long wrongRows,
      int connectionsSetUp,
      long coldReads,
      long refreshed,
      String refresh) {}
}
