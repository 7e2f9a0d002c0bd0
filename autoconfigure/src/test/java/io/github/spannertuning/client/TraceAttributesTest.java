package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static io.github.spannertuning.testing.TracedClients.ATTEMPT;
import static io.github.spannertuning.testing.TracedClients.CHANNEL;
import static io.github.spannertuning.testing.TracedClients.COMMIT;
import static io.github.spannertuning.testing.TracedClients.HEDGE_WON;
import static io.github.spannertuning.testing.TracedClients.QUERY;
import static io.github.spannertuning.testing.TracedClients.ROUTE;
import static io.github.spannertuning.testing.TracedClients.STREAM_END;
import static io.github.spannertuning.testing.TracedClients.UPDATE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.MockSpannerServer.Fault;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.github.spannertuning.testing.TracedClients;
import io.github.spannertuning.trace.Traces;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The attributes a tuned client puts on its own OpenTelemetry spans, read from an in-memory
 * exporter, against the production-like {@link MockSpannerServer} ({@code last} on the final
 * message, trailers 1 ms later). Where a call went is checked against the connection the server saw
 * it on. Both client lines: 6.119 decides a stream's end at its close, 6.127 at its {@code last}
 * message (the client drops its call there); the expectation comes from the build ({@link
 * GuardLine}).
 */
class TraceAttributesTest {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final String TWENTY_ROWS = "SELECT id FROM Twenty";

  private static final String SET_NAME = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  private static final Duration DRAIN_TIMEOUT = Duration.ofMillis(200);

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private static TracedClients traces;

  private Spanner spanner;

  @BeforeAll
  static void chooseOpenTelemetry() {
    server.get().mock().putStatementResult(StatementResult.update(Statement.of(SET_NAME), 1L));
    TracedClients.chooseOpenTelemetryTraces();
    traces = new TracedClients();
  }

  @AfterAll
  static void forgetOpenTelemetry() {
    traces.close();
    TracedClients.resetTracingChoice();
  }

  @AfterEach
  void closeClient() {
    if (this.spanner != null) {
      this.spanner.close();
    }
    server.get().setTrailersDelay(Duration.ofMillis(1));
    server.get().setFaults((method, attempt) -> Fault.NONE);
  }

  @Test
  void routedSingleUseReadsNameTheChannelTheServerSawThemOn() {
    DatabaseClient client = open(SpannerTuning.newBuilder());
    for (int i = 0; i < 24; i++) {
      pointSelect(client);
    }
    List<SpanData> spans = traces.spans(QUERY);
    assertThat(spans).extracting((span) -> span.getAttributes().get(ROUTE)).containsOnly("latency");
    int channels =
        TracedClients.assertChannelsAreConnections(
            spans, server.get().calls("ExecuteStreamingSql"));
    assertThat(channels).as("channels the 24 reads were routed to").isGreaterThan(1);
  }

  @Test
  void aTransactionsLaterCallsFollowItsFirst() {
    DatabaseClient client = open(SpannerTuning.newBuilder());
    client.readWriteTransaction().run((tx) -> tx.executeUpdate(Statement.of(SET_NAME)));
    try (ReadOnlyTransaction tx = client.readOnlyTransaction()) {
      drain(tx.executeQuery(Statement.of(POINT_SELECT)));
      drain(tx.executeQuery(Statement.of(POINT_SELECT)));
    }
    SpanData update = only(traces.spans(UPDATE));
    SpanData commit = only(traces.spans(COMMIT));
    assertThat(update.getAttributes().get(ROUTE)).as("the inline begin").isEqualTo("latency");
    assertThat(commit.getAttributes().get(ROUTE)).as("the commit").isEqualTo("transaction");
    assertThat(commit.getAttributes().get(CHANNEL)).isEqualTo(update.getAttributes().get(CHANNEL));
    TracedClients.assertChannelsAreConnections(
        List.of(update, commit),
        List.of(only(server.get().calls("ExecuteSql")), only(server.get().calls("Commit"))));
    // The client begins a read-only transaction with a BeginTransaction of its own, which it has no
    // span of, or inline with its first query.
    boolean begunInline = server.get().calls("BeginTransaction").isEmpty();
    List<SpanData> queries = traces.spans(QUERY);
    assertThat(queries)
        .extracting((span) -> span.getAttributes().get(ROUTE))
        .containsExactly(begunInline ? "latency" : "transaction", "transaction");
    TracedClients.assertChannelsAreConnections(queries, server.get().calls("ExecuteStreamingSql"));
  }

