package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.experiment.Arm;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.StatementResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * What the counting interceptor records for an experiment, by kind of call: a real tuned client
 * against the test server, one pair of 2.5 s slices (carry-over 2 s with a 500 ms drain timeout).
 */
class ExperimentRecordingTest {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final SpannerTuning TUNING =
      SpannerTuning.newBuilder().streamEndGuardDrainTimeout(Duration.ofMillis(500)).build();

  /**
   * Single-use point selects and read/write transactions of a query, an update and a commit, in
   * both arms: each call lands under its kind, in both arms, and nothing is recorded once the
   * experiment has ended. The arm switch is a hook that only notes the arms asked for.
   */
  @Test
  void eachCallIsRecordedUnderItsKindInTheSliceItStartedIn() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      server
          .mock()
          .putStatementResult(StatementResult.update(Statement.of(RoutingSubject.UPDATE), 1));
      SpannerOptions.Builder builder = server.clientOptions(2);
      SpannerTuningState state = TUNING.applyTo(builder);
      try (Spanner spanner = builder.build().getService()) {
        DatabaseClient client = spanner.getDatabaseClient(DATABASE);
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicLong transactions = new AtomicLong();
        Thread traffic = new Thread(() -> traffic(client, running, transactions));
        traffic.start();
        List<Arm> switched = new CopyOnWriteArrayList<>();
        try {
          state.startExperiment(
              state.experimentPlan(Duration.ofMillis(5000), Duration.ofMillis(2500)),
              switched::add);
          await().atMost(Duration.ofSeconds(30)).until(() -> !state.isExperimentRunning());
        } finally {
          running.set(false);
          traffic.join();
        }
        ExperimentResult result = state.experiment();
        assertThat(result.state()).isEqualTo("done");
        // Each slice's arm, then the tuned arm at the end.
        assertThat(switched).hasSize(3).containsOnly(Arm.TUNED, Arm.STOCK).endsWith(Arm.TUNED);
        assertThat(transactions.get()).isPositive();
        for (String kind : List.of("single-use", "transaction-query", "commit")) {
          KindResult figures = result.results().get(kind);
          assertThat(figures.calls().tuned()).as("%s: %s", kind, figures).isPositive();
          assertThat(figures.calls().stock()).as("%s: %s", kind, figures).isPositive();
          assertThat(figures.failedRate().tuned()).as("%s: %s", kind, figures).isZero();
          assertThat(figures.p50Seconds().tuned()).as("%s: %s", kind, figures).isPositive();
        }
        // A transaction has a query and an update, each its own call, and one commit.
        KindResult queries = result.results().get("transaction-query");
        KindResult commits = result.results().get("commit");
        assertThat(queries.calls().tuned() + queries.calls().stock())
            .isGreaterThan(commits.calls().tuned() + commits.calls().stock());
        // No experiment runs: calls are not recorded anywhere.
        long recorded = state.experimentTotals().calls(CallKind.SINGLE_USE, Arm.TUNED);
        for (int i = 0; i < 20; i++) {
          try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
            rs.next();
          }
        }
        assertThat(state.experiment().results().get("single-use").calls())
            .isEqualTo(result.results().get("single-use").calls());
        assertThat(state.experimentTotals().calls(CallKind.SINGLE_USE, Arm.TUNED))
            .isEqualTo(recorded);
      }
    }
  }

  private static void traffic(
      DatabaseClient client, AtomicBoolean running, AtomicLong transactions) {
    while (running.get()) {
      try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
        rs.next();
      }
      client
          .readWriteTransaction()
          .run(
              (tx) -> {
                try (ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT))) {
                  while (rs.next()) {
                    // read every row
                  }
                }
                return tx.executeUpdate(Statement.of(RoutingSubject.UPDATE));
              });
      transactions.incrementAndGet();
    }
  }
}
