package io.github.spannertuning.client;

import static io.github.spannertuning.client.StreamEndGuardFixtures.activeStreams;
import static io.github.spannertuning.client.StreamEndGuardFixtures.blockedGrpcThreads;
import static io.github.spannertuning.client.StreamEndGuardFixtures.newServer;
import static io.github.spannertuning.client.StreamEndGuardFixtures.readAll;
import static io.github.spannertuning.client.StreamEndGuardFixtures.readOneRow;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Key;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.data.spanner.core.SpannerTemplate;
import io.github.spannertuning.client.EmulatorIntegrationIT.SingerEntity;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import org.junit.jupiter.api.Test;

/**
 * The stream-end guard against a real client, gRPC, Netty and TCP, on {@link MockSpannerServer} as
 * it behaves by default: like Spanner, it marks a stream's final message {@code last} and sends the
 * trailers 1 ms later, and each query takes 2 to 5 ms. RST_STREAM and GOAWAY frames are counted on
 * the wire by the server's frame-counting proxy; cancels reaching gRPC by an interceptor below
 * grpc-gcp; throwables created by JFR ({@code jdk.ExceptionStatistics}). Guard-off figures are
 * printed beside guard-on ones (grep the output for {@code [guard}).
 */
class StreamEndGuardIT {

  private static final int WARM_UP = 100;

  /**
   * Queries per shape where throwables are counted per query: connection set-up and the other
   * client's close create a few dozen whatever the guard does, and these must not weigh on the
   * ratio (with 250, 6.125 counted 0.61 per query, most of them closed-channel exceptions).
   */
  private static final int QUERIES = 1000;

  /**
   * Threads that run each shape's queries: calls in flight at once, as in a service, in less wall
   * time. What is counted is per call, so the figures do not depend on it.
   */
  private static final int THREADS = 4;

  /** The shapes of a closed stream the issue measures. */
  enum Shape {
    NEXT_ONCE("(a) next() once, close"),
    EXISTS_BY_ID("(c) SpannerTemplate.existsById"),
    READ_TO_END("read to the end");

    private final String label;

    Shape(String label) {
      this.label = label;
    }
  }

  @Test
  void streamsClosedAtTheirLastMessageSendNoResetWithTheGuard() throws Exception {
    Map<Shape, Loop> off;
    Map<Shape, Loop> on;
    try (MockSpannerServer server = newServer(MockSpannerServer.builder().countFrames())) {
      try (GuardedTestClient client = GuardedTestClient.open(server, false)) {
        off = measureShapes(server, client);
      }
      try (GuardedTestClient client = GuardedTestClient.open(server, true)) {
        on = measureShapes(server, client);
      }
    }
    Map<Shape, String> figures = new EnumMap<>(Shape.class);
    for (Shape shape : Shape.values()) {
      Loop a = off.get(shape);
      Loop b = on.get(shape);
      figures.put(
          shape,
          String.format(
              Locale.ROOT,
              "%d queries, last 1 ms before trailers: RST_STREAM frames/query off=%.2f on=%.2f"
                  + " | cancels reaching gRPC/query off=%.2f on=%.2f | throwables/query"
                  + " off=%.2f on=%.2f | guard on: skipped=%d drained=%d drain timeouts=%d |"
                  + " exceptions off %s on %s",
              QUERIES,
              a.perQuery(a.rstFrames()),
              b.perQuery(b.rstFrames()),
              a.perQuery(a.cancels()),
              b.perQuery(b.cancels()),
              a.perQuery(a.throwables()),
              b.perQuery(b.throwables()),
              b.skipped(),
              b.drained(),
              b.drainTimeouts(),
              a.exceptionsByClass(),
              b.exceptionsByClass()));
    }

    for (Shape shape : Shape.values()) {
      Loop a = off.get(shape);
      Loop b = on.get(shape);
      String what = shape.label + " (" + figures.get(shape) + "): ";
      // Every stream's final message carried last, and reached the client before the close:
      // each of these closes is of a stream the server has finished.
      assertThat(a.rows()).as(what + "rows, guard off").isEqualTo(QUERIES);
      assertThat(b.rows()).as(what + "rows, guard on").isEqualTo(QUERIES);
      assertThat(a.lastReceived())
          .as(what + "streams whose last reached the client, off")
          .isEqualTo(QUERIES);
      assertThat(b.lastReceived())
          .as(what + "streams whose last reached the client, on")
          .isEqualTo(QUERIES);
      assertThat(b.rstFrames()).as(what + "RST_STREAM frames on the wire, guard on").isZero();
      assertThat(b.cancels()).as(what + "cancels reaching gRPC, guard on").isZero();
      assertThat(b.drainTimeouts()).as(what + "drain timeouts").isZero();
      assertThat(b.perQuery(b.throwables()))
          .as(what + "throwables created per query, guard on")
          .isLessThanOrEqualTo(0.5);
      assertThat(a.skipped()).as(what + "skipped, guard off").isZero();
    }
    for (Shape shape : List.of(Shape.NEXT_ONCE, Shape.EXISTS_BY_ID)) {
      Loop a = off.get(shape);
      Loop b = on.get(shape);
      if (GuardLine.clientSkipsCancelAtLast()) {
        // 6.125+: the client itself sends no cancel once it took the last message; the guard has
        // none to skip and watches the streams drain.
        assertThat(a.cancels()).as(shape.label + ": cancels, guard off").isZero();
        assertThat(a.rstFrames()).as(shape.label + ": RST_STREAM frames, guard off").isZero();
        assertThat(b.skipped()).as(shape.label + ": skipped, guard on").isZero();
        assertThat(b.drained()).as(shape.label + ": drained").isPositive();
      } else {
        // Without the guard the client cancels every stream it closes on its last row.
        assertThat(a.cancels()).as(shape.label + ": cancels, guard off").isEqualTo(QUERIES);
        assertThat(a.rstFrames()).as(shape.label + ": RST_STREAM frames, guard off").isPositive();
        assertThat(b.skipped()).as(shape.label + ": skipped, guard on").isEqualTo(QUERIES);
        assertThat(b.drained()).as(shape.label + ": drained").isLessThanOrEqualTo(b.skipped());
      }
    }
    assertThat(off.get(Shape.READ_TO_END).cancels()).isZero();
    assertThat(on.get(Shape.READ_TO_END).skipped()).isZero();
  }