  @Test
  void callsLeftToTheClientSaySo() {
    SpannerTuningState state = tuned(SpannerTuning.newBuilder());
    DatabaseClient client = this.spanner.getDatabaseClient(DATABASE);
    state.setEnabled(Feature.SINGLE_USE_DISTRIBUTION, false);
    state.setEnabled(Feature.TRANSACTION_ROUTING, false);
    pointSelect(client);
    client.readWriteTransaction().run((tx) -> tx.executeUpdate(Statement.of(SET_NAME)));
    SpanData read = only(traces.spans(QUERY));
    assertThat(read.getAttributes().get(ROUTE)).isEqualTo("client");
    TracedClients.assertChannelsAreConnections(
        List.of(read), server.get().calls("ExecuteStreamingSql"));
    assertThat(only(traces.spans(UPDATE)).getAttributes().get(ROUTE))
        .as("a transaction's first call, transaction routing off")
        .isEqualTo("client");
    assertThat(only(traces.spans(COMMIT)).getAttributes().get(ROUTE))
        .as("the commit of a transaction begun unrouted")
        .isEqualTo("not-routed");
  }

  @Test
  void aPointSelectClosedAtItsLastRowDrains() {
    DatabaseClient client = open(SpannerTuning.newBuilder());
    pointSelect(client);
    assertThat(only(traces.spans(QUERY)).getAttributes().get(STREAM_END)).isEqualTo("drained");
  }

  @Test
  void aQueryClosedBeforeItsLastRowIsCancelled() {
    server
        .get()
        .mock()
        .putStatementResult(
            StatementResult.query(Statement.of(TWENTY_ROWS), ResultSets.numbers(20)));
    DatabaseClient client = open(SpannerTuning.newBuilder());
    try (ResultSet rs = client.singleUse().executeQuery(Statement.of(TWENTY_ROWS))) {
      assertThat(rs.next()).isTrue();
    }
    assertThat(only(traces.spans(QUERY)).getAttributes().get(STREAM_END)).isEqualTo("cancelled");
  }

  @Test
  void aFinishedStreamOnAFullConnectionIsReleased() {
    // No slot to spare: a connection of one stream, the closing one's own.
    DatabaseClient client =
        open(
            SpannerTuning.newBuilder()
                .streamEndGuardMaxConcurrentStreams(1)
                .streamEndGuardDrainMargin(1));
    server.get().setTrailersDelay(Duration.ofSeconds(30));
    pointSelect(client);
    assertThat(only(traces.spans(QUERY)).getAttributes().get(STREAM_END))
        .isEqualTo("released-at-slot-limit");
  }

