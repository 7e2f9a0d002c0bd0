package io.github.spannertuning.client;

import static io.github.spannertuning.client.StreamEndGuardFixtures.FAILING_QUERY;
import static io.github.spannertuning.client.StreamEndGuardFixtures.THREE_ROWS;
import static io.github.spannertuning.client.StreamEndGuardFixtures.WIDE_QUERY;
import static io.github.spannertuning.client.StreamEndGuardFixtures.activeStreams;
import static io.github.spannertuning.client.StreamEndGuardFixtures.newServer;
import static io.github.spannertuning.client.StreamEndGuardFixtures.readAll;
import static io.github.spannertuning.client.StreamEndGuardFixtures.readOneRow;
import static io.github.spannertuning.client.StreamEndGuardFixtures.rows;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.Key;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.data.spanner.core.SpannerTemplate;
import io.github.spannertuning.client.EmulatorIntegrationIT.SingerEntity;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.SimulatedExecutionTime;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;

/**
 * The stream-end guard against a real client, gRPC, Netty and TCP, on {@link MockSpannerServer}:
 * cancels that must still reach the server, errors, deadlines, resumed streams and results with the
 * guard on and off. The measuring checks are in {@link StreamEndGuardIT}.
 */
class StreamEndGuardTest {

  @Test
  void aStreamClosedBeforeItsEndIsStillCancelled() throws Exception {
    for (boolean guard : new boolean[] {true, false}) {
      // A server of its own for each client: a cancel the server hears late must not be counted
      // for the next client.
      try (MockSpannerServer server = newServer(MockSpannerServer.builder().countFrames());
          GuardedTestClient client = GuardedTestClient.open(server, guard)) {
        String what = "guard " + (guard ? "on" : "off") + ": ";
        readAll(client.database(), THREE_ROWS); // session and channel; read to its end
        long skipped = client.state().streamEndGuardSkippedCount();

        // A stream larger than any HTTP/2 flow-control window gRPC opens: the server cannot
        // finish writing it, so the cancel has to reach it.
        int serverCancels = server.cancels();
        int rstFrames = server.rstStreams();
        client.counter().reset();
        readOneRow(client.database(), WIDE_QUERY);
        assertThat(client.counter().cancels()).as(what + "cancels reaching gRPC").isEqualTo(1);
        assertThat(client.state().streamEndGuardSkippedCount())
            .as(what + "skipped")
            .isEqualTo(skipped);
        await(what + "server sees the cancel")
            .atMost(Duration.ofSeconds(10))
            .until(() -> server.cancels() >= serverCancels + 1);
        assertThat(server.cancels()).as(what + "server cancels").isEqualTo(serverCancels + 1);
        // Netty also answers DATA frames that arrive for the reset stream with RST_STREAM
        // (STREAM_CLOSED), so there may be more than one frame.
        assertThat(server.rstStreams() - rstFrames).as(what + "RST_STREAM frames").isPositive();

        // BIG_QUERY, 10,000 rows, one read: the client requested only a few messages, so its
        // last has not arrived and the guard must let the cancel through.
        client.counter().reset();
        readOneRow(client.database(), MockSpannerServer.BIG_QUERY);
        assertThat(client.counter().cancels()).as(what + "cancels reaching gRPC").isEqualTo(1);
        assertThat(client.state().streamEndGuardSkippedCount())
            .as(what + "skipped")
            .isEqualTo(skipped);
      }
    }
  }

  @Test
  void aDeadlineStillFailsTheCallWithDeadlineExceeded() throws Exception {
    ScheduledExecutorService deadlines = Executors.newSingleThreadScheduledExecutor();
    try (MockSpannerServer server = newServer(MockSpannerServer.builder())) {
      for (boolean guard : new boolean[] {true, false}) {
        try (GuardedTestClient client = GuardedTestClient.open(server, guard)) {
          readAll(client.database(), MockSpannerServer.POINT_SELECT);
          server
              .mock()
              .setExecuteStreamingSqlExecutionTime(
                  SimulatedExecutionTime.ofMinimumAndRandomTime(2_000, 0));
          try {
            SpannerErrors.assertDeadlineExceeded(
                "guard " + guard,
                Duration.ofMillis(200),
                deadlines,
                () -> readAll(client.database(), THREE_ROWS));
          } finally {
            server.mock().setExecuteStreamingSqlExecutionTime(SimulatedExecutionTime.none());
          }
        }
      }
    } finally {
      deadlines.shutdownNow();
    }
  }

