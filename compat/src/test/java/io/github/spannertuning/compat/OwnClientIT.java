package io.github.spannertuning.compat;

import static io.github.spannertuning.compat.CompatLine.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.gson.JsonObject;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.MockSpannerServer.Fault;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import io.github.spannertuning.testing.StatementResult;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The application's own {@code SpannerOptions} and {@code Spanner} beans (how a Boot 4 application
 * uses Spanner here) against {@link MockSpannerServer}, on whichever line the profile chose: the
 * client is tuned, its traffic works, each feature is in the state the line's profile expects and
 * the client behaves accordingly on the server and on the wire, and the meters and endpoint work.
 *
 * <p>The server is the production-like one ({@code last} on the final message, trailers 1 ms later,
 * 2 to 5 ms per call) with RST_STREAM frames counted on the wire.
 */
@SpringBootTest(
    classes = CompatApplication.class,
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {"compat.spanner.mode=own-options", "spanner.tuning.hedging.max-extra=0.5"})
class OwnClientIT {

  static final String UPDATE = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  static final int CHANNELS = 8;

  /** The production-like server's pace, restored after a burst. */
  static final ServiceTime PRODUCTION_PACE =
      ServiceTime.uniform(Duration.ofMillis(2), Duration.ofMillis(5));

  static final MockSpannerServer SERVER = start();

  @DynamicPropertySource
  static void mockServer(DynamicPropertyRegistry registry) {
    registry.add("compat.spanner.host", () -> "http://127.0.0.1:" + SERVER.port());
    registry.add("compat.spanner.channels", () -> CHANNELS);
  }

  @Value("${local.server.port}")
  int port;

  @Autowired CompatDatabase database;

  DatabaseClient client;

  @BeforeEach
  void client() {
    this.client = this.database.client();
  }

  @Autowired Spanner spanner;

  @Autowired CancelCounter cancels;

  @Autowired MeterRegistry meters;

  /**
   * The application's client closes before its server: a 6.89 client deletes its pooled sessions
   * when it closes, and against a closed server it would wait out those calls when the context
   * closes at the JVM's exit (30 s, after which Surefire kills the test JVM). Closing it again then
   * does nothing.
   */
  @AfterAll
  static void stopServer(@Autowired ObjectProvider<Spanner> spanner) throws InterruptedException {
    spanner.ifAvailable(Spanner::close);
    SERVER.close();
  }