  /**
   * Trailers that never come: the drain times out. On 6.127 the guard drains from the {@code last}
   * message, while the application still holds the result set and the client's span is open, so the
   * span says so. On 6.119 the drain starts at the close, and the client ends its span right after
   * the close: the span keeps {@code drained}, and only the meter counts the timeout.
   */
  @Test
  void aDrainTimeoutIsOnTheSpanOnlyWhileItIsOpen() {
    SpannerTuningState state =
        tuned(SpannerTuning.newBuilder().streamEndGuardDrainTimeout(DRAIN_TIMEOUT));
    DatabaseClient client = this.spanner.getDatabaseClient(DATABASE);
    server.get().setTrailersDelay(MockSpannerServer.TRAILERS_NEVER);
    long timeoutsBefore = state.streamEndGuardDrainTimeoutCount();
    try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      assertThat(rs.next()).isTrue();
      if (GuardLine.clientSkipsCancelAtLast()) {
        awaitTimeout(state, timeoutsBefore);
      }
    }
    awaitTimeout(state, timeoutsBefore);
    assertThat(only(traces.spans(QUERY)).getAttributes().get(STREAM_END))
        .isEqualTo(GuardLine.clientSkipsCancelAtLast() ? "drain-timeout" : "drained");
  }

  /**
   * A hedge forced on every read (delay 0) against a first attempt the server holds 1 s: the hedge
   * answers first. Each attempt has a span of its own under the read's, on the channel the server
   * saw it on; the read's span says the hedge won and names its channel.
   */
  @Test
  void aHedgedReadHasASpanPerAttemptAndSaysWhichWon() {
    DatabaseClient client =
        open(
            SpannerTuning.newBuilder()
                .hedging(true)
                .hedgingMaxExtra(1.0)
                .hedgingBurst(1000)
                .hedgingFixedDelay(Duration.ZERO));
    server.get().setFaults((method, attempt) -> (attempt == 1) ? Fault.delay(1000) : Fault.NONE);
    pointSelect(client);
    SpanData read = only(traces.spans(QUERY));
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> traces.spans("spanner_tuning.attempt").size() == 2);
    List<SpanData> attempts = traces.spans("spanner_tuning.attempt");
    assertThat(attempts)
        .allSatisfy((attempt) -> assertThat(attempt.getParentSpanId()).isEqualTo(read.getSpanId()));
    SpanData first = attemptSpan(attempts, 1);
    SpanData second = attemptSpan(attempts, 2);
    assertThat(read.getAttributes().get(HEDGE_WON)).isTrue();
    assertThat(read.getAttributes().get(CHANNEL)).isEqualTo(second.getAttributes().get(CHANNEL));
    assertThat(read.getAttributes().get(STREAM_END)).isEqualTo("drained");
    // The server records the first attempt once its second has passed.
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> server.get().calls("ExecuteStreamingSql").size() == 2);
    List<Call> calls = server.get().calls("ExecuteStreamingSql");
    TracedClients.assertChannelsAreConnections(
        List.of(first, second),
        List.of(
            calls.stream().filter((call) -> call.attempt() == 1).findFirst().orElseThrow(),
            calls.stream().filter((call) -> call.attempt() == 2).findFirst().orElseThrow()));
    assertThat(first.getAttributes().get(CHANNEL))
        .isNotEqualTo(second.getAttributes().get(CHANNEL));
    assertThat(first.getStartEpochNanos()).isLessThanOrEqualTo(second.getStartEpochNanos());
  }

  /**
   * Decided once, when the client's rpc is built: on a client that does not trace, nothing runs.
   */
  @Test
  void tracingIsOnOnlyWithOpenTelemetryTracesAndATracerThatRecords() {
    assertThat(Traces.on(traces.openTelemetry())).isTrue();
    assertThat(Traces.on(OpenTelemetry.noop())).isFalse();
    TracedClients.resetTracingChoice();
    try {
      assertThat(Traces.on(traces.openTelemetry()))
          .as("OpenCensus, the client's default")
          .isFalse();
    } finally {
      TracedClients.chooseOpenTelemetryTraces();
    }
    SpannerTuningState state = tuned(SpannerTuning.newBuilder(), OpenTelemetry.noop());
    assertThat(state.traced()).isFalse();
  }

  private DatabaseClient open(SpannerTuning.Builder tuning) {
    tuned(tuning);
    return this.spanner.getDatabaseClient(DATABASE);
  }

  private SpannerTuningState tuned(SpannerTuning.Builder tuning) {
    return tuned(tuning, traces.openTelemetry());
  }

  /**
   * A tuned client tracing with {@code openTelemetry}, its pool set up; the spans so far cleared.
   */
  private SpannerTuningState tuned(SpannerTuning.Builder tuning, OpenTelemetry openTelemetry) {
    SpannerOptions.Builder builder = server.get().clientOptions(4).setOpenTelemetry(openTelemetry);
    SpannerTuningState state = tuning.logWhenBuilt(false).build().applyTo(builder);
    this.spanner = builder.build().getService();
    // The multiplexed session and the dialect, before anything is counted.
    pointSelect(this.spanner.getDatabaseClient(DATABASE));
    await()
        .atMost(Duration.ofSeconds(5))
        .until(
            () ->
                state.channelLoad().channels().stream()
                    .allMatch((channel) -> channel.activeStreams() == 0));
    traces.clear();
    server.get().reset();
    return state;
  }

  private static void pointSelect(DatabaseClient client) {
    try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      assertThat(rs.next()).isTrue();
    }
  }

  private static void drain(ResultSet rs) {
    try (rs) {
      while (rs.next()) {
        // every row
      }
    }
  }

  private static void awaitTimeout(SpannerTuningState state, long before) {
    await()
        .atMost(Duration.ofSeconds(5))
        .until(() -> state.streamEndGuardDrainTimeoutCount() > before);
  }

  private static <T> T only(List<T> items) {
    assertThat(items).hasSize(1);
    return items.get(0);
  }

  private static SpanData attemptSpan(List<SpanData> attempts, long attempt) {
    return attempts.stream()
        .filter((span) -> Long.valueOf(attempt).equals(span.getAttributes().get(ATTEMPT)))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no span of attempt " + attempt + ": " + attempts));
  }
}
