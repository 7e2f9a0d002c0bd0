package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.MockSpannerServiceImpl.SimulatedExecutionTime;
import com.google.cloud.spanner.MockSpannerServiceImpl.StatementResult;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The stream-end guard against a real client, gRPC and TCP ({@link MockSpannerServer}): what a
 * point select that reads one row and closes costs with and without it, and that it never holds
 * back the cancel of a stream that has not finished.
 *
 * <p>Cancels are counted by an interceptor below grpc-gcp, on each {@link ClientCall}: a cancel is
 * <em>redundant</em> when the call's listener has already been told the call closed. Throwables
 * created are counted by JFR ({@code jdk.ExceptionStatistics}, and {@code jdk.JavaExceptionThrow},
 * which JFR emits from the {@code Throwable} constructor, so it counts exceptions that are created
 * and never thrown too).
 */
class StreamEndGuardTest {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final int WARM_UP = 100;

  private static final int QUERIES = 1000;

  /** Point selects that wait for the call's end before closing: every close is redundant. */
  private static final int SETTLED_QUERIES = 200;

  private static final String FAILING_QUERY = "SELECT fail";

  private static final String THREE_ROWS = "SELECT id FROM Three";

  /** 1,000 rows of 32 KB each: 32 MB, more than any HTTP/2 flow-control window gRPC opens. */
  private static final String WIDE_QUERY = "SELECT id, payload FROM Wide";

  private MockSpannerServer server;

  @BeforeEach
  void startServer() throws Exception {
    this.server = newServer();
  }

