package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.Options;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.protobuf.AbstractMessage;
import com.google.protobuf.ByteString;
import com.google.spanner.v1.BeginTransactionRequest;
import com.google.spanner.v1.CommitRequest;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.SimulatedExecutionTime;
import io.grpc.Context;
import io.grpc.Status;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * Faults met in production, against a tuned client (every feature on) on a real client, gRPC and
 * TCP, served by the production-like {@link MockSpannerServer} ({@code last} on the final message,
 * trailers 1 ms later, 2-5 ms per call): a stream that breaks mid-way, commits that abort, and
 * deadlines and cancels mid-stream ({@link ServerRestartIT} restarts the server under load). What
 * the fault is and when it strikes is simulated by {@code MockSpannerService} or by stopping the
 * server; the client's reaction is real.
 */
class FaultsTest extends TunedClientTests {

  @Test
  void unavailableMidStreamResumesWithEveryRowOnceInOrder() {
    this.server.reset();
    this.server
        .mock()
        .setExecuteStreamingSqlExecutionTime(
            SimulatedExecutionTime.ofStreamException(
                Status.UNAVAILABLE
                    .withDescription("simulated: connection lost")
                    .asRuntimeException(),
                2_500));
    List<Long> ids = new ArrayList<>();
    try (ResultSet rs =
        this.client.singleUse().executeQuery(Statement.of(MockSpannerServer.BIG_QUERY))) {
      while (rs.next()) {
        ids.add(rs.getLong(0));
      }
    }
    List<Call> attempts = this.server.calls("ExecuteStreamingSql");
    ByteString resumeToken =
        ((ExecuteSqlRequest) attempts.get(attempts.size() - 1).request()).getResumeToken();
    String figures =
        String.format(
            "[faults %s] UNAVAILABLE after 2,500 of 10,000 rows: rows=%d distinct=%d attempts=%d"
                + " resumed from token '%s'",
            ClientVersions.detected().spanner(),
            ids.size(),
            Set.copyOf(ids).size(),
            attempts.size(),
            resumeToken.toStringUtf8());

    assertThat(attempts)
        .as("the query was sent, broke, and was resumed once: " + figures)
        .hasSize(2);
    assertThat(resumeToken).as("the second attempt resumes from a token: " + figures).isNotEmpty();
    assertThat(ids)
        .as("every row once, in order: " + figures)
        .isEqualTo(LongStream.range(0, 10_000).boxed().toList());
    awaitNoActiveStreams();
  }

  @Test
  void commitAbortedRepeatedlyIsRetriedAndCommitsOnceWithEachAttemptOnOneConnection()
      throws Exception {
    int transactions = 6;
    int aborts = 3;
    List<Attempt> attempts = new ArrayList<>();
    List<Integer> runs = new ArrayList<>();
    withSingleUseTraffic(
        () -> {
          for (int i = 0; i < transactions; i++) {
            String tag = "abort-" + i;
            List<Exception> aborted = new ArrayList<>();
            for (int a = 0; a < aborts; a++) {
              aborted.add(
                  this.server
                      .mock()
                      .createAbortedException(ByteString.copyFromUtf8(tag + "-" + a)));
            }
            this.server.mock().setCommitExecutionTime(SimulatedExecutionTime.ofExceptions(aborted));
            AtomicInteger functionRuns = new AtomicInteger();
            long updated =
                this.client
                    .readWriteTransaction(Options.tag(tag))
                    .run(
                        (tx) -> {
                          functionRuns.incrementAndGet();
                          try (ResultSet rs =
                              tx.executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
                            assertThat(rs.next()).isTrue();
                          }
                          return tx.executeUpdate(Statement.of(UPDATE));
                        });
            assertThat(updated).isEqualTo(1L);
            runs.add(functionRuns.get());
            attempts.addAll(attemptsOf(tag));
          }
        });
    this.server.mock().setCommitExecutionTime(SimulatedExecutionTime.none());

    Map<String, List<Attempt>> byTransaction =
        attempts.stream()
            .collect(Collectors.groupingBy(Attempt::tag, TreeMap::new, Collectors.toList()));
    List<Attempt> split = attempts.stream().filter((a) -> a.connections().size() > 1).toList();
    String figures =
        String.format(
            "[faults %s] commit ABORTED %d times per transaction: function runs=%s commits/transaction=%s"
                + " attempts split across connections=%d of %d%s",
            ClientVersions.detected().spanner(),
            aborts,
            runs,
            byTransaction.values().stream().map(List::size).toList(),
            split.size(),
            attempts.size(),
            split.isEmpty() ? "" : " " + split);

    assertThat(runs)
        .as("the transaction function runs once per attempt: %d aborted, one committed", aborts)
        .containsOnly(aborts + 1);
    assertThat(byTransaction.values())
        .as("Commit RPCs per transaction: %d aborted by the server, the last one committed", aborts)
        .hasSize(transactions)
        .allSatisfy((list) -> assertThat(list).hasSize(aborts + 1));
    assertThat(split).as("attempts whose RPCs used more than one connection: " + figures).isEmpty();
    awaitNoActiveStreams();
  }