  @Test
  void aStreamResumedAfterUnavailableDeliversTheSameRowsAsWithoutTheGuard() throws Exception {
    Map<Boolean, List<Long>> ids = new TreeMap<>();
    List<String> figures = new ArrayList<>();
    try (MockSpannerServer server = newServer(MockSpannerServer.builder())) {
      for (boolean guard : new boolean[] {false, true}) {
        try (GuardedTestClient client = GuardedTestClient.open(server, guard)) {
          readAll(client.database(), MockSpannerServer.POINT_SELECT);
          server.reset();
          server
              .mock()
              .setExecuteStreamingSqlExecutionTime(
                  SimulatedExecutionTime.ofStreamException(
                      Status.UNAVAILABLE.withDescription("connection dropped").asRuntimeException(),
                      500));
          List<Long> rows = new ArrayList<>();
          try (ResultSet rs =
              client
                  .database()
                  .singleUse()
                  .executeQuery(Statement.of(MockSpannerServer.BIG_QUERY))) {
            while (rs.next()) {
              rows.add(rs.getLong(0));
            }
          } finally {
            server.mock().setExecuteStreamingSqlExecutionTime(SimulatedExecutionTime.none());
          }
          List<MockSpannerServer.Call> attempts = server.calls("ExecuteStreamingSql");
          assertThat(attempts).as("guard " + guard + ": the stream was resumed").hasSize(2);
          figures.add(
              String.format(
                  Locale.ROOT,
                  "[guard %s] resume after UNAVAILABLE at row 500, guard %s: %d rows, %d distinct;"
                      + " resumed with a resume token: %s",
                  ClientVersions.detected().spanner(),
                  guard ? "on" : "off",
                  rows.size(),
                  rows.stream().distinct().count(),
                  !((com.google.spanner.v1.ExecuteSqlRequest) attempts.get(1).request())
                      .getResumeToken()
                      .isEmpty()));
          ids.put(guard, rows);
        }
      }
    }
    assertThat(ids.get(true)).as("rows, guard on vs off: " + figures).isEqualTo(ids.get(false));
    assertThat(ids.get(true).stream().distinct().sorted().toList())
        .as("every row delivered: " + figures)
        .hasSize(10_000)
        .startsWith(0L, 1L)
        .endsWith(9_999L);
    assertThat(ids.get(true)).as("each row once: " + figures).hasSize(10_000);
  }

  @Test
  void resultsAreIdenticalWithTheGuardOnAndOff() throws Exception {
    try (MockSpannerServer server = newServer(MockSpannerServer.builder())) {
      List<Object> off;
      List<Object> on;
      try (GuardedTestClient client = GuardedTestClient.open(server, false)) {
        off = workload(client);
      }
      try (GuardedTestClient client = GuardedTestClient.open(server, true)) {
        on = workload(client);
        // Closed on their last row, the point selects drain: counted as their trailers arrive.
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> GuardLine.closedAtLastCount(client.state()) > 0);
      }
      assertThat(on).isEqualTo(off);
      assertThat(off).contains(3L, true);
    }
  }

  @Test
  void aStreamThatFailsIsNotCancelledAgain() throws Exception {
    try (MockSpannerServer server = newServer(MockSpannerServer.builder())) {
      for (boolean guard : new boolean[] {true, false}) {
        try (GuardedTestClient client = GuardedTestClient.open(server, guard)) {
          readOneRow(client.database(), MockSpannerServer.POINT_SELECT);
          // The point select drains; it is counted when its trailers arrive.
          await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams(client.state()) == 0);
          String what = "guard " + (guard ? "on" : "off") + ": ";

          // The error is the first thing the stream returns: iterating raises it, and close has
          // nothing left to cancel.
          client.counter().reset();
          long skipped = client.state().streamEndGuardSkippedCount();
          ResultSet failing =
              client.database().singleUse().executeQuery(Statement.of(FAILING_QUERY));
          SpannerErrors.assertFailsWith(
              ErrorCode.INVALID_ARGUMENT, what + "a query that fails", failing::next);
          failing.close();
          failing.close();
          assertThat(client.counter().cancels()).as(what + "cancels after an error").isZero();
          assertThat(client.state().streamEndGuardSkippedCount()).isEqualTo(skipped);

          // The error arrives after the first row: the caller sees the row, then the error.
          server
              .mock()
              .setExecuteStreamingSqlExecutionTime(
                  SimulatedExecutionTime.ofStreamException(
                      Status.INVALID_ARGUMENT
                          .withDescription("fails after one row")
                          .asRuntimeException(),
                      1));
          try (ResultSet rs =
              client.database().singleUse().executeQuery(Statement.of(THREE_ROWS))) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getLong(0)).isZero();
            SpannerErrors.assertFailsWith(
                ErrorCode.INVALID_ARGUMENT, what + "a query that fails after a row", rs::next);
          } finally {
            server.mock().setExecuteStreamingSqlExecutionTime(SimulatedExecutionTime.none());
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
  }

  private static List<Object> workload(GuardedTestClient client) {
    DatabaseClient database = client.database();
    SpannerTemplate template = SpannerTemplates.of(database);
    List<Object> results = new ArrayList<>();
    results.add(rows(database, MockSpannerServer.POINT_SELECT, Integer.MAX_VALUE));
    results.add(rows(database, MockSpannerServer.POINT_SELECT, 1));
    results.add(rows(database, THREE_ROWS, Integer.MAX_VALUE));
    results.add(rows(database, THREE_ROWS, 2));
    results.add(rows(database, MockSpannerServer.BIG_QUERY, Integer.MAX_VALUE));
    results.add(rows(database, MockSpannerServer.BIG_QUERY, 7));
    results.add(template.count(SingerEntity.class));
    results.add(template.existsById(SingerEntity.class, Key.of(1L)));
    return results;
  }
}
