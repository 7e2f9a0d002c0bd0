package io.github.spannertuning.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.Statement;
import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ClientDescriptor;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.jdbc.app.JpaApplication;
import io.github.spannertuning.jdbc.app.SingerRepository;
import io.github.spannertuning.jdbc.app.SingerService;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Arrival;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.github.spannertuning.testing.StockAndTuned;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.SocketAddress;
import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A Spring Data JPA application on Google's JDBC driver and Hibernate dialect, with the starter
 * added and nothing else changed, against the mock server over {@code
 * jdbc:cloudspanner://localhost:PORT/...;usePlainText=true}: {@code last} on the final message, 2-5
 * ms per query. The pool size is set by {@code spanner.tuning.channels=6}, where the driver's own
 * is 4. The client line and the driver version are the build's ({@code -P client-6.113} runs JDBC
 * 2.35.5 on 6.113).
 */
@SpringBootTest(classes = JpaApplication.class)
class JdbcTuningIT {

  private static final String VERSION = System.getProperty("spanner-tuning.expected.jdbc-driver");

  private static final String FIND_BY_ID =
      "select s1_0.id,s1_0.name from singers s1_0 where s1_0.id=@p1";

  private static final String EXISTS_BY_NAME =
      "select s1_0.id from singers s1_0 where s1_0.name=@p1 limit @p2";

  private static final String ALL = "select s1_0.id,s1_0.name from singers s1_0";

  private static final String COUNT = "select count(*) from singers s1_0";

  private static final String UPDATE = "update singers set name=@p1 where id=@p2";

  private static final int CHANNELS = 6;

  private static final int THREADS = 16;

  /** The methods of a transaction's work, not of the session's. */
  private static final Set<String> TRANSACTION_METHODS =
      Set.of(
          "ExecuteStreamingSql",
          "ExecuteSql",
          "ExecuteBatchDml",
          "BeginTransaction",
          "Commit",
          "Rollback",
          "StreamingRead",
          "Read");

  static final MockSpannerServer SERVER = start();