  @Test
  void deadlineMidStreamReachesTheCallerAndTheServer() {
    this.server.reset();
    this.server.mock().freezeAfterReturningNumRows(100);
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    AtomicInteger rows = new AtomicInteger();
    try {
      SpannerErrors.assertDeadlineExceeded(
          "a read with a 1 s deadline", Duration.ofSeconds(1), timer, () -> readAll(rows));
    } finally {
      timer.shutdownNow();
      this.server.mock().unfreeze();
    }
    assertThat(rows.get()).as("rows read before the stall").isBetween(1, 100);
    assertTheServerSawTheCancelAndTheClientReadsOn();
  }

  @Test
  void userCancelMidStreamReachesTheCallerAndTheServer() throws Exception {
    this.server.reset();
    this.server.mock().freezeAfterReturningNumRows(100);
    Context.CancellableContext cancellable = Context.current().withCancellation();
    AtomicInteger rows = new AtomicInteger();
    ExecutorService reader = Executors.newSingleThreadExecutor();
    Future<?> read = reader.submit(() -> cancellable.run(() -> readAll(rows)));
    try {
      await().atMost(Duration.ofSeconds(10)).until(() -> rows.get() >= 50);
      cancellable.cancel(null);
      assertThatThrownBy(() -> read.get(10, TimeUnit.SECONDS))
          .hasCauseInstanceOf(SpannerException.class)
          .satisfies(
              (ex) ->
                  assertThat(((SpannerException) ex.getCause()).getErrorCode())
                      .isEqualTo(ErrorCode.CANCELLED));
    } finally {
      reader.shutdownNow();
      this.server.mock().unfreeze();
    }
    assertTheServerSawTheCancelAndTheClientReadsOn();
  }

