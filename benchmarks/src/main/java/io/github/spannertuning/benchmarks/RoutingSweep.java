package io.github.spannertuning.benchmarks;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.jdbc.SpannerPool;
import io.github.spannertuning.client.BenchmarkTuning;
import io.github.spannertuning.client.ClientVersions;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.jdbc.SpannerJdbcTuning;
import io.github.spannertuning.jdbc.TunedJdbcClient;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import io.github.spannertuning.testing.StatementResult;
import java.net.SocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.HdrHistogram.Histogram;

/**
 * Where calls go when one connection is slower, and what that costs the application: stock and
 * tuned side by side in one run, on the client line of the classpath. Three parts:
 *
 * <ul>
 *   <li><b>sweep</b>: closed-loop single-use point selects with 1, 4, 16 and 64 calls in flight per
 *       connection ({@code --levels}). Each call takes {@code --sweep-ms-per-call} times the calls
 *       in flight per connection on the server, so the rate stays the same at every level and the
 *       client's cores are not what limits it; one connection answers {@code --degrade-ms} later.
 *       Routing variants ({@code --variants}) run beside stock and tuned to choose the rule's
 *       constants.
 *   <li><b>transactions</b>: read-only transactions of one read and read/write transactions of a
 *       query and an update, half each, from {@code --tx-threads} threads, 2 to 5 ms per call, one
 *       connection {@code --degrade-ms} later; on the client's own API (as spring-cloud-gcp's
 *       {@code DatabaseClient} runs them) and through Google's JDBC driver (a read-only transaction
 *       as JPA's {@code Transactional(readOnly = true)} opens one).
 * </ul>
 *
 * <p>The frontend is the project's {@link MockSpannerServer} in this JVM: streams served in
 * parallel, {@code last} on the final message, trailers 1 ms later, 100 streams per connection.
 * Each window gets a fresh server and client, warmed for {@code --warmup-s}, slowed, given {@code
 * --settle-s} to learn it, then measured for {@code --window-s}. Variants alternate their order
 * from round to round. Beside each window: the machine's CPU steal and the CPU time of other
 * processes over it, from {@code /proc/stat}; a window whose steal is over 5 % is marked.
 *
 * <pre>
 * java -cp ... io.github.spannertuning.benchmarks.RoutingSweep --out docs/routing-6.119.md
 * </pre>
 */
public final class RoutingSweep {

  private static final DatabaseId DATABASE = DatabaseId.of("bench-project", "i", "d");

  private static final String UPDATE = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  private static final Set<String> TRANSACTION_METHODS =
      Set.of("ExecuteStreamingSql", "ExecuteSql", "BeginTransaction", "Commit");

  private final Map<String, String> flags;

  private final int channels;

  private final int rounds;

  private final Duration warmup;

  private final Duration settle;

  private final Duration window;

  private final long degradeMillis;

  private final StringBuilder report = new StringBuilder();

  private RoutingSweep(Map<String, String> flags) {
    this.flags = flags;
    this.channels = Integer.parseInt(flags.get("channels"));
    this.rounds = Integer.parseInt(flags.get("rounds"));
    this.warmup = Duration.ofMillis((long) (Double.parseDouble(flags.get("warmup-s")) * 1000));
    this.settle = Duration.ofMillis((long) (Double.parseDouble(flags.get("settle-s")) * 1000));
    this.window = Duration.ofMillis((long) (Double.parseDouble(flags.get("window-s")) * 1000));
    this.degradeMillis = Long.parseLong(flags.get("degrade-ms"));
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = new LinkedHashMap<>();
    flags.put("out", "benchmarks/target/routing.md");
    flags.put("command", "");
    flags.put("parts", "sweep,transactions");
    flags.put("levels", "1,4,16,64");
    flags.put("variants", "stock,tuned,band-1,lowest");
    flags.put("sweep-ms-per-call", "10");
    flags.put("tx-threads", "32");
    flags.put("channels", "8");
    flags.put("rounds", "2");
    flags.put("warmup-s", "2");
    flags.put("settle-s", "1");
    flags.put("window-s", "5");
    flags.put("degrade-ms", "20");
    for (int i = 0; i < args.length; i++) {
      String name = args[i].startsWith("--") ? args[i].substring(2) : null;
      if (name == null || !flags.containsKey(name) || i + 1 == args.length) {
        throw new IllegalArgumentException(
            "Unknown flag or missing value: '" + args[i] + "'; flags: " + flags.keySet());
      }
      flags.put(name, args[++i]);
    }
    new RoutingSweep(flags).run();
  }

