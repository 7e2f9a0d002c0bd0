package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.MockSpannerServiceImpl.StatementResult;
import com.google.cloud.spanner.Options;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.TimestampBound;
import com.google.cloud.spanner.TransactionContext;
import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.BeginTransactionRequest;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.grpc.Status;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Where single-use reads and transactions land, stock client beside tuned client, each against its
 * own mock server over real loopback TCP (one TCP connection per client channel, so connections
 * are channels), with every data-plane call taking 2 to 5 ms of server time.
 *
 * <p>What each client line must show is pinned by the build, not read from the code under test:
 * the system property {@value #EXPECTED_PROPERTY} is {@code on} for the client-6.113 profile and
 * {@code native} otherwise. Every test asserts that state on the tuned client first. Where it is
 * {@code on}, each test asserts a bound that the stock client misses (its figures are printed
 * beside); where it is {@code native}, the tests assert that tuning leaves the client's routing
 * alone and print both.
 *
 * <p>Repeated workloads report how many runs met the bound ("10 of 10"), not a median.
 *
 * <p>Every figure is printed on one line prefixed {@code [routing <client version>]}.
 */
class SingleUseDistributionTest {

  static final String EXPECTED_PROPERTY = "spanner-tuning.expected.single-use-distribution";

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final int CHANNELS = 8;

  private static final String VERSION = ClientVersions.detected().spanner();

  private static final String UPDATE = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  /** Rejected by the server: as a transaction's first statement it forces an explicit begin. */
  private static final String INVALID_UPDATE = "UPDATE Singers SET nope = 1 WHERE id = 1";

  private static final String TABLE = "Singers";

  private static final KeySet READ_KEYS = KeySet.all();

  private static final List<String> READ_COLUMNS = List.of("id", "name");

  private static final String STREAMING_SQL = "ExecuteStreamingSql";

  /** The test server's concurrent streams per connection. */
  private static final int STREAM_LIMIT = 100;

  private static final int BURST_RUNS = 10;

  private static final int TRANSACTION_RUNS = 20;

  /** Bound on how long any concurrent workload may take before the test fails. */
  private static final long WORKLOAD_TIMEOUT_SECONDS = 60;

  private static FeatureState.Status expected;

  @BeforeAll
  static void expectedState() {
    String property = System.getProperty(EXPECTED_PROPERTY);
    assertThat(property)
        .as("system property %s, set by the build profile (on or native)", EXPECTED_PROPERTY)
        .isIn("on", "native");
    expected = FeatureState.Status.valueOf(property.toUpperCase(Locale.ROOT));
    System.out.printf(
        "[routing %s] line: grpc-gcp=%s expected single-use-distribution=%s%n",
        VERSION, ClientVersions.detected().grpcGcp(), property);
  }

  private static boolean routes() {
    return expected == FeatureState.Status.ON;
  }

  // ---------------------------------------------------------------------------------------------
  // 1. Cold burst: the first traffic of a brand-new client
  // ---------------------------------------------------------------------------------------------

  /**
   * {@value #BURST_RUNS} brand-new clients per side, each with its own server, whose first traffic
   * is 200 point selects from 200 threads released together. A burst collapses when one connection
   * gets more of it than the server's {@value #STREAM_LIMIT} streams per connection, as stock 6.113
   * does when its sticky keys land together. The picker weighs channels by the latency they answer
   * with, not by the calls they carried, so runs are not held to an even count.
   */
  @Test
  void coldBurstsSpread() throws Exception {
    List<Spread> stock = new ArrayList<>();
    List<Spread> tuned = new ArrayList<>();
    Function<Subject, Spread> burst =
        (subject) -> {
          concurrently(200, 1, (thread, iteration) -> subject.pointSelect());
          return Spread.of(subject.server.calls(STREAMING_SQL), subject.server.connections());
        };
    long routed = 0;
    for (int run = 0; run < BURST_RUNS; run++) {
      stock.add(measure(false, burst));
      Subject.Result<Spread> result = measureTuned(burst);
      tuned.add(result.value());
      routed += result.routed();
    }
    printRuns("cold burst 200", stock, tuned);

    stock.forEach((spread) -> assertThat(spread.total()).isEqualTo(200));
    tuned.forEach((spread) -> assertThat(spread.total()).isEqualTo(200));
    if (routes()) {
      assertThat(routed).as("single-use reads routed").isEqualTo(200L * BURST_RUNS);
      assertThat(collapsed(tuned))
          .as("tuned cold bursts with more than %d calls on one connection, of %d: busiest/mean %s"
                  + " (stock: %d of %d)",
              STREAM_LIMIT, BURST_RUNS, ratios(tuned), collapsed(stock), BURST_RUNS)
          .isZero();
    } else {
      assertThat(routed).as("single-use reads routed by spanner-tuning").isZero();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // 2. Sequential traffic
  // ---------------------------------------------------------------------------------------------

  /**
   * One call at a time: every channel is idle at each pick. grpc-gcp 1.9 breaks that tie towards
   * channel 0, so the other connections go cold; channels about as fast are all kept in use.
   */
  @Test
  void sequentialTrafficUsesEveryChannel() throws Exception {
    Function<Subject, Spread> workload =
        (subject) -> {
          subject.pointSelect();
          subject.server.reset();
          for (int i = 0; i < 160; i++) {
            subject.pointSelect();
          }
          return Spread.of(subject.server.calls(STREAMING_SQL), subject.server.connections());
        };
    Spread stock = measure(false, workload);
    Subject.Result<Spread> tuned = measureTuned(workload);
    print("sequential 160", stock, tuned.value());

    assertRouted(tuned);
    if (routes()) {
      assertThat(tuned.value().connectionsUsed())
          .as("tuned sequential: connections used (per connection %s; stock %s)",
              tuned.value().perConnection(), stock.perConnection())
          .isEqualTo(CHANNELS);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // 3. Transactions stay on one connection, first call included
  // ---------------------------------------------------------------------------------------------

  /**
   * {@value #TRANSACTION_RUNS} brand-new clients per side. In each, 8 threads run 16 transactions
   * while 8 other threads send single-use point selects:
   *
   * <ul>
   *   <li>read/write starting with DML (the begin inlined in ExecuteSql), then a query read to the
   *       end, another update, commit;
   *   <li>read/write starting with a query (the begin inlined in ExecuteStreamingSql), an update,
   *       commit;
   *   <li>read/write with an explicit BeginTransaction: its first statement fails, which makes the
   *       client retry the transaction with BeginTransaction, then the statements, then commit;
   *   <li>multi-use read-only: BeginTransaction, then 3 queries.
   * </ul>
   *
   * A run meets the bound when no transaction attempt has calls on two connections.
   */
  @Test
  void transactionsStayOnOneConnectionInEveryRun() throws Exception {
    List<Affinity> stock = new ArrayList<>();
    List<Affinity> tuned = new ArrayList<>();
    for (int run = 0; run < TRANSACTION_RUNS; run++) {
      stock.add(measure(false, SingleUseDistributionTest::transactions));
      tuned.add(measureTuned(SingleUseDistributionTest::transactions).value());
    }
    System.out.printf(
        "[routing %s] transactions (16 from 8 threads + single-use traffic), %d runs: stock runs"
            + " without a split=%d (split attempts per run %s) | tuned runs without a split=%d"
            + " (split attempts per run %s); tuned calls per attempt, last run: %s%n",
        VERSION,
        TRANSACTION_RUNS,
        stock.stream().filter((affinity) -> affinity.split().isEmpty()).count(),
        stock.stream().map((affinity) -> affinity.split().size()).toList(),
        tuned.stream().filter((affinity) -> affinity.split().isEmpty()).count(),
        tuned.stream().map((affinity) -> affinity.split().size()).toList(),
        tuned.get(tuned.size() - 1).callsPerGroup());
    stock.stream()
        .flatMap((affinity) -> affinity.split().stream())
        .limit(3)
        .forEach((split) -> System.out.printf("[routing %s] stock split: %s%n", VERSION, split));
    tuned.stream()
        .flatMap((affinity) -> affinity.split().stream())
        .forEach((split) -> System.out.printf("[routing %s] tuned split: %s%n", VERSION, split));

    for (Affinity affinity : tuned) {
      assertThat(affinity.transactions()).as("tuned: transactions the server saw").isEqualTo(16);
      assertThat(affinity.explicitBegins())
          .as("tuned: explicit BeginTransaction calls (4 read/write, 4 read-only)")
          .isGreaterThanOrEqualTo(8);
    }
    assertThat(tuned.stream().filter((affinity) -> affinity.split().isEmpty()).count())
        .as("tuned runs in which no transaction's calls hit two connections, of %d",
            TRANSACTION_RUNS)
        .isEqualTo(TRANSACTION_RUNS);
  }

  private static Affinity transactions(Subject subject) {
    withSingleUseTraffic(
        subject,
        () ->
            concurrentTasks(
                8,
                16,
                (index) -> {
                  switch (index % 4) {
                    case 0 -> readWrite(subject, "dml-" + index, (tx) -> {
                      tx.executeUpdate(Statement.of(UPDATE));
                      query(tx);
                      tx.executeUpdate(Statement.of(UPDATE));
                    });
                    case 1 -> readWrite(subject, "query-" + index, (tx) -> {
                      query(tx);
                      tx.executeUpdate(Statement.of(UPDATE));
                    });
                    case 2 -> readWrite(subject, "begin-" + index, (tx) -> {
                      try {
                        tx.executeUpdate(Statement.of(INVALID_UPDATE));
                      } catch (SpannerException expectedFailure) {
                        // The explicit begin comes with the retry this failure causes.
                      }
                      tx.executeUpdate(Statement.of(UPDATE));
                      query(tx);
                    });
                    default -> readOnly(subject, index);
                  }
                }));
    List<Call> calls = subject.server.calls();
    return Affinity.of(
        calls,
        SingleUseDistributionTest::transactionOf,
        SingleUseDistributionTest::beginsTransaction,
        explicitBegins(calls));
  }

  @FunctionalInterface
  private interface Work {
    void run(TransactionContext tx);
  }

  private static void readWrite(Subject subject, String tag, Work work) {
    subject
        .client
        .readWriteTransaction(Options.tag(tag))
        .run(
            (tx) -> {
              work.run(tx);
              return null;
            });
  }

  private static void query(TransactionContext tx) {
    try (ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT))) {
      drain(rs);
    }
  }

  /** A read-only transaction whose BeginTransaction is told apart by its staleness. */
  private static void readOnly(Subject subject, int index) {
    try (ReadOnlyTransaction tx =
        subject.client.readOnlyTransaction(
            TimestampBound.ofExactStaleness(100 + index, TimeUnit.SECONDS))) {
      for (int j = 0; j < 3; j++) {
        try (ResultSet rs =
            tx.executeQuery(Statement.of(POINT_SELECT), Options.tag("ro-" + index))) {
          drain(rs);
        }
      }
    }
  }

  /** The transaction a call belongs to: its transaction tag, request tag or staleness. */
  private static String transactionOf(Call call) {
    if (call.request() instanceof BeginTransactionRequest begin) {
      if (begin.getOptions().hasReadOnly()) {
        return "ro-" + (begin.getOptions().getReadOnly().getExactStaleness().getSeconds() - 100);
      }
      String tag = begin.getRequestOptions().getTransactionTag();
      return tag.isEmpty() ? null : tag;
    }
    String tag = call.transactionTag();
    if (!tag.isEmpty()) {
      return tag;
    }
    tag = call.requestTag();
    return tag.startsWith("ro-") ? tag : null;
  }

  // ---------------------------------------------------------------------------------------------
  // 4. Only single-use reads are routed
  // ---------------------------------------------------------------------------------------------

  @Test
  void onlySingleUseRequestsAreRouted() throws Exception {
    try (Subject subject = Subject.open(true)) {
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

      // What the server saw: the requests that ran in a single-use read-only transaction.
      List<Call> requests =
          subject.server.calls().stream()
              .filter(
                  (call) ->
                      call.request() instanceof ExecuteSqlRequest
                          || call.request() instanceof ReadRequest)
              .toList();
      long singleUseOnServer =
          requests.stream().filter(SingleUseDistributionTest::isSingleUse).count();
      System.out.printf(
          "[routing %s] selector detection: single-use requests=%d (server saw %d) other"
              + " ExecuteSql/Read requests=%d routed=%d (after single-use only: %d)%n",
          VERSION,
          singleUse,
          singleUseOnServer,
          requests.size() - singleUseOnServer,
          routed,
          routedAfterSingleUse);

      assertThat(singleUseOnServer)
          .as("single-use requests the server saw")
          .isEqualTo(singleUse);
      assertThat(requests.size() - singleUseOnServer)
          .as("requests in read/write and multi-use read-only transactions the server saw")
          .isEqualTo(3L * 3 + 3L * 3);
      if (routes()) {
        assertThat(routedAfterSingleUse)
            .as("routed count after the single-use requests")
            .isEqualTo(singleUse);
        assertThat(routed)
            .as("routed count: transactional requests must not be routed")
            .isEqualTo(singleUse);
      } else {
        assertThat(routed).as("routed count when the client routes natively").isZero();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // 5. A pool the picker cannot set up
  // ---------------------------------------------------------------------------------------------

  /**
   * grpc-gcp's dynamic pool creates channels as it is built and scales them itself, so keys cannot
   * be bound one per channel: the feature must say so, and the client must route as stock. On
   * 6.119 the client's own least-busy pick stays in charge (native); on 6.113 it is unsupported.
   */
  @Test
  void poolThatCannotBeSetUpLeavesRoutingToTheClient() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      SpannerOptions.Builder builder =
          SpannerOptions.newBuilder()
              .setProjectId("test-project")
              .setHost("http://127.0.0.1:" + server.port())
              .setChannelConfigurator(io.grpc.ManagedChannelBuilder::usePlaintext)
              .setCredentials(com.google.cloud.NoCredentials.getInstance())
              .enableDynamicChannelPool();
      SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
      try (Spanner spanner = builder.build().getService()) {
        FeatureState feature = state.feature(Feature.SINGLE_USE_DISTRIBUTION);
        System.out.printf(
            "[routing %s] dynamic pool: single-use-distribution=%s%n", VERSION, feature);
        assertThat(feature.status())
            .as("single-use distribution on a dynamic pool")
            .isEqualTo(
                VERSION.startsWith("6.113.")
                    ? FeatureState.Status.UNSUPPORTED
                    : FeatureState.Status.NATIVE);
        assertThat(feature.reason()).contains("channel pool");
        DatabaseClient client = spanner.getDatabaseClient(DATABASE);
        for (int i = 0; i < 20; i++) {
          try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
            assertThat(rs.next()).as("point select returns its row").isTrue();
          }
        }
        assertThat(state.singleUseRoutedCount()).as("single-use reads routed").isZero();
        assertThat(server.calls(STREAMING_SQL)).hasSize(20);
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Assertions and figures
  // ---------------------------------------------------------------------------------------------

  /** Where routing is on every single-use read is routed; where it is native, none is. */
  private static void assertRouted(Subject.Result<?> tuned) {
    if (routes()) {
      assertThat(tuned.routed()).as("single-use reads routed by spanner-tuning").isPositive();
    } else {
      assertThat(tuned.routed()).as("single-use reads routed by spanner-tuning").isZero();
    }
  }

  private static long collapsed(List<Spread> runs) {
    return runs.stream()
        .filter((spread) -> !spread.perConnection().isEmpty()
            && spread.perConnection().get(0) > STREAM_LIMIT)
        .count();
  }

  private static String ratios(List<Spread> runs) {
    return runs.stream()
        .map((spread) -> String.format(Locale.ROOT, "%.2f", spread.busiestOverMean()))
        .collect(Collectors.joining(" ", "[", "]"));
  }

  private static void printRuns(String name, List<Spread> stock, List<Spread> tuned) {
    System.out.printf(
        "[routing %s] %s, busiest/mean of %d runs: stock %s | tuned %s%n",
        VERSION, name, stock.size(), ratios(stock), ratios(tuned));
  }

  private static void print(String name, Spread stock, Spread tuned) {
    System.out.printf(
        "[routing %s] %s: stock connections=%d busiest/mean=%.2f per-connection=%s | tuned"
            + " connections=%d busiest/mean=%.2f per-connection=%s%n",
        VERSION,
        name,
        stock.connectionsUsed(),
        stock.busiestOverMean(),
        stock.perConnection(),
        tuned.connectionsUsed(),
        tuned.busiestOverMean(),
        tuned.perConnection());
  }

  /**
   * How calls spread over connections. The mean counts all {@value #CHANNELS} channels, so a
   * channel that got nothing (and may not even have connected) counts as zero.
   */
  record Spread(
      int total, int connectionsUsed, double busiestOverMean, List<Integer> perConnection) {

    static Spread of(List<Call> calls, Collection<SocketAddress> connections) {
      List<Integer> perConnection =
          MockSpannerServer.perConnection(calls, connections).stream()
              .filter((count) -> count > 0)
              .toList();
      int busiest = perConnection.isEmpty() ? 0 : perConnection.get(0);
      double mean = calls.size() / (double) CHANNELS;
      return new Spread(
          calls.size(), perConnection.size(), (mean > 0) ? busiest / mean : 0.0, perConnection);
    }
  }

  record Group(int calls, Set<SocketAddress> connections) {}

  /**
   * Calls grouped per transaction attempt, and the attempts that hit more than one connection. A
   * transaction that is retried runs again as a new transaction under the same tag; each attempt
   * begins with a request that begins a transaction, and is its own group ("tx-3", "tx-3 #2").
   */
  record Affinity(
      Map<String, Group> groups, int transactions, List<String> split, int explicitBegins) {

    static Affinity of(
        List<Call> calls,
        Function<Call, String> transactionOf,
        Predicate<Call> beginsAttempt,
        int explicitBegins) {
      Map<String, Integer> attempts = new HashMap<>();
      Map<String, List<Call>> byGroup = new TreeMap<>();
      for (Call call : calls) {
        String transaction = transactionOf.apply(call);
        if (transaction == null) {
          continue;
        }
        int attempt =
            beginsAttempt.test(call)
                ? attempts.merge(transaction, 1, Integer::sum)
                : attempts.getOrDefault(transaction, 1);
        String group = (attempt > 1) ? transaction + " #" + attempt : transaction;
        byGroup.computeIfAbsent(group, (key) -> new ArrayList<>()).add(call);
      }
      Map<String, Group> groups = new TreeMap<>();
      byGroup.forEach(
          (key, list) ->
              groups.put(
                  key,
                  new Group(
                      list.size(),
                      list.stream().map(Call::connection).collect(Collectors.toSet()))));
      List<String> split =
          groups.entrySet().stream()
              .filter((entry) -> entry.getValue().connections().size() > 1)
              .map(
                  (entry) ->
                      entry.getKey()
                          + " on "
                          + entry.getValue().connections().size()
                          + " connections: "
                          + byGroup.get(entry.getKey()).stream()
                              .map((call) -> call.method() + "@" + call.connection())
                              .toList())
              .toList();
      int transactions =
          (int)
              byGroup.values().stream()
                  .map((list) -> transactionOf.apply(list.get(0)))
                  .distinct()
                  .count();
      return new Affinity(groups, transactions, split, explicitBegins);
    }

    int retries() {
      return this.groups.size() - this.transactions;
    }

    String callsPerGroup() {
      return this.groups.values().stream()
          .map(Group::calls)
          .collect(Collectors.groupingBy((count) -> count, TreeMap::new, Collectors.counting()))
          .toString();
    }
  }

  /** Whether a request begins a transaction, inline or explicitly. */
  private static boolean beginsTransaction(Call call) {
    if (call.request() instanceof BeginTransactionRequest) {
      return true;
    }
    if (call.request() instanceof ExecuteSqlRequest sql) {
      return sql.getTransaction().hasBegin();
    }
    if (call.request() instanceof ReadRequest read) {
      return read.getTransaction().hasBegin();
    }
    return false;
  }

  /** The transaction tag of any tagged request, BeginTransaction included. */
  private static String transactionTag(Call call) {
    if (call.request() instanceof BeginTransactionRequest begin) {
      return begin.getRequestOptions().getTransactionTag();
    }
    return call.transactionTag();
  }

  private static int explicitBegins(List<Call> calls) {
    return (int) calls.stream().filter((call) -> call.method().equals("BeginTransaction")).count();
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

  // ---------------------------------------------------------------------------------------------
  // Clients and workloads
  // ---------------------------------------------------------------------------------------------

  /**
   * A client with its own production-like mock server ({@link MockSpannerServer#start()}: 2 to 5
   * ms per data-plane call, scheduled without holding a thread, {@code last} on the final message,
   * trailers 1 ms later): stock, or tuned with {@link SpannerTuning#defaults()}, whose state is
   * asserted against the one the build expects before anything else.
   */
  private static final class Subject implements AutoCloseable {

    /** What a workload returned, and how many single-use reads spanner-tuning routed in it. */
    record Result<T>(T value, long routed) {}

    final MockSpannerServer server;

    final Spanner spanner;

    final DatabaseClient client;

    final SpannerTuningState state;

    private Subject(MockSpannerServer server, Spanner spanner, SpannerTuningState state) {
      this.server = server;
      this.spanner = spanner;
      this.client = spanner.getDatabaseClient(DATABASE);
      this.state = state;
    }

    static Subject open(boolean tuned) throws Exception {
      MockSpannerServer server = MockSpannerServer.start();
      try {
        server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
        server
            .mock()
            .putStatementResult(
                StatementResult.exception(
                    Statement.of(INVALID_UPDATE),
                    Status.INVALID_ARGUMENT
                        .withDescription("no column nope")
                        .asRuntimeException()));
        server
            .mock()
            .putStatementResult(StatementResult.read(TABLE, READ_KEYS, READ_COLUMNS, pointRow()));
        SpannerOptions.Builder builder = server.clientOptions(CHANNELS);
        SpannerTuningState state = tuned ? SpannerTuning.defaults().applyTo(builder) : null;
        Spanner spanner = builder.build().getService();
        if (tuned) {
          // The state is final once the client's rpc exists, which getService() creates.
          assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
              .as("tuned client's single-use distribution (%s)", state)
              .isEqualTo(expected);
        }
        return new Subject(server, spanner, state);
      } catch (Exception | AssertionError ex) {
        server.close();
        throw ex;
      }
    }

    void pointSelect() {
      try (ResultSet rs = this.client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
        assertThat(rs.next()).as("point select returns its row").isTrue();
      }
    }

    @Override
    public void close() throws Exception {
      try {
        this.spanner.close();
      } finally {
        this.server.close();
      }
    }
  }

  /** Runs a workload on a fresh stock client and closes it. */
  private static <T> T measure(boolean tuned, Function<Subject, T> workload) throws Exception {
    try (Subject subject = Subject.open(tuned)) {
      return workload.apply(subject);
    }
  }

  /** Runs a workload on a fresh tuned client, whose state is asserted first, and closes it. */
  private static <T> Subject.Result<T> measureTuned(Function<Subject, T> workload)
      throws Exception {
    try (Subject subject = Subject.open(true)) {
      T value = workload.apply(subject);
      return new Subject.Result<>(value, subject.state.singleUseRoutedCount());
    }
  }

  /** Runs the given work while 8 other threads keep sending single-use point selects. */
  private static void withSingleUseTraffic(Subject subject, Runnable work) {
    AtomicBoolean done = new AtomicBoolean();
    AtomicInteger sent = new AtomicInteger();
    ExecutorService background = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        futures.add(
            background.submit(
                () -> {
                  while (!done.get()) {
                    subject.pointSelect();
                    sent.incrementAndGet();
                  }
                }));
      }
      try {
        work.run();
      } finally {
        done.set(true);
      }
      await(futures);
      assertThat(sent.get()).as("single-use reads sent beside the transactions").isPositive();
    } finally {
      shutdown(background);
    }
  }

  private static void drain(ResultSet rs) {
    int rows = 0;
    while (rs.next()) {
      rows++;
    }
    assertThat(rows).as("rows").isEqualTo(1);
  }

  private static com.google.spanner.v1.ResultSet pointRow() {
    return com.google.spanner.v1.ResultSet.newBuilder()
        .setMetadata(
            ResultSetMetadata.newBuilder()
                .setRowType(
                    StructType.newBuilder()
                        .addFields(field("id", TypeCode.INT64))
                        .addFields(field("name", TypeCode.STRING))))
        .addRows(
            ListValue.newBuilder()
                .addValues(Value.newBuilder().setStringValue("1"))
                .addValues(Value.newBuilder().setStringValue("Alice")))
        .build();
  }

  private static StructType.Field field(String name, TypeCode code) {
    return StructType.Field.newBuilder()
        .setName(name)
        .setType(Type.newBuilder().setCode(code))
        .build();
  }

  @FunctionalInterface
  interface Task {
    void run(int thread, int iteration) throws Exception;
  }

  @FunctionalInterface
  interface IndexedTask {
    void run(int index) throws Exception;
  }

  /**
   * {@code threads} threads, released together, each running the task {@code perThread} times.
   */
  private static void concurrently(int threads, int perThread, Task task) {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        futures.add(
            pool.submit(
                () -> {
                  ready.countDown();
                  go.await();
                  for (int i = 0; i < perThread; i++) {
                    task.run(thread, i);
                  }
                  return null;
                }));
      }
      assertThat(ready.await(30, TimeUnit.SECONDS)).as("%d threads ready", threads).isTrue();
      go.countDown();
      await(futures);
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", ex);
    } finally {
      shutdown(pool);
    }
  }

  /** {@code tasks} indexed tasks on {@code threads} threads, released together. */
  private static void concurrentTasks(int threads, int tasks, IndexedTask task) {
    AtomicInteger next = new AtomicInteger();
    concurrently(
        threads,
        1,
        (thread, iteration) -> {
          int index;
          while ((index = next.getAndIncrement()) < tasks) {
            task.run(index);
          }
        });
  }

  private static void await(List<Future<?>> futures) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WORKLOAD_TIMEOUT_SECONDS);
    for (Future<?> future : futures) {
      try {
        future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (ExecutionException ex) {
        throw new AssertionError("workload failed: " + ex.getCause(), ex.getCause());
      } catch (TimeoutException ex) {
        throw new AssertionError(
            "workload did not finish within " + WORKLOAD_TIMEOUT_SECONDS + " s", ex);
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", ex);
      }
    }
  }

  private static void shutdown(ExecutorService pool) {
    pool.shutdownNow();
    try {
      if (!pool.awaitTermination(10, TimeUnit.SECONDS)) {
        throw new AssertionError("worker threads did not stop");
      }
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
    }
  }
}
