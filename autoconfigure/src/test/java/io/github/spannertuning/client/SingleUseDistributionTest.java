package io.github.spannertuning.client;

import static io.github.spannertuning.client.RoutingSubject.READ_COLUMNS;
import static io.github.spannertuning.client.RoutingSubject.READ_KEYS;
import static io.github.spannertuning.client.RoutingSubject.TABLE;
import static io.github.spannertuning.client.RoutingSubject.UPDATE;
import static io.github.spannertuning.client.RoutingSubject.VERSION;
import static io.github.spannertuning.client.RoutingSubject.drain;
import static io.github.spannertuning.client.RoutingSubject.routes;
import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.TimestampBound;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Which requests single-use distribution routes, and a pool it cannot set up, against the
 * production-like test server. The load checks over many fresh clients are in {@link
 * SingleUseDistributionIT}.
 */
class SingleUseDistributionTest {

  @Test
  void onlySingleUseRequestsAreRouted() throws Exception {
    try (RoutingSubject subject = RoutingSubject.open(true)) {
      int singleUse = 0;
      // Single-use: strong queries, a stale query, reads, and a single-use read-only transaction.
      for (int i = 0; i < 5; i++) {
        subject.pointSelect();
        singleUse++;
      }
      try (ResultSet rs =
          subject
              .client
              .singleUse(TimestampBound.ofExactStaleness(10, TimeUnit.SECONDS))
              .executeQuery(Statement.of(POINT_SELECT))) {
        drain(rs);
        singleUse++;
      }
      for (int i = 0; i < 3; i++) {
        try (ResultSet rs = subject.client.singleUse().read(TABLE, READ_KEYS, READ_COLUMNS)) {
          drain(rs);
          singleUse++;
        }
      }
      try (ReadOnlyTransaction tx = subject.client.singleUseReadOnlyTransaction();
          ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT))) {
        drain(rs);
        singleUse++;
      }
      long routedAfterSingleUse = subject.state.singleUseRoutedCount();

      // Not single-use: read/write transactions (streaming query, read, DML) and multi-use
      // read-only transactions (streaming queries and reads).
      for (int i = 0; i < 3; i++) {
        subject
            .client
            .readWriteTransaction()
            .run(
                (tx) -> {
                  try (ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT))) {
                    drain(rs);
                  }
                  try (ResultSet rs = tx.read(TABLE, READ_KEYS, READ_COLUMNS)) {
                    drain(rs);
                  }
                  tx.executeUpdate(Statement.of(UPDATE));
                  return null;
                });
      }
      for (int i = 0; i < 3; i++) {
        try (ReadOnlyTransaction tx = subject.client.readOnlyTransaction()) {
          for (int j = 0; j < 2; j++) {
            try (ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT))) {
              drain(rs);
            }
          }
          try (ResultSet rs = tx.read(TABLE, READ_KEYS, READ_COLUMNS)) {
            drain(rs);
          }
        }
      }
      long routed = subject.state.singleUseRoutedCount();

      // What the server saw of the application's: the requests that ran in a single-use
      // read-only transaction. The warm-up's priming queries are the starter's own.
      List<Call> requests =
          subject.server.calls().stream()
              .filter(
                  (call) ->
                      (call.request() instanceof ExecuteSqlRequest sql
                              && !sql.getSql().equals(MockSpannerServer.PRIMING_QUERY))
                          || call.request() instanceof ReadRequest)
              .toList();
      long singleUseOnServer =
          requests.stream().filter(SingleUseDistributionTest::isSingleUse).count();
      String figures =
          String.format(
              "[routing %s] selector detection: single-use requests=%d (server saw %d) other"
                  + " ExecuteSql/Read requests=%d routed=%d (after single-use only: %d)",
              VERSION,
              singleUse,
              singleUseOnServer,
              requests.size() - singleUseOnServer,
              routed,
              routedAfterSingleUse);

      assertThat(singleUseOnServer)
          .as("single-use requests the server saw: " + figures)
          .isEqualTo(singleUse);
      assertThat(requests.size() - singleUseOnServer)
          .as(
              "requests in read/write and multi-use read-only transactions the server saw: "
                  + figures)
          .isEqualTo(3L * 3 + 3L * 3);
      if (routes()) {
        assertThat(routedAfterSingleUse)
            .as("routed count after the single-use requests: " + figures)
            .isEqualTo(singleUse);
        assertThat(routed)
            .as("routed count: transactional requests must not be routed: " + figures)
            .isEqualTo(singleUse);
      } else {
        assertThat(routed).as("routed count when the client routes natively: " + figures).isZero();
      }
    }
  }

  /**
   * grpc-gcp counts each channel's calls in flight and picks by that count, for transactions and
   * whatever else the client sends there. From grpc-gcp 1.15 a call holds a unit of that count from
   * its creation, so a call the starter made and never started (or cancelled) would hold it for the
   * client's life: once the client is idle, every channel must read 0 again, after the pool is set
   * up and after a burst of routed reads and transactions.
   */
  @Test
  void grpcGcpCountsNoCallInFlightOnceTheTunedClientIsIdle() throws Exception {
    try (RoutingSubject subject = RoutingSubject.open(true)) {
      GcpManagedChannel pool =
          PoolRouting.pool((GapicSpannerRpc) subject.spanner.getOptions().getRpc());
      String what = "[routing " + VERSION + "] grpc-gcp's calls in flight per channel, ";
      // The client's own first calls (its multiplexed session) may still be in flight.
      awaitNoCallInFlight(pool, what + "once the pool is set up");

      Loops.onThreads(
          16,
          (thread) -> {
            for (int i = 0; i < 25; i++) {
              subject.pointSelect();
            }
            return subject
                .client
                .readWriteTransaction()
                .run((tx) -> tx.executeUpdate(Statement.of(UPDATE)));
          });
      awaitNoCallInFlight(pool, what + "once a burst is over");
    }
  }

  private static void awaitNoCallInFlight(GcpManagedChannel pool, String what) {
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              assertThat(pool.getMaxActiveStreams()).as(what + ", max").isZero();
              assertThat(pool.getMinActiveStreams()).as(what + ", min").isZero();
            });
  }

  private static boolean isSingleUse(Call call) {
    if (call.request() instanceof ExecuteSqlRequest sql) {
      return !sql.hasTransaction() || sql.getTransaction().hasSingleUse();
    }
    if (call.request() instanceof ReadRequest read) {
      return !read.hasTransaction() || read.getTransaction().hasSingleUse();
    }
    return false;
  }
}