  @Test
  void aResetLimitedServerSendsNoGoAwayToTheGuardedClient() throws Exception {
    Burst stock = resetLimitedBurst(false);
    Burst tuned = resetLimitedBurst(true);
    String version = ClientVersions.detected().spanner();
    String figures =
        String.format(
            Locale.ROOT,
            "[guard %s] reset-limited server (10 RST_STREAM / 10 s per connection), 16 threads, 3 s"
                + " of (a), trailers 50 ms late: guard off: %d queries, %d failed %s, GOAWAYs %s,"
                + " RST_STREAM frames %d (of open streams %d) | guard on: %d queries, %d failed %s,"
                + " GOAWAYs %s, RST_STREAM frames %d (of open streams %d), drain timeouts %d",
            version,
            stock.queries(),
            stock.failed(),
            stock.failures(),
            stock.goAways(),
            stock.rstFrames(),
            stock.serverCancels(),
            tuned.queries(),
            tuned.failed(),
            tuned.failures(),
            tuned.goAways(),
            tuned.rstFrames(),
            tuned.serverCancels(),
            tuned.drainTimeouts());
    // The server is what Spanner's frontends are: without the guard, the resets of point selects
    // closed on their last row reach its limit; from 6.125 the client sends none itself.
    if (GuardLine.clientSkipsCancelAtLast()) {
      assertThat(stock.goAways())
          .as("GOAWAYs sent to the stock client, which sends no reset itself: " + figures)
          .isEmpty();
      assertThat(stock.failed()).as("failed queries, stock: " + figures).isZero();
    } else {
      assertThat(stock.goAways())
          .as(
              "GOAWAYs sent to the stock client (its resets of streams still open on the server:"
                  + " %d; the limit counts only those): %s",
              stock.serverCancels(), figures)
          .isNotEmpty();
    }
    assertThat(tuned.goAways()).as("GOAWAYs sent to the guarded client: " + figures).isEmpty();
    assertThat(tuned.failed()).as("failed queries, guard on: " + figures).isZero();
    assertThat(tuned.queries()).isPositive();
  }