  private static MockSpannerServer newServer() throws Exception {
    MockSpannerServer server = MockSpannerServer.start();
    server
        .mock()
        .putStatementResult(
            StatementResult.exception(
                Statement.of(FAILING_QUERY), Status.INVALID_ARGUMENT.asRuntimeException()));
    server
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(THREE_ROWS), threeRows()));
    server
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(WIDE_QUERY), wideRows()));
    return server;
  }

  @AfterEach
  void stopServer() throws Exception {
    this.server.close();
  }

  @Test
  void pointSelectsThatCloseAfterOneRowSendNoRedundantCancelWithTheGuard() throws Exception {
    Measurement off;
    Measurement on;
    try (TestClient client = TestClient.open(this.server, false)) {
      off = measure(client);
    }
    try (TestClient client = TestClient.open(this.server, true)) {
      on = measure(client);
    }
    Loop offLoop = off.natural();
    Loop onLoop = on.natural();
    String version = ClientVersions.detected().spanner();
    System.out.printf(
        Locale.ROOT,
        "[guard %s] guard off: redundant cancels/query=%.2f cancels/query=%.2f"
            + " throwables/query=%.2f | guard on: redundant cancels/query=%.2f cancels/query=%.2f"
            + " throwables/query=%.2f skipped=%d%n",
        version,
        offLoop.perQuery(offLoop.redundant()),
        offLoop.perQuery(offLoop.cancels()),
        offLoop.perQuery(offLoop.throwables()),
        onLoop.perQuery(onLoop.redundant()),
        onLoop.perQuery(onLoop.cancels()),
        onLoop.perQuery(onLoop.throwables()),
        onLoop.skipped());
    System.out.printf(
        Locale.ROOT,
        "[guard %s] streams ended before close/query: off=%.2f on=%.2f | redundant cancels of"
            + " streams ended before close/query: off=%.2f on=%.2f; of streams that ended while"
            + " the cancel was on its way: off=%.2f on=%.2f | CancellationException/query:"
            + " off=%.2f on=%.2f | %d queries in %.0f ms (off) %.0f ms (on)%n",
        version,
        offLoop.perQuery(offLoop.endedBeforeClose()),
        onLoop.perQuery(onLoop.endedBeforeClose()),
        offLoop.perQuery(offLoop.redundantEndedBeforeClose()),
        onLoop.perQuery(onLoop.redundantEndedBeforeClose()),
        offLoop.perQuery(offLoop.redundant() - offLoop.redundantEndedBeforeClose()),
        onLoop.perQuery(onLoop.redundant() - onLoop.redundantEndedBeforeClose()),
        offLoop.perQuery(offLoop.cancellationExceptions()),
        onLoop.perQuery(onLoop.cancellationExceptions()),
        QUERIES,
        offLoop.millis(),
        onLoop.millis());
    Loop offSettled = off.settled();
    Loop onSettled = on.settled();
    System.out.printf(
        Locale.ROOT,
        "[guard %s] settled (%d point selects closed after their stream ended): guard off:"
            + " redundant cancels/query=%.2f throwables/query=%.2f | guard on: redundant"
            + " cancels/query=%.2f cancels/query=%.2f throwables/query=%.2f skipped=%d%n",
        version,
        SETTLED_QUERIES,
        offSettled.perQuery(offSettled.redundant()),
        offSettled.perQuery(offSettled.throwables()),
        onSettled.perQuery(onSettled.redundant()),
        onSettled.perQuery(onSettled.cancels()),
        onSettled.perQuery(onSettled.throwables()),
        onSettled.skipped());
    System.out.printf(
        Locale.ROOT,
        "[guard %s] exceptions created in %d point selects: off %s | on %s%n",
        version,
        QUERIES,
        offLoop.exceptionsByClass(),
        onLoop.exceptionsByClass());

    // Point selects as applications run them: next() once, close. Whether the stream's end has
    // arrived when close is called is a race, so only what does not depend on it is asserted.
    // Without the guard the client cancels every stream it closes before reading its end marker.
    assertThat(offLoop.cancels()).as("cancels reaching gRPC, guard off").isEqualTo(QUERIES);
    assertThat(offLoop.skipped()).as("cancels skipped, guard off").isZero();
    // With the guard, a stream whose end had arrived before close is never cancelled ...
    assertThat(onLoop.redundantEndedBeforeClose())
        .as("cancels reaching gRPC for streams that had ended before close, guard on")
        .isZero();
    assertThat(onLoop.skipped()).as("cancels skipped by the guard").isPositive();
    assertThat(onLoop.skipped())
        .as("skipped, guard on")
        .isGreaterThanOrEqualTo(onLoop.endedBeforeClose());
    // ... and every close either skips its cancel or sends it.
    assertThat(onLoop.cancels() + onLoop.skipped()).isEqualTo(QUERIES);
    assertThat(onLoop.cancels()).as("cancels, guard on vs off").isLessThan(offLoop.cancels());
    if (onLoop.skipped() >= QUERIES / 10) {
      assertThat(onLoop.throwables())
          .as("throwables, guard on vs off")
          .isLessThan(offLoop.throwables());
    }

    // The same point selects, closed once their stream has ended: here every cancel is redundant,
    // so the comparison does not depend on timing.
    assertThat(offSettled.redundant())
        .as("settled redundant cancels, guard off")
        .isEqualTo(SETTLED_QUERIES);
    assertThat(offSettled.skipped()).isZero();
    assertThat(offSettled.perQuery(offSettled.throwables()))
        .as("settled throwables per query, guard off")
        .isGreaterThanOrEqualTo(3.0);
    assertThat(onSettled.redundant()).as("settled redundant cancels, guard on").isZero();
    assertThat(onSettled.cancels()).as("settled cancels, guard on").isZero();
    assertThat(onSettled.skipped()).isEqualTo(SETTLED_QUERIES);
    assertThat(onSettled.perQuery(onSettled.throwables()))
        .as("settled throwables per query, guard on")
        .isLessThanOrEqualTo(1.5);
    assertThat(onSettled.cancels()).isLessThan(offSettled.cancels());
    assertThat(onSettled.throwables()).isLessThan(offSettled.throwables());
  }

  @Test
  void aStreamClosedBeforeItsEndIsStillCancelled() throws Exception {
    for (boolean guard : new boolean[] {true, false}) {
      // A server of its own for each client: a cancel the server hears late must not be counted
      // for the next client.
      try (MockSpannerServer server = newServer();
          TestClient client = TestClient.open(server, guard)) {
        String what = "guard " + (guard ? "on" : "off") + ": ";
        readAll(client.database(), THREE_ROWS); // session and channel; read to its end, no cancel
        long skipped = client.state().streamEndGuardSkippedCount();

        // A stream larger than any HTTP/2 flow-control window gRPC opens: the server cannot
        // finish writing it, so the cancel has to reach it.
        int serverCancels = server.cancels();
        client.counter().reset();
        readOneRow(client.database(), WIDE_QUERY);
        assertThat(client.counter().cancels()).as(what + "cancels reaching gRPC").isEqualTo(1);
        assertThat(client.counter().redundant()).as(what + "redundant cancels").isZero();
        assertThat(client.state().streamEndGuardSkippedCount())
            .as(what + "skipped")
            .isEqualTo(skipped);
        // The mock writes the whole stream before its call hears of the cancel.
        await(what + "server sees the cancel")
            .atMost(Duration.ofSeconds(10))
            .pollInterval(Duration.ofMillis(10))
            .until(() -> server.cancels() >= serverCancels + 1);
        Thread.sleep(100);
        assertThat(server.cancels()).as(what + "server cancels").isEqualTo(serverCancels + 1);

        // BIG_QUERY, 10,000 rows, one read: gRPC gives the client a stream's end only after
        // every message, and the client requested only a few, so the guard must let the cancel
        // through. Whether the server then sees it is a race this test does not assert: the
        // whole stream (about 300 KB) fits in the flow-control window, so the server may finish
        // writing it first.
        client.counter().reset();
        readOneRow(client.database(), MockSpannerServer.BIG_QUERY);
        assertThat(client.counter().cancels()).as(what + "cancels reaching gRPC").isEqualTo(1);
        assertThat(client.counter().redundant()).as(what + "redundant cancels").isZero();
        assertThat(client.state().streamEndGuardSkippedCount())
            .as(what + "skipped")
            .isEqualTo(skipped);
      }
    }
  }

  @Test
  void aStreamThatEndsInAnErrorCountsAsFinished() throws Exception {
    for (boolean guard : new boolean[] {true, false}) {
      try (TestClient client = TestClient.open(this.server, guard)) {
        readOneRow(client.database(), MockSpannerServer.POINT_SELECT);
        String what = "guard " + (guard ? "on" : "off") + ": ";

        // The error is the first thing the stream returns: iterating raises it, and close has
        // nothing left to cancel.
        client.counter().reset();
        long skipped = client.state().streamEndGuardSkippedCount();
        ResultSet failing =
            client.database().singleUse().executeQuery(Statement.of(FAILING_QUERY));
        assertThatThrownBy(failing::next)
            .isInstanceOf(SpannerException.class)
            .satisfies(
                (ex) ->
                    assertThat(((SpannerException) ex).getErrorCode())
                        .isEqualTo(ErrorCode.INVALID_ARGUMENT));
        failing.close();
        failing.close();
        assertThat(client.counter().cancels()).as(what + "cancels after an error").isZero();
        assertThat(client.state().streamEndGuardSkippedCount()).isEqualTo(skipped);

        // The error arrives after the first row, and the caller closes after reading that row:
        // the consumer has seen onError, so the guard treats the stream as finished.
        client.counter().reset();
        this.server
            .mock()
            .setExecuteStreamingSqlExecutionTime(
                SimulatedExecutionTime.ofStreamException(
                    Status.INVALID_ARGUMENT
                        .withDescription("fails after one row")
                        .asRuntimeException(),
                    1));
        try (ResultSet rs = client.database().singleUse().executeQuery(Statement.of(THREE_ROWS))) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getLong(0)).isZero();
          client.counter().awaitLastStreamClosed();
        } finally {
          this.server.mock().setExecuteStreamingSqlExecutionTime(SimulatedExecutionTime.none());
        }
        if (guard) {
          assertThat(client.counter().cancels()).as(what + "cancels after onError").isZero();
          assertThat(client.state().streamEndGuardSkippedCount()).isEqualTo(skipped + 1);
        } else {
          assertThat(client.counter().cancels()).as(what + "cancels after onError").isEqualTo(1);
          assertThat(client.counter().redundant()).as(what + "redundant").isEqualTo(1);
          assertThat(client.state().streamEndGuardSkippedCount()).isZero();
        }

        // The client is still usable; streams read to their end are never cancelled.
        client.counter().reset();
        assertThat(readAll(client.database(), MockSpannerServer.POINT_SELECT)).isEqualTo(1);
        assertThat(readAll(client.database(), THREE_ROWS)).isEqualTo(3);
        assertThat(client.counter().cancels())
            .as(what + "cancels of streams read to the end")
            .isZero();
      }
    }
  }

  private Measurement measure(TestClient client) throws Exception {
    for (int i = 0; i < WARM_UP; i++) {
      readOneRow(client.database(), MockSpannerServer.POINT_SELECT);
    }
    Loop natural = loop(client, QUERIES, false);
    Loop settled = loop(client, SETTLED_QUERIES, true);
    return new Measurement(natural, settled);
  }

  /**
   * Runs point selects (next() once, close) in a JFR window and counts, per query, whether the
   * stream had ended before close and whether a (redundant) cancel reached gRPC.
   */
  private Loop loop(TestClient client, int queries, boolean awaitEnd) throws Exception {
    DatabaseClient database = client.database();
    CancelCounter counter = client.counter();
    counter.reset();
    long skippedBefore = client.state().streamEndGuardSkippedCount();
    int endedBeforeClose = 0;
    int redundantEndedBeforeClose = 0;
    long elapsed;
    ExceptionCounts exceptions;
    try (Recording recording = new Recording()) {
      recording.enable("jdk.ExceptionStatistics").withPeriod(Duration.ofMillis(20));
      recording.enable("jdk.JavaExceptionThrow").withoutStackTrace();
      recording.start();
      Thread.sleep(150);
      long start = System.nanoTime();
      for (int i = 0; i < queries; i++) {
        ResultSet rs =
            database.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT));
        try {
          assertThat(rs.next()).isTrue();
          if (awaitEnd) {
            counter.awaitLastStreamClosed();
          }
        } finally {
          boolean ended = counter.lastStreamClosed();
          int redundant = counter.redundant();
          rs.close();
          if (ended) {
            endedBeforeClose++;
            redundantEndedBeforeClose += counter.redundant() - redundant;
          }
        }
      }
      elapsed = System.nanoTime() - start;
      Thread.sleep(150);
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
        elapsed / 1e6,
        counter.cancels(),
        counter.redundant(),
        endedBeforeClose,
        redundantEndedBeforeClose,
        client.state().streamEndGuardSkippedCount() - skippedBefore,
        exceptions.throwables(),
        exceptions.cancellationExceptions(),
        exceptions.byClass());
  }

  private static void readOneRow(DatabaseClient database, String sql) {
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      assertThat(rs.next()).isTrue();
    }
  }

  private static int readAll(DatabaseClient database, String sql) {
    int rows = 0;
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      while (rs.next()) {
        rows++;
      }
    }
    return rows;
  }

  private static com.google.spanner.v1.ResultSet threeRows() {
    com.google.spanner.v1.ResultSet.Builder result =
        com.google.spanner.v1.ResultSet.newBuilder()
            .setMetadata(
                ResultSetMetadata.newBuilder()
                    .setRowType(
                        StructType.newBuilder()
                            .addFields(
                                StructType.Field.newBuilder()
                                    .setName("id")
                                    .setType(Type.newBuilder().setCode(TypeCode.INT64)))));
    for (int i = 0; i < 3; i++) {
      result.addRows(
          ListValue.newBuilder().addValues(Value.newBuilder().setStringValue(Integer.toString(i))));
    }
    return result.build();
  }

  private static com.google.spanner.v1.ResultSet wideRows() {
    String payload = "x".repeat(32 * 1024);
    com.google.spanner.v1.ResultSet.Builder result =
        com.google.spanner.v1.ResultSet.newBuilder()
            .setMetadata(
                ResultSetMetadata.newBuilder()
                    .setRowType(
                        StructType.newBuilder()
                            .addFields(
                                StructType.Field.newBuilder()
                                    .setName("id")
                                    .setType(Type.newBuilder().setCode(TypeCode.INT64)))
                            .addFields(
                                StructType.Field.newBuilder()
                                    .setName("payload")
                                    .setType(Type.newBuilder().setCode(TypeCode.STRING)))));
    for (int i = 0; i < 1000; i++) {
      result.addRows(
          ListValue.newBuilder()
              .addValues(Value.newBuilder().setStringValue(Integer.toString(i)))
              .addValues(Value.newBuilder().setStringValue(payload)));
    }
    return result.build();
  }

  private record Measurement(Loop natural, Loop settled) {}

  /** What one loop of point selects did. */
  private record Loop(
      int queries,
      double millis,
      int cancels,
      int redundant,
      int endedBeforeClose,
      int redundantEndedBeforeClose,
      long skipped,
      long throwables,
      long cancellationExceptions,
      Map<String, Long> exceptionsByClass) {

    double perQuery(long count) {
      return (double) count / this.queries;
    }
  }

  /** Throwables created while a recording ran, from JFR. */
  private record ExceptionCounts(
      long throwables, long cancellationExceptions, Map<String, Long> byClass) {

    static ExceptionCounts read(Path file) throws Exception {
      List<RecordedEvent> events = RecordingFile.readAllEvents(file);
      long first = Long.MAX_VALUE;
      long last = Long.MIN_VALUE;
      int statistics = 0;
      Map<String, Long> byClass = new TreeMap<>();
      for (RecordedEvent event : events) {
        String type = event.getEventType().getName();
        if (type.equals("jdk.ExceptionStatistics")) {
          long throwables = event.getLong("throwables");
          first = Math.min(first, throwables);
          last = Math.max(last, throwables);
          statistics++;
        } else if (type.equals("jdk.JavaExceptionThrow")) {
          RecordedClass thrown = event.getClass("thrownClass");
          String name = (thrown != null) ? thrown.getName() : "?";
          byClass.merge(name.substring(name.lastIndexOf('.') + 1), 1L, Long::sum);
        }
      }
      assertThat(statistics)
          .as("jdk.ExceptionStatistics events in the window")
          .isGreaterThanOrEqualTo(2);
      return new ExceptionCounts(
          last - first, byClass.getOrDefault("CancellationException", 0L), byClass);
    }
  }

  /** A client of the mock server with the guard on or off, and a cancel counter below grpc-gcp. */
  private record TestClient(
      Spanner spanner, DatabaseClient database, SpannerTuningState state, CancelCounter counter)
      implements AutoCloseable {

    static TestClient open(MockSpannerServer server, boolean guard) {
      CancelCounter counter = new CancelCounter();
      SpannerOptions.Builder builder = server.clientOptions(8);
      builder.setInterceptorProvider(SpannerInterceptorProvider.createDefault().with(counter));
      SpannerTuningState state =
          SpannerTuning.newBuilder().streamEndGuard(guard).build().applyTo(builder);
      assertThat(state.isActive(Feature.STREAM_END_GUARD)).isEqualTo(guard);
      Spanner spanner = builder.build().getService();
      return new TestClient(spanner, spanner.getDatabaseClient(DATABASE), state, counter);
    }

    @Override
    public void close() {
      this.spanner.close();
    }
  }

  /**
   * Counts {@link ClientCall#cancel} calls reaching gRPC, and those made after the call's listener
   * had been told the call closed.
   */
  private static final class CancelCounter implements ClientInterceptor {

    private final AtomicInteger cancels = new AtomicInteger();

    private final AtomicInteger redundant = new AtomicInteger();

    private volatile CountingCall<?, ?> lastStream;

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
        MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
      CountingCall<ReqT, RespT> call = new CountingCall<>(next.newCall(method, callOptions));
      if (method.getBareMethodName().equals("ExecuteStreamingSql")) {
        this.lastStream = call;
      }
      return call;
    }

    int cancels() {
      return this.cancels.get();
    }

    int redundant() {
      return this.redundant.get();
    }

    void reset() {
      this.cancels.set(0);
      this.redundant.set(0);
    }

    /** Whether the listener of the last streaming query started has been told it closed. */
    boolean lastStreamClosed() {
      CountingCall<?, ?> call = this.lastStream;
      return call != null && call.closed;
    }

    /** Waits until the last streaming query started has been closed for its listener. */
    void awaitLastStreamClosed() throws InterruptedException {
      CountingCall<?, ?> call = this.lastStream;
      assertThat(call).isNotNull();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!call.closed) {
        assertThat(System.nanoTime()).as("stream closed in time").isLessThan(deadline);
        Thread.sleep(0, 100_000);
      }
    }

    private final class CountingCall<ReqT, RespT> extends SimpleForwardingClientCall<ReqT, RespT> {

      private volatile boolean closed;

      CountingCall(ClientCall<ReqT, RespT> delegate) {
        super(delegate);
      }

      @Override
      public void start(Listener<RespT> responseListener, Metadata headers) {
        super.start(
            new SimpleForwardingClientCallListener<>(responseListener) {
              @Override
              public void onClose(Status status, Metadata trailers) {
                super.onClose(status, trailers);
                CountingCall.this.closed = true;
              }
            },
            headers);
      }

      @Override
      public void cancel(String message, Throwable cause) {
        cancels.incrementAndGet();
        if (this.closed) {
          redundant.incrementAndGet();
        }
        super.cancel(message, cause);
      }
    }
  }
}