  /** The server saw the call cancelled, no stream is left active, and the client reads on. */
  private void assertTheServerSawTheCancelAndTheClientReadsOn() {
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(this.server.cancels()).as("server saw the call cancelled").isPositive());
    awaitNoActiveStreams();
    pointSelect();
  }

  /**
   * On google-cloud-spanner 6.113 a result set closed in the middle of a stalled stream sometimes
   * leaves the call open until the server ends it: no RST_STREAM, the call still active. The stock
   * client does it too (1 of 4 runs; the tuned client 4 of 9, with the guard or routing off as
   * well), so it is the client line's behaviour, not spanner-tuning's; there the test checks that
   * the guard let the cancel through and that the call ends, at its deadline at the latest.
   */
  private static final boolean CANCEL_OF_STALLED_STREAM_RELIABLE =
      !ClientVersions.detected().spanner().startsWith("6.113.");

  @Test
  void resultSetClosedMidStreamCancelsTheCall() throws Exception {
    try (MockSpannerServer counted = MockSpannerServer.builder().countFrames().start()) {
      SpannerOptions.Builder builder = counted.clientOptions(CHANNELS);
      SpannerTuningState tuned = SpannerTuning.defaults().applyTo(builder);
      try (Spanner other = builder.build().getService()) {
        DatabaseClient db = other.getDatabaseClient(DATABASE);
        counted.mock().freezeAfterReturningNumRows(100);
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        try {
          // The deadline only bounds the test should the stream never start.
          Context.current()
              .withDeadlineAfter(30, TimeUnit.SECONDS, timer)
              .run(
                  () -> {
                    try (ResultSet rs =
                        db.singleUse().executeQuery(Statement.of(MockSpannerServer.BIG_QUERY))) {
                      for (int i = 0; i < 5; i++) {
                        assertThat(rs.next()).isTrue();
                      }
                    }
                  });
          if (CANCEL_OF_STALLED_STREAM_RELIABLE) {
            await()
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(
                    () ->
                        assertThat(counted.rstStreams()).as("RST_STREAM on the wire").isPositive());
          } else {
            Thread.sleep(2_000);
          }
        } finally {
          timer.shutdownNow();
          counted.mock().unfreeze();
        }
        // Where the cancel can be lost, the call ends at its deadline (30 s) at the latest.
        await()
            .atMost(Duration.ofSeconds(CANCEL_OF_STALLED_STREAM_RELIABLE ? 10 : 40))
            .untilAsserted(
                () ->
                    assertThat(
                            tuned.channelLoad().channels().stream()
                                .mapToInt(ChannelStats::activeStreams)
                                .sum())
                        .as("active streams")
                        .isZero());
        String figures =
            String.format(
                "[faults %s] result set closed after 5 rows of a stalled stream: RST_STREAM on the"
                    + " wire=%d (checked: %s), server cancels=%d, guard skipped=%d, active streams"
                    + " back to 0",
                ClientVersions.detected().spanner(),
                counted.rstStreams(),
                CANCEL_OF_STALLED_STREAM_RELIABLE,
                counted.cancels(),
                tuned.streamEndGuardSkippedCount());
        assertThat(tuned.streamEndGuardSkippedCount())
            .as("the guard skipped no cancel of an unfinished stream: " + figures)
            .isZero();
      }
    }
  }

  private void readAll(AtomicInteger rows) {
    try (ResultSet rs =
        this.client.singleUse().executeQuery(Statement.of(MockSpannerServer.BIG_QUERY))) {
      while (rs.next()) {
        rows.incrementAndGet();
      }
    }
  }

  /** Runs the given work while 4 other threads keep sending single-use point selects. */
  private void withSingleUseTraffic(ThrowingRunnable work) throws Exception {
    try (Loops.Background traffic = Loops.inBackground(4, (thread, i) -> pointSelect())) {
      work.run();
    }
  }

  /**
   * The attempts of one transaction, in the order the server saw them: its calls carry its
   * transaction tag, and each attempt ends with a Commit.
   */
  private List<Attempt> attemptsOf(String tag) {
    List<Attempt> attempts = new ArrayList<>();
    List<Call> current = new ArrayList<>();
    for (Call call : this.server.calls()) {
      if (!tag.equals(transactionTag(call.request()))) {
        continue;
      }
      current.add(call);
      if (call.method().equals("Commit")) {
        attempts.add(Attempt.of(tag, current));
        current = new ArrayList<>();
      }
    }
    assertThat(current).as("calls of %s after its last commit", tag).isEmpty();
    return attempts;
  }

  private static String transactionTag(AbstractMessage request) {
    if (request instanceof ExecuteSqlRequest sql) {
      return sql.getRequestOptions().getTransactionTag();
    }
    if (request instanceof CommitRequest commit) {
      return commit.getRequestOptions().getTransactionTag();
    }
    if (request instanceof BeginTransactionRequest begin) {
      return begin.getRequestOptions().getTransactionTag();
    }
    return "";
  }

  private record Attempt(String tag, List<String> methods, Set<SocketAddress> connections) {

    static Attempt of(String tag, List<Call> calls) {
      return new Attempt(
          tag,
          calls.stream().map(Call::method).toList(),
          calls.stream().map(Call::connection).collect(Collectors.toSet()));
    }
  }

  @FunctionalInterface
  private interface ThrowingRunnable {
    void run() throws Exception;
  }
}