  @Test
  void trailersThatDoNotComeWithinTheDrainTimeoutAreCancelledThen() throws Exception {
    // Long enough that no drain times out while the 8 streams are still being opened and closed
    // on a busy machine: the cancels counted right after the closes are then cancels at close.
    Duration drainTimeout = Duration.ofSeconds(2);
    Duration trailersDelay = Duration.ofSeconds(8);
    int streams = 8;
    try (MockSpannerServer server = newServer(MockSpannerServer.builder().countFrames());
        GuardedTestClient client = GuardedTestClient.open(server, true, drainTimeout)) {
      SpannerTuningState state = client.state();
      // Sessions and channels first: the measured streams are the only ones then.
      readAll(client.database(), MockSpannerServer.POINT_SELECT);
      await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams(state) == 0);
      server.setTrailersDelay(trailersDelay);
      int cancelsBefore = server.cancels();
      int rstBefore = server.rstStreams();
      // Where the guard is native, the stream read to the end above drained, counted as such.
      long drainedBefore = state.streamEndGuardDrainedCount();
      client.counter().reset();

      long closedAt = System.nanoTime();
      for (int i = 0; i < streams; i++) {
        readOneRow(client.database(), MockSpannerServer.POINT_SELECT);
      }
      long closesTook = System.nanoTime() - closedAt;
      assertThat(closesTook)
          .as("time to open and close the streams")
          .isLessThan(drainTimeout.toNanos());
      assertThat(client.counter().lastReceived()).isEqualTo(streams);
      assertThat(client.counter().cancels()).as("cancels at close").isZero();
      assertThat(activeStreams(state)).as("streams draining").isEqualTo(streams);

      await("drain timeouts")
          .atMost(trailersDelay.minusMillis(500))
          .until(() -> state.streamEndGuardDrainTimeoutCount() == streams);
      long timedOutAfter = System.nanoTime() - closedAt;
      assertThat(timedOutAfter)
          .as("time from the first close to the last drain timeout")
          .isGreaterThanOrEqualTo(drainTimeout.toNanos())
          .isLessThan(trailersDelay.toNanos());
      await("active streams back to 0")
          .atMost(Duration.ofSeconds(2))
          .until(() -> activeStreams(state) == 0);
      await("the server sees the cancels")
          .atMost(Duration.ofSeconds(2))
          .until(() -> server.cancels() - cancelsBefore == streams);
      assertThat(client.counter().cancels()).as("cancels reaching gRPC").isEqualTo(streams);
      assertThat(server.rstStreams() - rstBefore).as("RST_STREAM frames").isEqualTo(streams);
      assertThat(state.streamEndGuardDrainedCount() - drainedBefore).isZero();
      assertThat(blockedGrpcThreads()).as("gRPC threads blocked in the client").isEmpty();
    }
  }

  @Test
  void withoutLastNoCallThatHadClosedIsCancelled() throws Exception {
    // The bare mock (and the emulator): no last, trailers with the final message. The guard then
    // knows a stream is over from its gRPC call's close, before gax tells the consumer.
    Loop off;
    Loop on;
    try (MockSpannerServer server = newServer(MockSpannerServer.builder().instant())) {
      try (GuardedTestClient client = GuardedTestClient.open(server, false)) {
        off = pointSelectsWithoutLast(client);
      }
      try (GuardedTestClient client = GuardedTestClient.open(server, true)) {
        on = pointSelectsWithoutLast(client);
      }
    }
    String figures =
        String.format(
            Locale.ROOT,
            "[guard %s] no last, trailers at once, %d point selects from %d threads: calls closed"
                + " before their close began/query off=%.2f on=%.2f | cancels of those/query"
                + " off=%.2f on=%.2f | cancels that reached a closed call off=%d on=%d |"
                + " cancels reaching gRPC/query off=%.2f on=%.2f | throwables/query off=%.2f"
                + " on=%.2f",
            ClientVersions.detected().spanner(),
            QUERIES,
            THREADS,
            off.perQuery(off.endedBeforeClose()),
            on.perQuery(on.endedBeforeClose()),
            off.perQuery(off.cancelsOfEnded()),
            on.perQuery(on.cancelsOfEnded()),
            off.cancelsAfterClose(),
            on.cancelsAfterClose(),
            off.perQuery(off.cancels()),
            on.perQuery(on.cancels()),
            off.perQuery(off.throwables()),
            on.perQuery(on.throwables()));
    System.out.println(figures);
    assertThat(off.lastReceived()).isZero();
    assertThat(off.cancels()).as("cancels, guard off: " + figures).isEqualTo(QUERIES);
    // Below grpc-gcp, on the thread that starts the stream, every stream's call carries the key.
    assertThat(off.guardedStarts()).isZero();
    assertThat(on.guardedStarts())
        .as("calls created in their guarded stream's context: " + figures)
        .isEqualTo(QUERIES);
    assertThat(on.cancelsOfEnded())
        .as("cancels of calls whose onClose was seen before the close began, guard on: " + figures)
        .isZero();
    // A close that began while its call was open cancels it; should the trailers come while the
    // cancel is on its way down through gax, it stops above the application's interceptors. Only
    // a cancel in the few instructions between this counter's close and the guard's gets by.
    assertThat(on.cancelsAfterClose())
        .as("cancels that reached a call this interceptor had seen close, guard on: " + figures)
        .isLessThanOrEqualTo(QUERIES / 100);
    assertThat(on.cancels() + on.skipped()).isEqualTo(QUERIES);
    assertThat(on.skipped()).isGreaterThanOrEqualTo(on.endedBeforeClose());
  }

  private Map<Shape, Loop> measureShapes(MockSpannerServer server, GuardedTestClient client)
      throws Exception {
    SpannerTemplate template = SpannerTemplates.of(client.database());
    for (int i = 0; i < WARM_UP; i++) {
      for (Shape shape : Shape.values()) {
        run(shape, client.database(), template);
      }
    }
    Map<Shape, Loop> loops = new EnumMap<>(Shape.class);
    for (Shape shape : Shape.values()) {
      loops.put(
          shape,
          loop(server, client, QUERIES, THREADS, () -> run(shape, client.database(), template)));
    }
    return loops;
  }

  private static boolean run(Shape shape, DatabaseClient database, SpannerTemplate template) {
    return switch (shape) {
      case NEXT_ONCE -> readOneRow(database, MockSpannerServer.POINT_SELECT);
      case EXISTS_BY_ID -> template.existsById(SingerEntity.class, Key.of(1L));
      case READ_TO_END -> readAll(database, MockSpannerServer.POINT_SELECT) == 1;
    };
  }

  /** One query of a loop; returns whether it found its row. */
  @FunctionalInterface
  private interface Query {
    boolean run() throws Exception;
  }

  /**
   * Runs queries in a JFR window, then waits until every call has closed on the client (after which
   * the client writes no frame for them) and no RST_STREAM frame is still on its way through the
   * proxy. Waiting longer can only count more frames, never fewer.
   */
  private Loop loop(
      MockSpannerServer server, GuardedTestClient client, int queries, int threads, Query query)
      throws Exception {
    CancelCounter counter = client.counter();
    SpannerTuningState state = client.state();
    await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams(state) == 0);
    counter.reset();
    long skipped = state.streamEndGuardSkippedCount();
    long drained = state.streamEndGuardDrainedCount();
    long timeouts = state.streamEndGuardDrainTimeoutCount();
    int rst = (server != null) ? server.rstStreams() : 0;
    int rows;
    ExceptionCounts exceptions;
    try (Recording recording = new Recording()) {
      recording.enable("jdk.ExceptionStatistics").withPeriod(Duration.ofMillis(20));
      recording.enable("jdk.JavaExceptionThrow").withoutStackTrace();
      recording.start();
      awaitStatisticsEvent();
      rows = run(query, queries, threads);
      await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams(state) == 0);
      if (server != null) {
        awaitQuiet(server::rstStreams);
      }
      awaitStatisticsEvent();
      recording.stop();
      Path file = Files.createTempFile("stream-end-guard", ".jfr");
      try {
        recording.dump(file);
        exceptions = ExceptionCounts.read(file);
      } finally {
        Files.deleteIfExists(file);
      }
    }
    return new Loop(
        queries,
        rows,
        counter.cancels(),
        counter.lastReceived(),
        counter.endedBeforeClose(),
        counter.cancelsOfEnded(),
        counter.cancelsAfterClose(),
        counter.guardedStarts(),
        (server != null) ? server.rstStreams() - rst : 0,
        state.streamEndGuardSkippedCount() - skipped,
        state.streamEndGuardDrainedCount() - drained,
        state.streamEndGuardDrainTimeoutCount() - timeouts,
        exceptions.throwables(),
        exceptions.byClass());
  }

  /**
   * Runs {@code queries} queries from {@code threads} threads; returns how many found their row.
   */
  private static int run(Query query, int queries, int threads) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> parts = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int share = queries / threads + ((t < queries % threads) ? 1 : 0);
        parts.add(
            pool.submit(
                () -> {
                  int found = 0;
                  for (int i = 0; i < share; i++) {
                    if (query.run()) {
                      found++;
                    }
                  }
                  return found;
                }));
      }
      int rows = 0;
      for (Future<Integer> part : parts) {
        rows += part.get(2, TimeUnit.MINUTES);
      }
      return rows;
    } finally {
      pool.shutdownNow();
    }
  }

  /** Point selects that record, at each close, whether the call had closed for its listener. */
  private Loop pointSelectsWithoutLast(GuardedTestClient client) throws Exception {
    for (int i = 0; i < WARM_UP; i++) {
      readOneRow(client.database(), MockSpannerServer.POINT_SELECT);
    }
    return loop(
        null,
        client,
        QUERIES,
        THREADS,
        () -> {
          try (ResultSet rs =
              client
                  .database()
                  .singleUse()
                  .executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
            boolean found = rs.next();
            client.counter().closing();
            return found;
          }
        });
  }

  private Burst resetLimitedBurst(boolean guard) throws Exception {
    int threads = 16;
    long runNanos = TimeUnit.SECONDS.toNanos(3);
    // The limit counts only resets of streams the server still holds. With trailers 1 ms late
    // only a few percent of a warm client's closes beat them, and a cold one's almost none, so
    // whether stock reaches the limit in 3 s depends on what ran before. With trailers 50 ms late
    // (a frontend slower to send them) most do, even where the test's client and server share a
    // saturated CPU and a close comes tens of milliseconds after its last row (at 20 ms late, only
    // 21 of 933 did there); a limit of 10 per connection in 10 s is then one the stock client's
    // closes reach in 3 s.
    try (MockSpannerServer server =
            newServer(
                MockSpannerServer.builder()
                    .countFrames()
                    .trailersDelay(Duration.ofMillis(50))
                    .resetLimit(10, 10));
        GuardedTestClient client = GuardedTestClient.open(server, guard)) {
      readAll(client.database(), MockSpannerServer.POINT_SELECT);
      AtomicInteger queries = new AtomicInteger();
      Map<String, Integer> failures = new ConcurrentHashMap<>();
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        long end = System.nanoTime() + runNanos;
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          futures.add(
              pool.submit(
                  () -> {
                    while (System.nanoTime() - end < 0) {
                      try {
                        readOneRow(client.database(), MockSpannerServer.POINT_SELECT);
                      } catch (SpannerException ex) {
                        failures.merge(ex.getErrorCode().name(), 1, Integer::sum);
                      }
                      queries.incrementAndGet();
                    }
                  }));
        }
        for (Future<?> future : futures) {
          future.get();
        }
      } finally {
        pool.shutdownNow();
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams(client.state()) == 0);
      awaitQuiet(server::goAways);
      return new Burst(
          queries.get(),
          failures.values().stream().mapToInt(Integer::intValue).sum(),
          new TreeMap<>(failures),
          new TreeMap<>(server.goAwaysByReason()),
          server.rstStreams(),
          server.cancels(),
          client.state().streamEndGuardDrainTimeoutCount());
    }
  }

  /** Waits until a count has stopped changing: frames still crossing the proxy are counted. */
  private static void awaitQuiet(java.util.function.IntSupplier count) {
    AtomicInteger previous = new AtomicInteger(count.getAsInt());
    await()
        .pollInterval(Duration.ofMillis(10))
        .during(Duration.ofMillis(50))
        .atMost(Duration.ofSeconds(5))
        .until(() -> previous.getAndSet(count.getAsInt()) == count.getAsInt());
  }

  /** JFR emits jdk.ExceptionStatistics periodically; a window needs one at each end. */
  private static void awaitStatisticsEvent() throws InterruptedException {
    Thread.sleep(60);
  }

  /** What one loop of queries did. */
  private record Loop(
      int queries,
      int rows,
      int cancels,
      int lastReceived,
      int endedBeforeClose,
      int cancelsOfEnded,
      int cancelsAfterClose,
      int guardedStarts,
      int rstFrames,
      long skipped,
      long drained,
      long drainTimeouts,
      long throwables,
      Map<String, Long> exceptionsByClass) {

    double perQuery(long count) {
      return (double) count / this.queries;
    }
  }

  /** What a burst against the reset-limited server did. */
  private record Burst(
      int queries,
      int failed,
      Map<String, Integer> failures,
      Map<String, Integer> goAways,
      int rstFrames,
      int serverCancels,
      long drainTimeouts) {}
}