  private static MockSpannerServer start() {
    try {
      MockSpannerServer server = MockSpannerServer.builder().countFrames().start();
      server
          .mock()
          .putStatementResult(
              StatementResult.query(
                  Statement.newBuilder(FIND_BY_ID).bind("p1").to(1L).build(),
                  ResultSets.pointRow()));
      server
          .mock()
          .putStatementResult(
              StatementResult.query(
                  Statement.newBuilder(EXISTS_BY_NAME)
                      .bind("p1")
                      .to("Alice")
                      .bind("p2")
                      .to(1L)
                      .build(),
                  ResultSets.int64Row("id", 1)));
      server
          .mock()
          .putStatementResult(StatementResult.query(Statement.of(ALL), ResultSets.pointRow()));
      server
          .mock()
          .putStatementResult(
              StatementResult.query(Statement.of(COUNT), ResultSets.int64Row("count", 1)));
      server
          .mock()
          .putStatementResult(
              StatementResult.update(
                  Statement.newBuilder(UPDATE).bind("p1").to("Bob").bind("p2").to(1L).build(), 1L));
      return server;
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }

  @DynamicPropertySource
  static void application(DynamicPropertyRegistry registry) {
    registry.add(
        "spring.datasource.url",
        () ->
            "jdbc:cloudspanner://localhost:"
                + SERVER.port()
                + "/projects/p/instances/i/databases/d;usePlainText=true");
    registry.add(
        "spring.datasource.driver-class-name", () -> "com.google.cloud.spanner.jdbc.JdbcDriver");
    registry.add("spring.datasource.hikari.maximum-pool-size", () -> THREADS);
    registry.add(
        "spring.jpa.database-platform", () -> "com.google.cloud.spanner.hibernate.SpannerDialect");
    registry.add("spring.jpa.open-in-view", () -> "false");
    registry.add("spring.cloud.gcp.spanner.enabled", () -> "false");
    registry.add("spring.cloud.gcp.core.enabled", () -> "false");
    registry.add("management.endpoints.web.exposure.include", () -> "spannertuning");
    registry.add("management.endpoint.spannertuning.access", () -> "unrestricted");
    registry.add("spanner.tuning.channels", () -> CHANNELS);
  }

  @AfterAll
  static void stop() throws InterruptedException {
    SERVER.close();
  }

  @Autowired SpannerTuningRegistry registry;

  @Autowired SpannerTuningEndpoint endpoint;

  @Autowired MeterRegistry meters;

  @Autowired SingerRepository singers;

  @Autowired SingerService service;

  @Autowired JdbcTemplate jdbc;

  @Autowired DataSource dataSource;

  @Test
  void theDataSourcesClientIsTunedListedAndMetered() throws Exception {
    this.jdbc.queryForObject(MockSpannerServer.POINT_SELECT, (rs, i) -> rs.getString(2));
    ClientDescriptor client = this.endpoint.client("dataSource");
    assertThat(client).as("the endpoint's entry for DataSource 'dataSource'").isNotNull();
    assertThat(client.features().get("single-use-distribution").state())
        .isEqualTo(System.getProperty("spanner-tuning.expected.single-use-distribution"));
    assertThat(client.features().get("stream-end-guard").state())
        .isEqualTo(GuardLine.expectedName());
    assertThat(client.jdbc().database()).isEqualTo("projects/p/instances/i/databases/d");
    assertThat(client.jdbc().googleCloudSpannerJdbc()).isEqualTo(VERSION);
    assertThat(client.pool().size())
        .as("spanner.tuning.channels=%d sets the driver's pool (its own default is 4)", CHANNELS)
        .isEqualTo(CHANNELS);
    assertThat(this.meters.find("spanner.tuning.channel.count").tag("client", "dataSource").gauge())
        .as("a meter tagged with the DataSource's bean name")
        .isNotNull();
  }

  /**
   * Point reads closed on their last row, before the driver has read the end of the stream: the
   * trailers lag the last message by 50 ms, so every close comes first. With the guard on, none
   * sends a reset; switched off through the endpoint, each case's resets per query are printed, and
   * there are some.
   */
  @Test
  void readsClosedOnTheirLastRowSendNoResetWithTheGuard() throws Exception {
    Map<String, Runnable> cases = new LinkedHashMap<>();
    cases.put("plain next() then close", this::plainNextThenClose);
    cases.put("setMaxRows(1)", this::maxRowsOne);
    cases.put("JPA exists query", () -> assertThat(this.singers.existsByName("Alice")).isTrue());
    cases.put(
        "JPA Stream closed early", () -> assertThat(this.service.firstSinger()).isEqualTo("Alice"));
    int perThread = 10;
    SERVER.setTrailersDelay(Duration.ofMillis(50));
    try {
      Map<String, Integer> guarded = resetsPerCase(cases, perThread);
      switchGuard(false);
      Map<String, Integer> unguarded;
      try {
        unguarded = resetsPerCase(cases, perThread);
      } finally {
        switchGuard(true);
      }
      int queries = THREADS * perThread;
      System.out.printf(
          "[jdbc %s] RST_STREAM per query, trailers 50 ms late, %d queries per case: %s%n",
          VERSION,
          queries,
          cases.keySet().stream()
              .map(
                  (name) ->
                      String.format(
                          "%s: guard on %.2f, off %.2f",
                          name,
                          guarded.get(name) / (double) queries,
                          unguarded.get(name) / (double) queries))
              .collect(Collectors.joining("; ")));
      assertThat(guarded)
          .as("RST_STREAM frames per case, guard on")
          .allSatisfy((k, v) -> assertThat(v).isZero());
      int unguardedResets = unguarded.values().stream().mapToInt(Integer::intValue).sum();
      if (GuardLine.clientSkipsCancelAtLast()) {
        // 6.125+: the client itself sends no cancel once it took the last message.
        assertThat(unguardedResets)
            .as("RST_STREAM frames with the guard switched off, on a client that skips itself")
            .isZero();
      } else {
        assertThat(unguardedResets)
            .as("RST_STREAM frames with the guard switched off through the endpoint")
            .isPositive();
      }
    } finally {
      SERVER.setTrailersDelay(Duration.ofMillis(1));
    }
  }

  /** 20 read-modify-writes and 20 read-only transactions, one at a time. */
  /**
   * JPA's repository and transactional service calls, timed as observations of the driver's client
   * under the DataSource's bean name: a read-modify-write's commit, a read-only transaction's
   * queries and an autocommit read.
   */
  @Test
  void jpaCallsAreObservedUnderTheDataSourcesName() {
    double commits = operations("Commit");
    double queries = operations("ExecuteStreamingSql");
    this.service.rename(1L, "Bob");
    assertThat(this.service.readTwice(1L)).isEqualTo(2L);
    assertThat(this.singers.existsByName("Alice")).isTrue();
    assertThat(operations("Commit") - commits).as("the read-modify-write's commit").isEqualTo(1);
    assertThat(operations("ExecuteStreamingSql") - queries)
        .as("the read-only transaction's two reads and the autocommit exists query")
        .isGreaterThanOrEqualTo(3);
    assertThat(
            this.meters
                .get("spanner.client.attempt")
                .tag("spanner.client", "dataSource")
                .tag("db.namespace", "d")
                .timers())
        .isNotEmpty();
  }

  private double operations(String method) {
    return this.meters
        .find("spanner.client.operation")
        .tag("spanner.client", "dataSource")
        .tag("db.operation.name", method)
        .tag("error.type", "none")
        .timers()
        .stream()
        .mapToDouble((timer) -> timer.count())
        .sum();
  }

  @Test
  void transactionsStayOnOneConnection() {
    int readWrite = 0;
    int readOnly = 0;
    for (int i = 0; i < 20; i++) {
      SERVER.reset();
      this.service.rename(1L, "Bob");
      readWrite += connectionsOfTransaction() == 1 ? 1 : 0;
      SERVER.reset();
      assertThat(this.service.readTwice(1L)).isEqualTo(2L);
      readOnly += connectionsOfTransaction() == 1 ? 1 : 0;
    }
    System.out.printf(
        "[jdbc %s] transactions on one connection: read-write %d of 20, read-only %d of 20%n",
        VERSION, readWrite, readOnly);
    assertThat(readWrite).as("read-modify-writes on one connection, of 20").isEqualTo(20);
    assertThat(readOnly).as("read-only transactions on one connection, of 20").isEqualTo(20);
  }

  /**
   * After a warm-up by 16 threads, the busiest connection answers 200 ms later; one thread then
   * sends autocommit point reads one after another for 3 s, through {@code JdbcTemplate} and a
   * plain {@code Connection} in turn. With single-use distribution switched off through the
   * endpoint the driver's own pick decides, and its share is printed beside.
   */
  @Test
  void aConnectionAnsweringFarLaterGetsFewOfTheReads() throws Exception {
    StockAndTuned<double[]> share =
        StockAndTuned.measure(
            (tuned) -> {
              switchSingleUse(tuned);
              try {
                SERVER.reset();
                Loops.forTime(THREADS, Duration.ofSeconds(1), (thread, i) -> read(i));
                SocketAddress slow = SERVER.busiestConnection();
                SERVER.slowDown(slow, 200);
                SERVER.reset();
                Loops.forTime(1, Duration.ofSeconds(3), (thread, i) -> read(i));
                SERVER.slowDown(slow, 0);
                return shareOf(slow, SERVER.arrivals());
              } finally {
                switchSingleUse(true);
              }
            });
    String figures =
        String.format(
            "[jdbc %s] connection +200 ms, sequential autocommit reads, its share of its even"
                + " share: driver's pick %.2f | tuned %.2f; the busiest connection over the mean:"
                + " driver's pick %.2f | tuned %.2f",
            VERSION, share.stock()[0], share.tuned()[0], share.stock()[1], share.tuned()[1]);
    System.out.println(figures);
    assertThat(share.tuned()[0])
        .as("tuned, the slowed connection's share of its even share: " + figures)
        .isLessThanOrEqualTo(0.25);
    // The fast connections share what the slowed one does not take: none takes the reads alone.
    assertThat(share.tuned()[1])
        .as("tuned, the busiest connection over the mean: " + figures)
        .isLessThanOrEqualTo(2.0);
  }

  /**
   * Spring Data JPA runs every repository method in a read-only transaction, and a {@code
   * Transactional(readOnly = true)} service method is one too: after a warm-up by 16 threads, the
   * busiest connection answers 200 ms later, and 16 threads then run repository reads and a service
   * method of two reads for 3 s. Each transaction's first call picks its connection, and the rest
   * follow it; with transaction routing switched off through the endpoint the client's own pick
   * decides, and its share is printed beside.
   */
  @Test
  void readOnlyTransactionsOfRepositoriesAvoidAConnectionAnsweringLater() throws Exception {
    StockAndTuned<double[]> runs =
        StockAndTuned.measure(
            (tuned) -> {
              switchFeature("transaction-routing", tuned);
              SocketAddress slow = null;
              try {
                SERVER.reset();
                Loops.forTime(THREADS, Duration.ofSeconds(1), (thread, i) -> read(i));
                slow = SERVER.busiestConnection();
                SERVER.slowDown(slow, 200);
                SERVER.reset();
                Loops.forTime(THREADS, Duration.ofSeconds(3), (thread, i) -> repositoryRead(i));
                List<Call> calls =
                    SERVER.calls().stream()
                        .filter((call) -> TRANSACTION_METHODS.contains(call.method()))
                        .toList();
                SocketAddress slowed = slow;
                long on = calls.stream().filter((call) -> call.connection().equals(slowed)).count();
                return new double[] {on / (calls.size() / (double) CHANNELS), calls.size()};
              } finally {
                if (slow != null) {
                  SERVER.slowDown(slow, 0);
                }
                switchFeature("transaction-routing", true);
              }
            });
    double[] stock = runs.stock();
    double[] tuned = runs.tuned();
    String figures =
        String.format(
            "[jdbc %s] connection +200 ms, 16 threads of read-only repository transactions, its"
                + " share of its even share of their calls: client's pick %.2f (%.0f calls) |"
                + " tuned %.2f (%.0f calls)",
            VERSION, stock[0], stock[1], tuned[0], tuned[1]);
    System.out.println(figures);
    assertThat(tuned[0]).as("tuned: " + figures).isLessThanOrEqualTo(0.25);
  }

  /** A repository read and a service method of two reads in turn, each a read-only transaction. */
  private void repositoryRead(int i) {
    if (i % 2 == 0) {
      assertThat(this.singers.findById(1L)).isPresent();
    } else {
      assertThat(this.service.readTwice(1L)).isEqualTo(2L);
    }
  }

  private Map<String, Integer> resetsPerCase(Map<String, Runnable> cases, int perThread)
      throws Exception {
    Map<String, Integer> resets = new LinkedHashMap<>();
    for (Map.Entry<String, Runnable> each : cases.entrySet()) {
      each.getValue().run();
      // Let the warm-up's streams end before counting.
      Thread.sleep(200);
      int before = SERVER.rstStreams();
      Loops.times(THREADS, perThread, (thread, i) -> each.getValue().run());
      // Resets travel after the close returns; the drain timeout is far longer than this.
      Thread.sleep(300);
      resets.put(each.getKey(), SERVER.rstStreams() - before);
    }
    return resets;
  }

  private void plainNextThenClose() {
    try (Connection connection = this.dataSource.getConnection();
        java.sql.Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(MockSpannerServer.POINT_SELECT)) {
      assertThat(rows.next()).isTrue();
    } catch (Exception ex) {
      throw new AssertionError(ex);
    }
  }

  private void maxRowsOne() {
    this.jdbc.query(
        (connection) -> {
          java.sql.PreparedStatement statement =
              connection.prepareStatement(MockSpannerServer.POINT_SELECT);
          statement.setMaxRows(1);
          return statement;
        },
        (ResultSet rows) -> {
          assertThat(rows.next()).isTrue();
          return rows.getString(2);
        });
  }

  /**
   * An autocommit point read, through {@code JdbcTemplate} and a plain {@code Connection} in turn.
   * Not through the repository: Spring Data JPA runs its methods in a read-only transaction, which
   * stays on its connection.
   */
  private void read(int i) {
    if (i % 2 == 0) {
      String name =
          this.jdbc.queryForObject(MockSpannerServer.POINT_SELECT, (rs, n) -> rs.getString(2));
      assertThat(name).isEqualTo("Alice");
    } else {
      plainNextThenClose();
    }
  }

  /** The connection's arrivals over its even share of them all. */
  /**
   * The slowed connection's share of its even share of the reads, and the busiest connection's
   * reads over the mean of the pool's connections.
   */
  private static double[] shareOf(SocketAddress connection, List<Arrival> arrivals) {
    long on = arrivals.stream().filter((a) -> a.connection().equals(connection)).count();
    List<Long> perConnection =
        arrivals.stream()
            .collect(Collectors.groupingBy(Arrival::connection, Collectors.counting()))
            .values()
            .stream()
            .sorted(Comparator.reverseOrder())
            .toList();
    System.out.printf(
        "[jdbc %s] %d of %d reads on the slowed connection; per connection %s%n",
        VERSION, on, arrivals.size(), perConnection);
    double mean = arrivals.size() / (double) CHANNELS;
    return new double[] {on / mean, perConnection.get(0) / mean};
  }

  private static long connectionsOfTransaction() {
    return SERVER.calls().stream()
        .filter((call) -> TRANSACTION_METHODS.contains(call.method()))
        .map(Call::connection)
        .distinct()
        .count();
  }

  private void switchGuard(boolean enabled) {
    this.endpoint.switchFeature("dataSource", "stream-end-guard", enabled, null);
  }

  private void switchSingleUse(boolean enabled) {
    switchFeature("single-use-distribution", enabled);
  }

  private void switchFeature(String feature, boolean enabled) {
    this.endpoint.switchFeature("dataSource", feature, enabled, null);
  }
}
