package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.BatchClient;
import com.google.cloud.spanner.BatchReadOnlyTransaction;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.Partition;
import com.google.cloud.spanner.PartitionOptions;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.TimestampBound;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.MockSpannerServer.Fault;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.grpc.Context;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Hedged reads are correct whichever attempt answers, on every client line: a client that hedges
 * every hedgeable read at once (delay 0, a budget of one extra call per read) against the
 * production-like {@link MockSpannerServer}, whose results of 20 rows come one row a message with a
 * resume token each. The server tells a read's attempts apart by their request ids' attempt
 * numbers, and slows or fails the one a test names ({@link MockSpannerServer#setFaults}); the
 * client, its retries and resumes, gRPC and TCP are real.
 *
 * <p>What hedging buys and costs under load is measured by {@code HedgedReadsTailIT} and the
 * benchmark's stragglers workload; the race itself, event by event, by {@code HedgeRaceTest}.
 *
 * <p>Tagged {@code shares-machine}: what it checks is counted (rows, attempts, hedges sent and won)
 * against holds of 100 ms and more, so it runs beside another test JVM.
 */
@Tag("shares-machine")
class HedgedReadsIT {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final String TWENTY_ROWS = "SELECT id FROM Twenty";

  private static final String UPDATE = "UPDATE Counters SET value = value + 1 WHERE id = 1";

  private static final List<String> ROWS =
      IntStream.range(0, 20).mapToObj(Integer::toString).toList();

  /** Comments that make one statement of each kind of read, to count its calls by. */
  private static final List<String> MARKERS =
      List.of("", " /*begin*/", " /*rw*/", " /*ro first*/", " /*ro second*/", " /*partitioned*/");

  private static final int THREADS = 16;

  private MockSpannerServer server;

  private Spanner spanner;

  private DatabaseClient client;

  private SpannerTuningState state;

  private long sentBefore;

  private long wonBefore;

  private long cancelledBefore;

  @BeforeEach
  void start() throws Exception {
    this.server = MockSpannerServer.start();
    for (String marker : MARKERS) {
      this.server
          .mock()
          .putStatementResult(
              StatementResult.query(Statement.of(TWENTY_ROWS + marker), ResultSets.numbers(20)));
    }
    this.server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
    open(Duration.ZERO);
  }

  /** A client that hedges every hedgeable read after {@code delay}, one hedge per read at most. */
  private void open(Duration delay) {
    SpannerOptions.Builder builder = this.server.clientOptions(8);
    this.state =
        SpannerTuning.newBuilder()
            .hedging(true)
            .hedgingMaxExtra(1.0)
            .hedgingBurst(100_000)
            .hedgingFixedDelay(delay)
            .logWhenBuilt(false)
            .build()
            .applyTo(builder);
    assertThat(this.state.isActive(Feature.HEDGING)).as("hedging: %s", this.state).isTrue();
    this.spanner = builder.build().getService();
    this.client = this.spanner.getDatabaseClient(DATABASE);
    // The session and the pool, before any count.
    readAll(TWENTY_ROWS);
    awaitNothingInFlight();
    this.server.reset();
    this.sentBefore = this.state.hedging().sent();
    this.wonBefore = this.state.hedging().won();
    this.cancelledBefore = this.state.hedging().losersCancelled();
  }

  /** Hedges sent since the client was opened and warmed up. */
  private long hedgesSent() {
    return this.state.hedging().sent() - this.sentBefore;
  }

  private long hedgesWon() {
    return this.state.hedging().won() - this.wonBefore;
  }

  private long losersCancelled() {
    return this.state.hedging().losersCancelled() - this.cancelledBefore;
  }

  @AfterEach
  void stop() throws Exception {
    try {
      this.spanner.close();
    } finally {
      this.server.close();
    }
  }

  /**
   * Both attempts race on every read and either may win, at 2 to 5 ms each: the application reads
   * each row once, in order, from one attempt, and the server sees no call beyond the reads and
   * their hedges. 2,000 reads on every client line, whose hooks the reads go through.
   */
  @Test
  void everyRowOnceAndInOrderWhicheverAttemptWins() {
    everyRowOnceAndInOrder(2_000);
  }

  /**
   * The same race over 10,000 reads, on the default line only: the race is the starter's own code,
   * the same on every line, and the suite runs the hooks' check above on each.
   */
  @Test
  @Tag("default-line")
  void everyRowOnceAndInOrderOver10000Reads() {
    everyRowOnceAndInOrder(10_000);
  }

  private void everyRowOnceAndInOrder(int reads) {
    readEveryRowOnce(THREADS, reads);
    long hedges = hedgesSent();
    long won = hedgesWon();
    System.out.printf(
        "[hedging %s] %d reads hedged at once: %d hedges sent, %d won%n",
        ClientVersions.detected().spanner(), reads, hedges, won);
    List<Call> calls = this.server.calls("ExecuteStreamingSql");
    // A hedge cancelled as it lost, in the moment after it was sent, may never reach the server.
    assertThat(calls.size())
        .as("server calls: one per read and one per hedge, %d of them cancelled", losersCancelled())
        .isBetween(reads + (int) (hedges - losersCancelled()), reads + (int) hedges);
    assertThat(hedges)
        .as("hedges sent for %d reads hedged at once", reads)
        .isGreaterThan(reads / 2);
    assertThat(won).as("hedges that answered first").isPositive().isLessThan(hedges);
    Map<String, List<Integer>> attempts = attemptsByRead(calls);
    assertThat(attempts).hasSize(reads);
    assertThat(attempts.values())
        .as("attempt numbers of each read, the hedge numbered as the client numbers retries")
        .allSatisfy((numbers) -> assertThat(numbers).isSubsetOf(1, 2).doesNotHaveDuplicates());
    awaitNothingInFlight();
  }

  /**
   * The hedge answers first and fails after its first row: the client resumes it from that row's
   * resume token, on a stream of its own that is not hedged again, and the first attempt, slower,
   * never reaches the application.
   */
  @Test
  void aWinnerThatFailsAfterItsFirstMessageResumesAsTheClientDoes() {
    this.server.setFaults(
        (method, attempt) ->
            switch (attempt) {
              case 1 -> Fault.delay(100);
              case 2 -> Fault.failAfterFirstMessage(Status.UNAVAILABLE);
              default -> Fault.NONE;
            });
    int reads = 2_000;
    readEveryRowOnce(THREADS / 2, reads);
    // The hedge is sent within the first attempt's 100 ms on any machine not starved of CPU for
    // that long; a read whose first attempt answered before it is not hedged at all.
    assertThat(hedgesWon()).as("hedges that answered first").isGreaterThanOrEqualTo(reads * 9 / 10);
    Map<String, List<Call>> byRead =
        this.server.calls("ExecuteStreamingSql").stream()
            .collect(Collectors.groupingBy(Call::logicalRequest));
    assertThat(byRead).hasSize(reads);
    // The server records a call when its service time has passed: a first attempt cancelled as
    // the loser before then is not seen. A hedge sent late (a starved machine delays its timer
    // past the first attempt's 100 ms) may lose: the first attempt answers, the hedge fails
    // after its first message as it is cancelled, and nothing is resumed.
    assertThat(byRead.values())
        .as("each read: the first attempt, the hedge, and the hedge resumed from its first row")
        .allSatisfy(
            (calls) -> {
              List<Integer> attempts = calls.stream().map(Call::attempt).toList();
              List<Call> resumed = calls.stream().filter((call) -> hasResumeToken(call)).toList();
              if (resumed.isEmpty()) {
                assertThat(attempts).as("a read its first attempt answered").contains(1);
                assertThat(attempts).isSubsetOf(1, 2).doesNotHaveDuplicates();
                return;
              }
              // The resume is numbered after the hedge (6.125+ counts one more on the way).
              assertThat(resumed).hasSize(1);
              assertThat(resumed.get(0).attempt()).isGreaterThan(2);
              assertThat(
                      ((ExecuteSqlRequest) resumed.get(0).request())
                          .getResumeToken()
                          .toStringUtf8())
                  .isEqualTo("1");
              assertThat(attempts).contains(2).doesNotHaveDuplicates().hasSizeLessThanOrEqualTo(3);
            });
    assertThat(byRead.values().stream().filter(HedgedReadsIT::wasResumed).count())
        .as("reads answered by their hedge, resumed")
        .isEqualTo(hedgesWon());
    assertThat(
            byRead.values().stream()
                .filter(HedgedReadsIT::wasResumed)
                .filter((calls) -> calls.size() == 2)
                .count())
        .as("reads answered by their hedge whose first attempt the server did not see")
        .isLessThanOrEqualTo(losersCancelled());
    awaitNothingInFlight();
  }

  /**
   * The first attempt fails before any message, after its hedge was sent: the hedge answers, and
   * the client does not retry.
   */
  @Test
  void aFirstAttemptThatFailsBeforeAnyMessageLeavesTheHedgeToAnswer() {
    this.server.setFaults(
        (method, attempt) ->
            (attempt == 1) ? Fault.failAtStart(100, Status.UNAVAILABLE) : Fault.delay(150));
    int reads = 320;
    readEveryRowOnce(THREADS, reads);
    assertThat(hedgesWon())
        .as("reads the hedge answered, sent within the first attempt's 100 ms")
        .isGreaterThanOrEqualTo(reads * 9 / 10);
    assertThat(attemptsByRead(this.server.calls("ExecuteStreamingSql")).values())
        .as("each read's attempts: no retry by the client")
        .allSatisfy((numbers) -> assertThat(numbers).containsExactlyInAnyOrder(1, 2));
  }

  /** Both attempts fail: the application gets the first attempt's failure, as without a hedge. */
  @Test
  void bothFailingGivesTheClientsUsualError() {
    this.server.setFaults(
        (method, attempt) ->
            (attempt == 1)
                ? Fault.failAtStart(100, Status.PERMISSION_DENIED.withDescription("first attempt"))
                : Fault.failAtStart(0, Status.FAILED_PRECONDITION.withDescription("hedge")));
    int reads = 50;
    for (int i = 0; i < reads; i++) {
      assertThatThrownBy(() -> readAll(TWENTY_ROWS))
          .isInstanceOfSatisfying(
              SpannerException.class,
              (e) -> {
                assertThat(e.getErrorCode()).isEqualTo(ErrorCode.PERMISSION_DENIED);
                assertThat(e.getMessage()).contains("first attempt");
              });
    }
    assertThat(hedgesSent())
        .as("hedges sent within the first attempt's 100 ms")
        .isGreaterThanOrEqualTo(reads * 9 / 10);
  }

  /**
   * The application's deadline passes, or it cancels, while both attempts wait: both end, the
   * server sees both cancelled, and no stream is left in flight.
   */
  @Test
  void aDeadlineOrACancelOfTheApplicationEndsBothAttempts() throws Exception {
    this.server.setFaults((method, attempt) -> Fault.delay(500));
    ScheduledExecutorService canceller = Executors.newSingleThreadScheduledExecutor();
    try {
      for (int i = 0; i < 20; i++) {
        SpannerErrors.assertDeadlineExceeded(
            "a read with a 100 ms deadline",
            Duration.ofMillis(100),
            canceller,
            () -> readAll(TWENTY_ROWS));
        Context.CancellableContext cancellable = Context.current().withCancellation();
        canceller.schedule(() -> cancellable.cancel(null), 100, TimeUnit.MILLISECONDS);
        SpannerErrors.assertFailsWith(
            ErrorCode.CANCELLED,
            "a read cancelled after 100 ms",
            () -> cancellable.call(() -> readAll(TWENTY_ROWS)));
      }
    } finally {
      canceller.shutdownNow();
    }
    assertThat(hedgesSent()).as("hedges sent within 100 ms").isGreaterThanOrEqualTo(36);
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(this.server.cancels())
                    .as("attempts the server saw cancelled: each read's and each hedge")
                    .isEqualTo(40 + (int) hedgesSent()));
    awaitNothingInFlight();
  }

  /**
   * Only what is safe to send twice is hedged. Every read's first attempt is held 500 ms and its
   * hedge is not, so a read that may be hedged is hedged (at once, the delay being 0) and the hedge
   * answers, and the server receives it numbered as a second attempt; each kind that must not be
   * hedged is sent once. The check is on the hedge's arrival, not on a count of two calls: the
   * server takes a request once its hold is over, and a held first attempt the hedge beat may be
   * cancelled before then. Not a hold of 20 ms on every attempt: whether a first attempt was taken
   * before the winning hedge's cancel reached it then turned on how busy the machine was.
   */
  @Test
  void onlyReadsSafeToSendTwiceAreHedged() {
    this.server.setFaults(
        (method, attempt) ->
            (method.equals("ExecuteStreamingSql") && attempt == 1) ? Fault.delay(500) : Fault.NONE);
    readAll(TWENTY_ROWS);
    assertThat(attempts(TWENTY_ROWS)).as("a single-use read: hedged").contains(2);
    assertThat(hedgesSent()).as("hedges sent: the single-use read's").isEqualTo(1);
    this.client
        .readWriteTransaction()
        .run(
            (transaction) -> {
              try (ResultSet rs =
                  transaction.executeQuery(Statement.of(TWENTY_ROWS + " /*begin*/"))) {
                while (rs.next()) {}
              }
              try (ResultSet rs = transaction.executeQuery(Statement.of(TWENTY_ROWS + " /*rw*/"))) {
                while (rs.next()) {}
              }
              return transaction.executeUpdate(Statement.of(UPDATE));
            });
    assertThat(attempts(TWENTY_ROWS + " /*begin*/"))
        .as("a read that begins a transaction")
        .containsExactly(1);
    assertThat(attempts(TWENTY_ROWS + " /*rw*/"))
        .as("a read of a read/write transaction")
        .containsExactly(1);
    assertThat(attempts(UPDATE)).as("DML").containsExactly(1);
    assertThat(hedgesSent()).as("hedges sent: none in the read/write transaction").isEqualTo(1);
    try (ReadOnlyTransaction transaction = this.client.readOnlyTransaction()) {
      for (String marker : List.of(" /*ro first*/", " /*ro second*/")) {
        try (ResultSet rs = transaction.executeQuery(Statement.of(TWENTY_ROWS + marker))) {
          while (rs.next()) {}
        }
      }
    }
    // The client begins a read-only transaction with its first read (an inline begin, never
    // hedged) or with a BeginTransaction of its own first, which gives that read the id.
    List<Call> first = calls(TWENTY_ROWS + " /*ro first*/");
    if (first.stream().anyMatch(HedgedReadsIT::beginsTransaction)) {
      assertThat(first)
          .as("a read that begins a read-only transaction")
          .extracting(Call::attempt)
          .containsExactly(1);
    } else {
      assertThat(first)
          .as("the first read of a read-only transaction begun by BeginTransaction: hedged")
          .extracting(Call::attempt)
          .contains(2);
    }
    assertThat(attempts(TWENTY_ROWS + " /*ro second*/"))
        .as("a read of a read-only transaction that has its id: hedged")
        .contains(2);
    long hedgesBeforePartitions = hedgesSent();
    BatchClient batch = this.spanner.getBatchClient(DATABASE);
    try (BatchReadOnlyTransaction transaction =
        batch.batchReadOnlyTransaction(TimestampBound.strong())) {
      List<Partition> partitions =
          transaction.partitionQuery(
              PartitionOptions.getDefaultInstance(),
              Statement.of(TWENTY_ROWS + " /*partitioned*/"));
      for (Partition partition : partitions) {
        try (ResultSet rs = transaction.execute(partition)) {
          while (rs.next()) {}
        }
      }
      assertThat(attempts(TWENTY_ROWS + " /*partitioned*/"))
          .as("partitioned queries: one call per partition")
          .hasSize(partitions.size())
          .containsOnly(1);
      assertThat(hedgesSent())
          .as("hedges sent: none of the partitions")
          .isEqualTo(hedgesBeforePartitions);
    }
  }

  /**
   * A stream the client resumes has passed rows to the application: the resumed call is never
   * hedged, however long it takes.
   */
  @Test
  void aResumedStreamIsNeverHedged() {
    this.spanner.close();
    open(Duration.ofMillis(100));
    this.server.setFaults(
        (method, attempt) ->
            (attempt == 1) ? Fault.failAfterFirstMessage(Status.UNAVAILABLE) : Fault.delay(200));
    assertThat(readAll(TWENTY_ROWS)).isEqualTo(ROWS);
    List<Call> calls = this.server.calls("ExecuteStreamingSql");
    // The client numbers its resume as the next attempt; 6.125+ counts one more on the way.
    assertThat(calls)
        .as("the read and its resume, 200 ms past the hedge delay")
        .hasSize(2)
        .extracting(Call::attempt)
        .startsWith(1);
    assertThat(((ExecuteSqlRequest) calls.get(1).request()).getResumeToken().toStringUtf8())
        .isEqualTo("1");
    assertThat(hedgesSent()).isZero();
  }

  /** {@code reads} reads from {@code threads} threads, each of which must see rows 0 to 19. */
  private void readEveryRowOnce(int threads, int reads) {
    AtomicInteger wrong = new AtomicInteger();
    Workers.concurrentTasks(
        threads,
        reads,
        (index) -> {
          if (!readAll(TWENTY_ROWS).equals(ROWS)) {
            wrong.incrementAndGet();
          }
        });
    assertThat(wrong.get()).as("reads whose rows were not 0 to 19 once each, in order").isZero();
  }

  private static boolean wasResumed(List<Call> calls) {
    return calls.stream().anyMatch(HedgedReadsIT::hasResumeToken);
  }

  private static boolean hasResumeToken(Call call) {
    return !((ExecuteSqlRequest) call.request()).getResumeToken().isEmpty();
  }

  /** The calls of {@code sql} the server received, in their order. */
  private List<Call> calls(String sql) {
    return this.server.calls().stream()
        .filter(
            (call) ->
                call.request() instanceof ExecuteSqlRequest request && request.getSql().equals(sql))
        .toList();
  }

  /** The attempt numbers of the calls of {@code sql} the server received, in their order. */
  private List<Integer> attempts(String sql) {
    return calls(sql).stream().map(Call::attempt).toList();
  }

  private static boolean beginsTransaction(Call call) {
    return ((ExecuteSqlRequest) call.request()).getTransaction().hasBegin();
  }

  private List<String> readAll(String sql) {
    List<String> rows = new ArrayList<>();
    try (ResultSet rs = this.client.singleUse().executeQuery(Statement.of(sql))) {
      while (rs.next()) {
        rows.add(Long.toString(rs.getLong(0)));
      }
    }
    return rows;
  }

  private static Map<String, List<Integer>> attemptsByRead(List<Call> calls) {
    return calls.stream()
        .collect(
            Collectors.groupingBy(
                Call::logicalRequest, Collectors.mapping(Call::attempt, Collectors.toList())));
  }

  private void awaitNothingInFlight() {
    StreamEndGuardFixtures.awaitNothingInFlight(this.state);
  }
}