  @Test
  void servesSpannerTraffic() {
    try (ResultSet rs =
        this.client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString("name")).isEqualTo("Alice");
      assertThat(rs.next()).isFalse();
    }
    Long updated =
        this.client.readWriteTransaction().run((tx) -> tx.executeUpdate(Statement.of(UPDATE)));
    assertThat(updated).isEqualTo(1L);
    assertThat(SERVER.calls("Commit")).as("commits the server saw").isNotEmpty();
  }

  /**
   * Every call timed as an observation, in the application's own Micrometer stack: the attempts and
   * the frontend's time (from the test server's {@code server-timing}) on every line; the
   * operations where the line's profile expects observations {@code on}, and where it expects
   * {@code unsupported} (an rpc that differs) the endpoint gives the reason.
   */
  @Test
  void timesEveryCallAsTheLineExpects() {
    pointSelects(20);
    String expected = CompatLine.expected("observations");
    JsonObject observations = Endpoint.client(this.port, "spanner").getAsJsonObject("observations");
    assertThat(text(observations, "state"))
        .as("observations on %s", CompatLine.LINE)
        .isEqualTo(expected);
    assertThat(
            this.meters
                .get("spanner.client.attempt")
                .tag("spanner.client", "spanner")
                .tag("db.operation.name", "ExecuteStreamingSql")
                .timer()
                .count())
        .isGreaterThanOrEqualTo(20);
    assertThat(this.meters.find("spanner.client.attempt.active").meters())
        .as("timed by the starter's handler ahead of Boot's, which would add a long task timer")
        .isEmpty();
    assertThat(this.meters.find("http.server.requests.active").longTaskTimers())
        .as("the application's other observations, timed by Boot's handler")
        .isNotEmpty();
    assertThat(
            this.meters
                .get("spanner.client.server.duration")
                .tag("db.operation.name", "ExecuteStreamingSql")
                .timer()
                .count())
        .isGreaterThanOrEqualTo(20);
    if (expected.equals("on")) {
      assertThat(
              this.meters
                  .get("spanner.client.operation")
                  .tag("spanner.client", "spanner")
                  .tag("db.operation.name", "ExecuteStreamingSql")
                  .tag("error.type", "none")
                  .timer()
                  .count())
          .isGreaterThanOrEqualTo(20);
    } else {
      assertThat(text(observations, "reason")).isNotBlank();
      assertThat(this.meters.find("spanner.client.operation").meters()).isEmpty();
    }
    CompatLine.report("observations", text(observations, "state"));
  }

  @Test
  void reportsTheStatesAndVersionsThisLineExpects() {
    pointSelects(20);
    JsonObject client = Endpoint.client(this.port, "spanner");
    Endpoint.assertFeaturesAsExpected(client);
    Endpoint.assertVersionsAsExpected(client);
    assertThat(text(client, "pool/kind")).isEqualTo("grpc-gcp");
    assertThat(client.getAsJsonObject("pool").get("size").getAsInt()).isEqualTo(CHANNELS);
    assertThat(Endpoint.calls(client)).isGreaterThanOrEqualTo(20);
    CompatLine.report(
        "line",
        "Spring Boot "
            + CompatLine.BOOT
            + ", spring-cloud-gcp "
            + CompatLine.SPRING_CLOUD_GCP
            + ", google-cloud-spanner "
            + CompatLine.SPANNER
            + ", grpc-gcp "
            + CompatLine.GRPC_GCP);
    for (String feature : Endpoint.FEATURES) {
      CompatLine.report("feature." + feature, Endpoint.describe(client, feature));
    }
    CompatLine.report("versions", client.get("versions"));
  }

  /**
   * grpc-gcp is what the client really uses; on old lines only because the starter switched it on.
   */
  @Test
  void grpcGcpIsOnInTheClient() {
    assertThat(this.spanner.getOptions().isGrpcGcpExtensionEnabled())
        .as("the tuned client uses grpc-gcp")
        .isTrue();
    boolean stockDefault =
        SpannerOptions.newBuilder().setProjectId("p").build().isGrpcGcpExtensionEnabled();
    assertThat(stockDefault)
        .as(
            "this client line's own default for grpc-gcp (expected: %s)",
            CompatLine.expected("grpc-gcp"))
        .isEqualTo(CompatLine.expected("grpc-gcp").equals("native"));
    CompatLine.report(
        "measured.grpc-gcp", "client default " + stockDefault + ", tuned client true");
  }

  /**
   * A warm burst of 64x25 single-use point selects with 20 ms of server time, counted per server
   * connection: the starter routes every one of them, over every connection. Where the starter
   * routes ({@code on}), the same client is measured with the feature switched off through the
   * endpoint, for the figures side by side.
   */
  @Test
  void singleUseReadsSpreadOverTheConnections() throws Exception {
    String expected = CompatLine.expected("single-use-distribution");
    pointSelects(10);
    Spread stock = null;
    if (expected.equals("on")) {
      switchFeature("single-use-distribution", false, 200);
      try {
        stock = burst();
      } finally {
        switchFeature("single-use-distribution", true, 200);
      }
    } else {
      switchFeature("single-use-distribution", false, 400);
    }
    long routedBefore = Endpoint.counter(Endpoint.client(this.port, "spanner"), "singleUseRouted");
    Spread tuned = burst();
    long routed =
        Endpoint.counter(Endpoint.client(this.port, "spanner"), "singleUseRouted") - routedBefore;
    String figures =
        String.format(
            "burst 64x25, server 20 ms: busiest/mean %s%.2f %s, routed by the starter %d",
            (stock != null)
                ? String.format("stock %.2f %s, tuned ", stock.ratio(), stock.perConnection())
                : "",
            tuned.ratio(),
            tuned.perConnection(),
            routed);
    CompatLine.report("measured.single-use-distribution", figures);

    assertThat(tuned.calls()).as("every query of the burst reached the server").isEqualTo(64 * 25);
    if (expected.equals("on")) {
      assertThat(routed).as("single-use calls the starter routed").isEqualTo(64L * 25);
    } else {
      assertThat(routed).as("single-use calls the starter routed (%s)", expected).isZero();
    }
    if (!expected.equals("unsupported")) {
      // Every connection in use; how calls divide among them follows each one's latency, which
      // the autoconfigure module's routing tests assert against slowed and stalled connections.
      assertThat(tuned.perConnection()).as("connections used, %s", figures).hasSize(CHANNELS);
    }
  }

  /**
   * Point selects closed after their one row once the stream has ended, the cancels that reach gRPC
   * counted below the client: with the guard {@code on} they are skipped, with it switched off (or
   * unsupported) every close cancels. Closed at once on their last row, before the trailers, they
   * send no RST_STREAM with the guard on and about one each with it off, where the server marks
   * {@code last}.
   */
  @Test
  void streamEndGuardSkipsTheCancelsOfFinishedStreams() {
    String expected = CompatLine.expected("stream-end-guard");
    int queries = 100;
    pointSelects(5);
    if (expected.equals("on")) {
      Cancels on = cancels(queries);
      switchFeature("stream-end-guard", false, 200);
      Cancels off;
      try {
        off = cancels(queries);
      } finally {
        switchFeature("stream-end-guard", true, 200);
      }
      String figures = "guard off " + off + " | guard on " + on;
      CompatLine.report("measured.stream-end-guard", figures);
      assertThat(off.settled()).as(figures).isGreaterThanOrEqualTo(0.9);
      assertThat(on.settled()).as(figures).isLessThanOrEqualTo(0.1);
      assertThat(on.skipped()).as(figures).isGreaterThanOrEqualTo(0.9);
      if (CompatLine.MARK_LAST) {
        assertThat(on.rstStreams()).as(figures).isZero();
        // A close reaches the wire as a reset only while the trailers, 1 ms behind the row, are
        // still on their way: how many closes beat them depends on how busy the cores are (0.38
        // to about 1 per query), but some always do.
        assertThat(off.rstStreams()).as(figures).isPositive();
      }
    } else if (expected.equals("native")) {
      // The client sends no cancel for a stream whose last message it took (6.125+): stock and
      // tuned alike send none, and the guard has none to skip; its part is the drain it watches.
      Cancels on = cancels(queries);
      switchFeature("stream-end-guard", false, 200);
      Cancels off;
      try {
        off = cancels(queries);
      } finally {
        switchFeature("stream-end-guard", true, 200);
      }
      String figures = "native; guard off " + off + " | guard on " + on;
      CompatLine.report("measured.stream-end-guard", figures);
      assertThat(off.settled()).as(figures).isLessThanOrEqualTo(0.1);
      assertThat(on.settled()).as(figures).isLessThanOrEqualTo(0.1);
      assertThat(on.skipped()).as(figures).isZero();
      if (CompatLine.MARK_LAST) {
        assertThat(off.rstStreams()).as(figures).isZero();
        assertThat(on.rstStreams()).as(figures).isZero();
      }
    } else {
      switchFeature("stream-end-guard", false, 400);
      Cancels stock = cancels(queries);
      String figures = expected + ": " + stock;
      CompatLine.report("measured.stream-end-guard", figures);
      assertThat(stock.settled()).as(figures).isGreaterThanOrEqualTo(0.9);
      assertThat(stock.skipped()).as(figures).isZero();
    }
  }

  /**
   * Per point select: cancels reaching gRPC when the close follows the stream's end ("settled"),
   * cancels the guard skipped there, and RST_STREAM frames on the wire when the close follows the
   * row at once (the trailers lag the {@code last} message, so the stream is still open then).
   */
  record Cancels(double settled, double skipped, double immediate, double rstStreams) {

    @Override
    public String toString() {
      return String.format(
          "settled close: cancels reaching gRPC %.2f, skipped %.2f; immediate close: cancels reaching gRPC %.2f, RST_STREAM on the wire %.2f",
          this.settled, this.skipped, this.immediate, this.rstStreams);
    }
  }

  private Cancels cancels(int queries) {
    long skippedBefore =
        Endpoint.counter(Endpoint.client(this.port, "spanner"), "streamEndGuardSkipped");
    double settled = cancelsPerQuery(queries, true);
    long skipped =
        Endpoint.counter(Endpoint.client(this.port, "spanner"), "streamEndGuardSkipped")
            - skippedBefore;
    int rstBefore = SERVER.rstStreams();
    double immediate = cancelsPerQuery(queries, false);
    awaitStreamEnd();
    double rst = (SERVER.rstStreams() - rstBefore) / (double) queries;
    return new Cancels(settled, skipped / (double) queries, immediate, rst);
  }

  /**
   * Hedging is off by default; where this line supports it, switched on at runtime it answers a
   * read whose first attempt is late from a hedge on another channel. Once 300 point selects have
   * timed the statement (its delay) and filled the budget, each first attempt is held 300 ms by the
   * server while the hedge is not. The budget is half a hedge per read here (max-extra 0.5), so it
   * is full (10 hedges) after the point selects whatever share of them came later than the delay
   * and were hedged: at the default 5 % they spend about what they earn, as the delay is a high
   * percentile of their own time, and on a jittery machine one run of many left it 0.3 short of the
   * fifth hedge. What the budget allows is {@code HedgeBudgetTest}'s to check.
   */
  @Test
  void hedgingSwitchedOnAnswersReadsWhoseFirstAttemptIsLate() {
    if (CompatLine.expected("hedging").equals("unsupported")) {
      switchFeature("hedging", true, 400);
      CompatLine.report("measured.hedging", "switching it on is refused: unsupported");
      return;
    }
    switchFeature("hedging", true, 200);
    try {
      pointSelects(300);
      long wonBefore =
          Endpoint.client(this.port, "spanner").getAsJsonObject("hedging").get("won").getAsLong();
      SERVER.setFaults((method, attempt) -> (attempt == 1) ? Fault.delay(300) : Fault.NONE);
      long slowest = 0;
      for (int i = 0; i < 5; i++) {
        long start = System.nanoTime();
        pointSelects(1);
        slowest = Math.max(slowest, System.nanoTime() - start);
      }
      JsonObject hedging = Endpoint.client(this.port, "spanner").getAsJsonObject("hedging");
      long won = hedging.get("won").getAsLong() - wonBefore;
      assertThat(won).as("reads a hedge answered, of 5 (endpoint: %s)", hedging).isEqualTo(5);
      assertThat(slowest / 1_000_000)
          .as("ms of the slowest read, its first attempt held 300 ms")
          .isLessThan(300);
      CompatLine.report(
          "measured.hedging",
          "switched on: 5 of 5 reads whose first attempt was held 300 ms answered by a hedge,"
              + " the slowest in "
              + slowest / 1_000_000
              + " ms");
    } finally {
      SERVER.setFaults((method, attempt) -> Fault.NONE);
      switchFeature("hedging", false, 200);
    }
  }

  @Test
  void metersAreInTheApplicationsRegistry() {
    int queries = 30;
    double before = channelCalls();
    pointSelects(queries);
    List<String> names =
        List.of(
            "spanner.tuning.channel.active.streams",
            "spanner.tuning.channel.calls",
            "spanner.tuning.channel.count",
            "spanner.tuning.channel.imbalance",
            "spanner.tuning.single.use.routed",
            "spanner.tuning.stream.end.guard.skipped");
    List<String> present =
        names.stream()
            .filter((name) -> !this.meters.find(name).tag("client", "spanner").meters().isEmpty())
            .toList();
    CompatLine.report(
        "measured.meters",
        present.size() + " of 6 meters in " + this.meters.getClass().getSimpleName());
    assertThat(present)
        .as("spanner.tuning meters of client 'spanner' in Boot's registry")
        .isEqualTo(names);
    assertThat(channelCalls() - before)
        .as("spanner.tuning.channel.calls grew by the queries")
        .isGreaterThanOrEqualTo(queries);
  }

  private double channelCalls() {
    return this.meters
        .find("spanner.tuning.channel.calls")
        .tag("client", "spanner")
        .functionCounters()
        .stream()
        .mapToDouble((counter) -> counter.count())
        .sum();
  }

  private double cancelsPerQuery(int queries, boolean settle) {
    long before = this.cancels.cancels();
    for (int i = 0; i < queries; i++) {
      try (ResultSet rs =
          this.client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(rs.next()).isTrue();
        if (settle) {
          awaitStreamEnd();
        }
      }
    }
    return (this.cancels.cancels() - before) / (double) queries;
  }

  /**
   * Gives a point select's end of stream (its {@code last} message, and the trailers 1 ms later)
   * time to reach the client after its row, so that the close that follows is a close of a finished
   * stream.
   */
  private static void awaitStreamEnd() {
    try {
      Thread.sleep(5);
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
    }
  }

  private void switchFeature(String feature, boolean enabled, int expectedStatus) {
    CompatLine.Response response =
        CompatLine.post(
            this.port,
            "/actuator/spannertuning/spanner",
            "{\"feature\": \"" + feature + "\", \"enabled\": " + enabled + "}");
    assertThat(response.status())
        .as("POST %s=%s: %s", feature, enabled, response.body())
        .isEqualTo(expectedStatus);
  }

  private void pointSelects(int count) {
    for (int i = 0; i < count; i++) {
      try (ResultSet rs =
          this.client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(rs.next()).isTrue();
      }
    }
  }

  private Spread burst() throws Exception {
    SERVER.setServiceTime(ServiceTime.fixed(Duration.ofMillis(20)));
    SERVER.reset();
    ExecutorService threads = Executors.newFixedThreadPool(64);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < 64; t++) {
        futures.add(threads.submit(() -> pointSelects(25)));
      }
      for (Future<?> future : futures) {
        future.get(120, TimeUnit.SECONDS);
      }
    } finally {
      threads.shutdownNow();
      SERVER.setServiceTime(PRODUCTION_PACE);
    }
    List<Call> calls = SERVER.calls("ExecuteStreamingSql");
    List<Integer> perConnection = MockSpannerServer.perConnection(calls, SERVER.connections());
    return new Spread(calls.size(), perConnection);
  }

  record Spread(int calls, List<Integer> perConnection) {

    double ratio() {
      return this.perConnection.get(0) / (this.calls / (double) CHANNELS);
    }
  }

  private static MockSpannerServer start() {
    try {
      MockSpannerServer server =
          CompatLine.server().serviceTime(PRODUCTION_PACE).countFrames().start();
      server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
      return server;
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }
}