  private void run() throws Exception {
    line(
        "# Routing under load: stock and tuned, google-cloud-spanner "
            + ClientVersions.detected().spanner());
    line("");
    if (!this.flags.get("command").isEmpty()) {
      line("Command: `" + this.flags.get("command") + "`  ");
    }
    line(
        "Flags: `"
            + this.flags.entrySet().stream()
                .filter((e) -> !e.getKey().equals("command"))
                .map((e) -> "--" + e.getKey() + " " + e.getValue())
                .collect(Collectors.joining(" "))
            + "`  ");
    line(
        "Machine: "
            + Runtime.getRuntime().availableProcessors()
            + " cores ("
            + MachineCpu.model()
            + "), Java "
            + System.getProperty("java.version")
            + ", "
            + ClientVersions.detected()
            + "  ");
    line(
        "Frontend: MockSpannerServer in the same JVM (simulated; streams served in parallel,"
            + " `last` on the final message, trailers 1 ms later, 100 streams per connection).");
    line("");
    List<String> parts = Arrays.asList(this.flags.get("parts").split(","));
    if (parts.contains("sweep")) {
      sweep();
    }
    if (parts.contains("transactions")) {
      transactions();
    }
    Path out = Paths.get(this.flags.get("out"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, this.report);
    System.out.println("Report: " + out);
  }

  // ---- the concurrency sweep ----

  private void sweep() throws Exception {
    int msPerCall = Integer.parseInt(this.flags.get("sweep-ms-per-call"));
    List<String> variants = Arrays.asList(this.flags.get("variants").split(","));
    line(
        "## Concurrency sweep: single-use point selects, one connection +"
            + this.degradeMillis
            + " ms");
    line("");
    line(
        "Closed loop, "
            + this.channels
            + " channels; each call takes "
            + msPerCall
            + " ms times"
            + " the calls in flight per connection on the server (uniform, +1 ms), so every level runs"
            + " at about "
            + (1000 * this.channels / msPerCall)
            + " calls/s and the client's cores are"
            + " not what limits it. *Share*: the slowed connection's calls over its even share."
            + " Figures are medians of "
            + this.rounds
            + " rounds; *steal* and *others* are the"
            + " largest over the rounds (machine CPU steal, and other processes' CPU, as a share of"
            + " the machine), `!` where steal was over 5 %.");
    line("");
    line(
        "| in flight / connection | service ms | variant | share | P50 ms | P99 ms | calls/s |"
            + " failed | steal | others |");
    line("|---|---|---|---|---|---|---|---|---|---|");
    for (String level : this.flags.get("levels").split(",")) {
      int perConnection = Integer.parseInt(level.trim());
      int threads = perConnection * this.channels;
      Duration service = Duration.ofMillis((long) msPerCall * perConnection);
      Map<String, List<Window>> byVariant = new LinkedHashMap<>();
      for (int round = 0; round < this.rounds; round++) {
        List<String> order = new ArrayList<>(variants);
        if (round % 2 == 1) {
          java.util.Collections.reverse(order);
        }
        for (String variant : order) {
          Window measured = singleUseWindow(variant, threads, service);
          System.out.printf(
              "sweep %d/conn %s round %d: %s%n", perConnection, variant, round, measured);
          byVariant.computeIfAbsent(variant, (v) -> new ArrayList<>()).add(measured);
        }
      }
      for (String variant : variants) {
        List<Window> windows = byVariant.get(variant);
        line(
            String.format(
                "| %d | %d | %s | %s |",
                perConnection, service.toMillis(), variant, Window.summary(windows)));
      }
    }
    line("");
    line(
        "Variants: `tuned` is the starter's default rule (hot above half again the pool's mean"
            + " calls in flight, a band of a quarter over the least expected latency); `band-<n>` a"
            + " band of 1/2^n (`band-1`: half again), `hot-<n>` hot above 1/2^n over the mean, with"
            + " the default band; `lowest` no band: the lowest expected latency among channels not"
            + " hot, as in Prequal.");
    line("");
  }

  private Window singleUseWindow(String variant, int threads, Duration service) throws Exception {
    MockSpannerServer server =
        MockSpannerServer.builder()
            .serviceTime(ServiceTime.uniform(service, service.plusMillis(1)))
            .start();
    try (Client client = Client.open(server, variant, this.channels)) {
      Load.closedLoop(threads, this.warmup, client::pointSelect);
      SocketAddress slow = busiest(server.calls("ExecuteStreamingSql"));
      server.slowDown(slow, this.degradeMillis);
      Load.closedLoop(threads, this.settle, client::pointSelect);
      server.reset();
      MachineCpu before = MachineCpu.now();
      Load load = Load.closedLoop(threads, this.window, client::pointSelect);
      MachineCpu after = MachineCpu.now();
      return new Window(
          shareOf(slow, server.calls("ExecuteStreamingSql")), load, before.until(after, 0));
    } finally {
      server.close();
    }
  }

  // ---- transactions ----

  private void transactions() throws Exception {
    int threads = Integer.parseInt(this.flags.get("tx-threads"));
    line("## Transactions, one connection +" + this.degradeMillis + " ms");
    line("");
    line(
        threads
            + " threads, "
            + this.channels
            + " channels, 2 to 5 ms per call; half read-only"
            + " transactions of one point select, half read/write transactions of a point select and"
            + " an update. *Share*: the slowed connection's transaction calls (BeginTransaction,"
            + " queries, updates, commits) over its even share. Latency is per transaction. Medians of "
            + this.rounds
            + " rounds.");
    line("");
    line("| path | variant | share | P50 ms | P99 ms | transactions/s | failed | steal | others |");
    line("|---|---|---|---|---|---|---|---|---|");
    for (String path : List.of("client", "jdbc")) {
      Map<String, List<Window>> byVariant = new LinkedHashMap<>();
      for (int round = 0; round < this.rounds; round++) {
        List<String> order =
            (round % 2 == 0) ? List.of("stock", "tuned") : List.of("tuned", "stock");
        for (String variant : order) {
          Window measured = transactionWindow(path, variant, threads);
          System.out.printf("transactions %s %s round %d: %s%n", path, variant, round, measured);
          byVariant.computeIfAbsent(variant, (v) -> new ArrayList<>()).add(measured);
        }
      }
      for (Map.Entry<String, List<Window>> each : byVariant.entrySet()) {
        line(
            String.format(
                "| %s | %s | %s |", path, each.getKey(), Window.summary(each.getValue())));
      }
    }
    line("");
  }

  private Window transactionWindow(String path, String variant, int threads) throws Exception {
    MockSpannerServer server = MockSpannerServer.start();
    server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
    try (Client client =
        path.equals("jdbc")
            ? JdbcClient.open(server, variant, this.channels)
            : Client.open(server, variant, this.channels)) {
      Load.closedLoop(threads, this.warmup, client::transaction);
      SocketAddress slow = busiest(transactionCalls(server));
      server.slowDown(slow, this.degradeMillis);
      Load.closedLoop(threads, this.settle, client::transaction);
      server.reset();
      MachineCpu before = MachineCpu.now();
      Load load = Load.closedLoop(threads, this.window, client::transaction);
      MachineCpu after = MachineCpu.now();
      return new Window(shareOf(slow, transactionCalls(server)), load, before.until(after, 0));
    } finally {
      server.close();
    }
  }

  private static List<Call> transactionCalls(MockSpannerServer server) {
    return server.calls().stream()
        .filter((call) -> TRANSACTION_METHODS.contains(call.method()))
        .toList();
  }

  // ---- pieces ----

  private static SocketAddress busiest(List<Call> calls) {
    return calls.stream()
        .collect(Collectors.groupingBy(Call::connection, Collectors.counting()))
        .entrySet()
        .stream()
        .max(Map.Entry.comparingByValue())
        .orElseThrow(() -> new IllegalStateException("no call reached the server"))
        .getKey();
  }

  private double shareOf(SocketAddress connection, List<Call> calls) {
    long on = calls.stream().filter((c) -> c.connection().equals(connection)).count();
    return on / (calls.size() / (double) this.channels);
  }

  private void line(String text) {
    this.report.append(text).append('\n');
    System.out.println(text);
  }

  /** A stock or tuned client on the server, running point selects and transactions. */
  private static class Client implements AutoCloseable {

    private final Spanner spanner;

    private final DatabaseClient database;

    Client(Spanner spanner) {
      this.spanner = spanner;
      this.database = (spanner == null) ? null : spanner.getDatabaseClient(DATABASE);
    }

    static Client open(MockSpannerServer server, String variant, int channels) {
      SpannerOptions.Builder builder = server.clientOptions(channels);
      SpannerTuning.Builder tuning = SpannerTuning.newBuilder().logWhenBuilt(false);
      if (variant.equals("stock")) {
        return new Client(builder.build().getService());
      }
      if (variant.startsWith("band-")) {
        BenchmarkTuning.routingRule(tuning, 1, Integer.parseInt(variant.substring(5)));
      } else if (variant.startsWith("hot-")) {
        BenchmarkTuning.routingRule(tuning, Integer.parseInt(variant.substring(4)), 2);
      } else if (variant.equals("lowest")) {
        BenchmarkTuning.routingRule(tuning, 1, 16);
      } else if (!variant.equals("tuned")) {
        throw new IllegalArgumentException(
            "--variants: unknown variant '"
                + variant
                + "'; use stock, tuned, band-<shift>, hot-<shift> or lowest");
      }
      tuning.build().applyTo(builder);
      return new Client(builder.build().getService());
    }

    void pointSelect() {
      try (ResultSet rs =
          this.database.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        if (!rs.next()) {
          throw new IllegalStateException("no row");
        }
      }
    }

    void transaction(long index) {
      if (index % 2 == 0) {
        try (ReadOnlyTransaction tx = this.database.readOnlyTransaction();
            ResultSet rs = tx.executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
          if (!rs.next()) {
            throw new IllegalStateException("no row");
          }
        }
      } else {
        this.database
            .readWriteTransaction()
            .run(
                (tx) -> {
                  try (ResultSet rs =
                      tx.executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
                    rs.next();
                  }
                  return tx.executeUpdate(Statement.of(UPDATE));
                });
      }
    }

    @Override
    public void close() {
      this.spanner.close();
    }
  }

  /**
   * The same transactions through Google's JDBC driver, each thread on its own connection in manual
   * commit: read-only ones as JPA opens them ({@code setReadOnly(true)}), read/write ones with a
   * query and an update. Tuned is the driver's client tuned before its first connection.
   */
  private static final class JdbcClient extends Client {

    private final String url;

    private final TunedJdbcClient tuned;

    private final List<Connection> opened =
        java.util.Collections.synchronizedList(new ArrayList<>());

    private final ThreadLocal<Connection> connection = new ThreadLocal<>();

    private JdbcClient(String url, TunedJdbcClient tuned) {
      super(null);
      this.url = url;
      this.tuned = tuned;
    }

    static JdbcClient open(MockSpannerServer server, String variant, int channels) {
      String url =
          "jdbc:cloudspanner://127.0.0.1:"
              + server.port()
              + "/projects/bench-project/instances/i/databases/d;usePlainText=true;numChannels="
              + channels;
      if (variant.equals("stock")) {
        return new JdbcClient(url, null);
      }
      url += ";userAgent=sp-jdbc";
      TunedJdbcClient tuned =
          SpannerJdbcTuning.tune(
              url, new Properties(), SpannerTuning.newBuilder().logWhenBuilt(false).build());
      if (!tuned.isTuned()) {
        tuned.close();
        throw new IllegalStateException("not tuned: " + tuned.unsupportedReason().orElse("?"));
      }
      return new JdbcClient(url, tuned);
    }

    private Connection connection() throws Exception {
      Connection mine = this.connection.get();
      if (mine == null) {
        mine = DriverManager.getConnection(this.url);
        mine.setAutoCommit(false);
        this.opened.add(mine);
        this.connection.set(mine);
      }
      return mine;
    }

    @Override
    void transaction(long index) {
      try {
        Connection mine = connection();
        mine.setReadOnly(index % 2 == 0);
        try (PreparedStatement select = mine.prepareStatement(MockSpannerServer.POINT_SELECT);
            java.sql.ResultSet rows = select.executeQuery()) {
          rows.next();
        }
        if (index % 2 == 1) {
          try (PreparedStatement update = mine.prepareStatement(UPDATE)) {
            update.executeUpdate();
          }
        }
        mine.commit();
      } catch (Exception ex) {
        throw new IllegalStateException(ex.toString(), ex);
      }
    }

    @Override
    public void close() {
      for (Connection each : this.opened) {
        try {
          each.close();
        } catch (Exception ex) {
          // The window is over; the next one opens its own.
        }
      }
      if (this.tuned != null) {
        this.tuned.close();
      }
      SpannerPool.closeSpannerPool();
    }
  }

  /** Calls made in a window, their latencies and failures. */
  record Load(long ok, long failed, double seconds, double p50Millis, double p99Millis) {

    interface Task {
      void run(long index) throws Exception;
    }

    interface Simple {
      void run() throws Exception;
    }

    static Load closedLoop(int threads, Duration time, Simple task) throws Exception {
      return closedLoop(threads, time, (Task) (index) -> task.run());
    }

    static Load closedLoop(int threads, Duration time, Task task) throws Exception {
      Histogram latency = new Histogram(3);
      long[] failed = new long[1];
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      long start = System.nanoTime();
      long end = start + time.toNanos();
      try {
        List<Future<?>> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          int thread = t;
          running.add(
              pool.submit(
                  () -> {
                    for (long i = thread; System.nanoTime() < end; i += threads) {
                      long begin = System.nanoTime();
                      try {
                        task.run(i);
                        long micros = Math.max(1, (System.nanoTime() - begin) / 1000);
                        synchronized (latency) {
                          latency.recordValue(micros);
                        }
                      } catch (Exception ex) {
                        synchronized (latency) {
                          failed[0]++;
                        }
                      }
                    }
                    return null;
                  }));
        }
        for (Future<?> each : running) {
          each.get(time.toSeconds() + 120, TimeUnit.SECONDS);
        }
      } finally {
        pool.shutdownNow();
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      synchronized (latency) {
        return new Load(
            latency.getTotalCount(),
            failed[0],
            seconds,
            latency.getValueAtPercentile(50) / 1000.0,
            latency.getValueAtPercentile(99) / 1000.0);
      }
    }
  }

  /** One measured window. */
  record Window(double share, Load load, MachineCpu.Share cpu) {

    @Override
    public String toString() {
      return String.format(
          "share %.2f, P50 %.1f ms, P99 %.1f ms, %.0f/s, %d failed, steal %.1f%%, others %.0f%%",
          this.share,
          this.load.p50Millis(),
          this.load.p99Millis(),
          this.load.ok() / this.load.seconds(),
          this.load.failed(),
          this.cpu.steal() * 100,
          this.cpu.others() * 100);
    }

    static String summary(List<Window> windows) {
      double steal = windows.stream().mapToDouble((w) -> w.cpu().steal()).max().orElse(0);
      double others = windows.stream().mapToDouble((w) -> w.cpu().others()).max().orElse(0);
      return String.format(
          "%.2f | %.1f | %.1f | %.0f | %d | %.1f %%%s | %.0f %%",
          median(windows, Window::share),
          median(windows, (w) -> w.load().p50Millis()),
          median(windows, (w) -> w.load().p99Millis()),
          median(windows, (w) -> w.load().ok() / w.load().seconds()),
          windows.stream().mapToLong((w) -> w.load().failed()).sum(),
          steal * 100,
          (steal > MachineCpu.Share.MARK) ? " !" : "",
          others * 100);
    }

    private static double median(
        List<Window> windows, java.util.function.ToDoubleFunction<Window> f) {
      double[] values = windows.stream().mapToDouble(f).sorted().toArray();
      int n = values.length;
      return (n % 2 == 1) ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    }
  }
}
