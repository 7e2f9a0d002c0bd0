package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.TypeCode;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.grpc.Status;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The test server and queries the stream-end guard is checked on, and the reads the checks use. */
final class StreamEndGuardFixtures {

  private StreamEndGuardFixtures() {}

  static final String FAILING_QUERY = "SELECT fail";

  static final String THREE_ROWS = "SELECT id FROM Three";

  /** 1,000 rows of 32 KB each: 32 MB, more than any HTTP/2 flow-control window gRPC opens. */
  static final String WIDE_QUERY = "SELECT id, payload FROM Wide";

  static final String COUNT_QUERY = "SELECT COUNT(*) FROM Singers";

  static MockSpannerServer newServer(MockSpannerServer.Builder builder) throws Exception {
    MockSpannerServer server = builder.start();
    server
        .mock()
        .putStatementResult(
            StatementResult.exception(
                Statement.of(FAILING_QUERY), Status.INVALID_ARGUMENT.asRuntimeException()));
    server
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(THREE_ROWS), ResultSets.numbers(3)));
    server.mock().putStatementResult(StatementResult.query(Statement.of(WIDE_QUERY), wideRows()));
    server
        .mock()
        .putStatementResult(
            StatementResult.query(Statement.of(COUNT_QUERY), ResultSets.int64Row("", 3)));
    // existsById reads the key column of one key; the server answers reads by table and columns.
    server
        .mock()
        .putStatementResult(
            StatementResult.read(
                "Singers", KeySet.all(), List.of("SingerId"), ResultSets.int64Row("SingerId", 1)));
    return server;
  }

  static List<String> rows(DatabaseClient database, String sql, int max) {
    List<String> rows = new ArrayList<>();
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      while (rows.size() < max && rs.next()) {
        rows.add(rs.getCurrentRowAsStruct().toString());
      }
    }
    return rows;
  }

  static boolean readOneRow(DatabaseClient database, String sql) {
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      return rs.next();
    }
  }

  static int readAll(DatabaseClient database, String sql) {
    int rows = 0;
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      while (rs.next()) {
        rows++;
      }
    }
    return rows;
  }

  static int activeStreams(SpannerTuningState state) {
    return state.channelLoad().channels().stream()
        .mapToInt(ChannelLoad.ChannelStats::activeStreams)
        .sum();
  }

  /** Waits until none of the client's streams is open, a hedged read's losers included. */
  static void awaitNothingInFlight(SpannerTuningState state) {
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(() -> assertThat(activeStreams(state)).as("calls in flight").isZero());
  }

  private static com.google.spanner.v1.ResultSet wideRows() {
    String payload = "x".repeat(32 * 1024);
    com.google.spanner.v1.ResultSet.Builder result =
        com.google.spanner.v1.ResultSet.newBuilder()
            .setMetadata(ResultSets.metadata("id", TypeCode.INT64, "payload", TypeCode.STRING));
    for (int i = 0; i < 1000; i++) {
      result.addRows(
          ListValue.newBuilder()
              .addValues(Value.newBuilder().setStringValue(Integer.toString(i)))
              .addValues(Value.newBuilder().setStringValue(payload)));
    }
    return result.build();
  }

  /** Threads of gRPC or gax parked in the client's result queue: the callback a close must drop. */
  static List<String> blockedGrpcThreads() {
    List<String> blocked = new ArrayList<>();
    for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
      boolean inQueue =
          Arrays.stream(info.getStackTrace())
              .anyMatch(
                  (frame) ->
                      frame
                          .getClassName()
                          .startsWith("com.google.cloud.spanner.GrpcStreamIterator"));
      if (inQueue
          && (info.getThreadState() == Thread.State.WAITING
              || info.getThreadState() == Thread.State.TIMED_WAITING
              || info.getThreadState() == Thread.State.BLOCKED)) {
        blocked.add(info.getThreadName());
      }
    }
    return blocked;
  }
}
