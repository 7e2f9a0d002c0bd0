package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Mutation;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.TransactionContext;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.SpannerEmulator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Read/write transactions that increment counters, stock beside tuned, against the official
 * emulator started with its own fault injection ({@code --enable_fault_injection}: it aborts
 * commits at random, and the client retries them), one after another and from several threads. The
 * aborts and the rejections are real emulator behaviour. Whatever was aborted, retried or failed,
 * each committed transaction adds exactly one and a failed one adds nothing.
 *
 * <p>Concurrent read/write transactions on multiplexed sessions are mostly rejected by the emulator
 * ({@code NOT_FOUND: Transaction not found}, {@code FAILED_PRECONDITION: Invalid transaction ID}),
 * for the stock client as much as the tuned one: it runs one read/write transaction at a time. The
 * concurrent run therefore checks the totals only; the sequential run checks that every transaction
 * commits. Skipped where the emulator is not installed.
 */
@Tag("shares-machine")
class EmulatorFaultInjectionIT {

  private static final String PROJECT = "test-project";

  private static final String INSTANCE = "faults";

  private static final int COUNTERS = 4;

  private static final int THREADS = 6;

  private static final int TRANSACTIONS_PER_THREAD = 15;

  private static final int SEQUENTIAL = 20;

  @Test
  void committedIncrementsEqualTheFinalTotalsUnderInjectedAborts() throws Exception {
    assumeTrue(SpannerEmulator.find().isPresent(), SpannerEmulator.notFoundMessage());
    try (SpannerEmulator emulator = SpannerEmulator.start("--enable_fault_injection")) {
      SpannerOptions.Builder stockBuilder =
          SpannerOptions.newBuilder().setProjectId(PROJECT).setEmulatorHost(emulator.hostPort());
      SpannerOptions.Builder tunedBuilder =
          SpannerOptions.newBuilder().setProjectId(PROJECT).setEmulatorHost(emulator.hostPort());
      SpannerTuningState state = SpannerTuning.defaults().applyTo(tunedBuilder);
      Outcome stockSequential;
      Outcome stock;
      Outcome tunedSequential;
      Outcome tuned;
      try (Spanner spanner = stockBuilder.build().getService()) {
        SpannerEmulator.createInstance(spanner, PROJECT, INSTANCE);
        stockSequential = run(spanner, "stock-sequential", 1, SEQUENTIAL);
        stock = run(spanner, "stock", THREADS, TRANSACTIONS_PER_THREAD);
      }
      try (Spanner spanner = tunedBuilder.build().getService()) {
        tunedSequential = run(spanner, "tuned-sequential", 1, SEQUENTIAL);
        tuned = run(spanner, "tuned", THREADS, TRANSACTIONS_PER_THREAD);
      }

      assertThat(state.isActive(Feature.STREAM_END_GUARD)).as("tuned: %s", state).isTrue();
      for (Outcome outcome : List.of(stockSequential, tunedSequential)) {
        assertThat(outcome.committed())
            .as("%s: every transaction in a row commits, injected aborts retried", outcome.name())
            .isEqualTo(SEQUENTIAL);
      }
      for (Outcome outcome : List.of(stockSequential, stock, tunedSequential, tuned)) {
        assertThat(outcome.committed() + outcome.failed())
            .as("%s: every transaction committed or failed to its caller", outcome.name())
            .isEqualTo(outcome.sent());
        assertThat(outcome.totals().values().stream().mapToLong(Long::longValue).sum())
            .as("%s: final total", outcome.name())
            .isEqualTo(outcome.committed());
        assertThat(outcome.totals())
            .as("%s: each counter's total", outcome.name())
            .isEqualTo(outcome.expected());
      }
    }
  }

  /** What one client's workload did, and what the database holds afterwards. */
  private record Outcome(
      String name,
      long sent,
      long committed,
      long failed,
      Map<String, Long> failures,
      long attempts,
      Map<Long, Long> totals,
      Map<Long, Long> expected) {

    @Override
    public String toString() {
      return String.format(
          "committed=%d failed=%d %s attempts=%d totals=%s sum=%d",
          this.committed,
          this.failed,
          this.failures,
          this.attempts,
          this.totals,
          this.totals.values().stream().mapToLong(Long::longValue).sum());
    }
  }

  private static Outcome run(Spanner spanner, String database, int threads, int perThread)
      throws Exception {
    spanner
        .getDatabaseAdminClient()
        .createDatabase(
            INSTANCE,
            database,
            List.of("CREATE TABLE Counters (Id INT64 NOT NULL, Value INT64) PRIMARY KEY (Id)"))
        .get(60, TimeUnit.SECONDS);
    DatabaseClient client = spanner.getDatabaseClient(DatabaseId.of(PROJECT, INSTANCE, database));
    List<Mutation> zeros = new ArrayList<>();
    for (long id = 0; id < COUNTERS; id++) {
      zeros.add(Mutation.newInsertBuilder("Counters").set("Id").to(id).set("Value").to(0L).build());
    }
    client.write(zeros);

    LongAdder committed = new LongAdder();
    LongAdder attempts = new LongAdder();
    Map<String, LongAdder> failed = new ConcurrentHashMap<>();
    Map<Long, LongAdder> committedPerCounter = new ConcurrentHashMap<>();
    Loops.onThreads(
        threads,
        Duration.ofMinutes(5),
        (thread) -> {
          for (int i = 0; i < perThread; i++) {
            long id = (thread + i) % COUNTERS;
            try {
              client.readWriteTransaction().run((tx) -> increment(tx, id, attempts));
              committed.increment();
              committedPerCounter.computeIfAbsent(id, (k) -> new LongAdder()).increment();
            } catch (SpannerException ex) {
              failed.computeIfAbsent(ex.getErrorCode().name(), (k) -> new LongAdder()).increment();
            }
          }
          return null;
        });

    Map<Long, Long> totals = new TreeMap<>();
    try (ResultSet rs =
        client.singleUse().executeQuery(Statement.of("SELECT Id, Value FROM Counters"))) {
      while (rs.next()) {
        totals.put(rs.getLong(0), rs.getLong(1));
      }
    }
    Map<Long, Long> expected = new TreeMap<>();
    for (long id = 0; id < COUNTERS; id++) {
      LongAdder count = committedPerCounter.get(id);
      expected.put(id, (count != null) ? count.sum() : 0L);
    }
    Map<String, Long> failures = new TreeMap<>();
    failed.forEach((code, count) -> failures.put(code, count.sum()));
    return new Outcome(
        database,
        (long) threads * perThread,
        committed.sum(),
        failures.values().stream().mapToLong(Long::longValue).sum(),
        failures,
        attempts.sum(),
        totals,
        expected);
  }

  private static long increment(TransactionContext tx, long id, LongAdder attempts) {
    attempts.increment();
    long value;
    try (ResultSet rs =
        tx.executeQuery(
            Statement.newBuilder("SELECT Value FROM Counters WHERE Id = @id")
                .bind("id")
                .to(id)
                .build())) {
      rs.next();
      value = rs.getLong(0);
    }
    return tx.executeUpdate(
        Statement.newBuilder("UPDATE Counters SET Value = @value WHERE Id = @id")
            .bind("value")
            .to(value + 1)
            .bind("id")
            .to(id)
            .build());
  }
}
