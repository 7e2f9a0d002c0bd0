package io.github.spannertuning.observation;

import static io.github.spannertuning.testing.MockSpannerServer.BIG_QUERY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Fault;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.grpc.Status;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A real client, tuned with observations, against the production-like {@link MockSpannerServer}
 * (the frontend's time in a {@code server-timing} header, {@code last} on the final message,
 * trailers 1 ms later): the observations and meters each call makes, read from a Micrometer
 * registry with Boot's meter handler. On the line the build chose (6.119, 6.113 or 6.127), on a
 * fixed pool and on grpc-gcp's dynamic channel pool.
 */
class SpannerCallObservationsTest {

  private static final DatabaseId DATABASE = MockSpannerServer.DATABASE;

  private static final String SET_NAME = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

  private final ObservationRegistry observations = ObservationRegistry.create();

  private Spanner spanner;

  @AfterEach
  void close() {
    if (this.spanner != null) {
      this.spanner.close();
    }
    server.get().setFaults((method, attempt) -> Fault.NONE);
    server.get().setServerTiming(true);
  }

  @ParameterizedTest
  @ValueSource(strings = {"fixed", "dynamic"})
  void eachReadAndTransactionIsAnOperationWithItsAttemptAndTheFrontendsTime(String pool) {
    DatabaseClient client =
        open(
            pool.equals("fixed")
                ? server.get().clientOptions(4)
                : server.get().dynamicPoolOptions(null));
    MockSpannerServer.pointSelects(client, 20);
    server.get().mock().putStatementResult(StatementResult.update(Statement.of(SET_NAME), 1L));
    for (int i = 0; i < 3; i++) {
      client.readWriteTransaction().run((tx) -> tx.executeUpdate(Statement.of(SET_NAME)));
    }
    awaitOperations("Commit", 3);
    assertThat(timer("spanner.client.operation", "ExecuteStreamingSql", "none").count())
        .isEqualTo(20);
    assertThat(timer("spanner.client.attempt", "ExecuteStreamingSql", "none").count())
        .isEqualTo(20);
    assertThat(timer("spanner.client.operation", "ExecuteSql", "none").count()).isEqualTo(3);
    assertThat(timer("spanner.client.attempt", "Commit", "none").count()).isEqualTo(3);
    Timer frontend = timer("spanner.client.server.duration", "ExecuteStreamingSql", "none");
    assertThat(frontend.count()).as("a time per response").isEqualTo(20);
    assertThat(frontend.totalTime(java.util.concurrent.TimeUnit.NANOSECONDS))
        .as("within the operations' own time")
        .isPositive()
        .isLessThanOrEqualTo(
            timer("spanner.client.operation", "ExecuteStreamingSql", "none")
                .totalTime(java.util.concurrent.TimeUnit.NANOSECONDS));
    assertThat(this.meters.find("spanner.client.server.duration.missing").counters()).isEmpty();
    Timer read = timer("spanner.client.operation", "ExecuteStreamingSql", "none");
    assertThat(read.getId().getTags())
        .containsExactlyInAnyOrder(
            Tag.of("db.system.name", "gcp.spanner"),
            Tag.of("db.operation.name", "ExecuteStreamingSql"),
            Tag.of("db.namespace", DATABASE.getDatabase()),
            Tag.of("error.type", "none"),
            Tag.of("spanner.client", "spanner"),
            // Micrometer's meter handler adds the observation's exception; these set none.
            Tag.of("error", "none"));
  }

  @Test
  void aStreamResumedAfterUnavailableIsOneOperationOfTwoAttempts() {
    DatabaseClient client = open();
    server
        .get()
        .setFaults(
            (method, attempt) ->
                (method.equals("ExecuteStreamingSql") && attempt == 1)
                    ? Fault.failAfterFirstMessage(Status.UNAVAILABLE)
                    : Fault.NONE);
    int rows = 0;
    try (ResultSet rs = client.singleUse().executeQuery(Statement.of(BIG_QUERY))) {
      while (rs.next()) {
        rows++;
      }
    }
    assertThat(rows).isEqualTo(10_000);
    awaitOperations("ExecuteStreamingSql", 1);
    assertThat(
            this.meters
                .find("spanner.client.operation")
                .tag("db.operation.name", "ExecuteStreamingSql")
                .timers())
        .as("one operation, ended without an error")
        .singleElement()
        .satisfies((timer) -> assertThat(timer.getId().getTag("error.type")).isEqualTo("none"));
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () -> {
              assertThat(
                      timer("spanner.client.attempt", "ExecuteStreamingSql", "UNAVAILABLE").count())
                  .isEqualTo(1);
              assertThat(timer("spanner.client.attempt", "ExecuteStreamingSql", "none").count())
                  .isEqualTo(1);
            });
  }

  @Test
  void anAbortedCommitRetriedByTheRunnerIsTaggedAborted() {
    DatabaseClient client = open();
    server.get().mock().putStatementResult(StatementResult.update(Statement.of(SET_NAME), 1L));
    AtomicInteger commits = new AtomicInteger();
    server
        .get()
        .setFaults(
            (method, attempt) ->
                (method.equals("Commit") && commits.incrementAndGet() == 1)
                    ? Fault.failAtStart(0, Status.ABORTED)
                    : Fault.NONE);
    client.readWriteTransaction().run((tx) -> tx.executeUpdate(Statement.of(SET_NAME)));
    awaitOperations("Commit", 2);
    assertThat(timer("spanner.client.operation", "Commit", "ABORTED").count()).isEqualTo(1);
    assertThat(timer("spanner.client.attempt", "Commit", "ABORTED").count()).isEqualTo(1);
    assertThat(timer("spanner.client.operation", "Commit", "none").count()).isEqualTo(1);
    assertThat(timer("spanner.client.attempt", "Commit", "none").count()).isEqualTo(1);
  }

  @Test
  void aResponseWithoutTheFrontendsTimeIsCountedMissing() {
    server.get().setServerTiming(false);
    DatabaseClient client = open();
    MockSpannerServer.pointSelects(client, 5);
    awaitOperations("ExecuteStreamingSql", 5);
    assertThat(
            this.meters
                .get("spanner.client.server.duration.missing")
                .tag("db.operation.name", "ExecuteStreamingSql")
                .counter()
                .count())
        .isEqualTo(5);
    assertThat(
            this.meters
                .find("spanner.client.server.duration")
                .tag("db.operation.name", "ExecuteStreamingSql")
                .timers())
        .isEmpty();
  }

  @Test
  void noStatementParameterOrRowReachesAKeyAndDistinctStatementsAddNoSeries() throws Exception {
    DatabaseClient client = open();
    List<Statement> statements = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      Statement statement =
          Statement.newBuilder(
                  "SELECT secret FROM Vault WHERE pin = 'hunter" + i + "' AND id = @id")
              .bind("id")
              .to("s3cr3t-" + i)
              .build();
      server
          .get()
          .mock()
          .putStatementResult(StatementResult.query(statement, ResultSets.pointRow()));
      statements.add(statement);
    }
    // Eight readers, as an application's threads would send them.
    ExecutorService readers = Executors.newFixedThreadPool(8);
    try {
      for (Future<?> read :
          readers.invokeAll(
              statements.stream()
                  .map(
                      (statement) ->
                          (Callable<Boolean>)
                              () -> {
                                try (ResultSet rs = client.singleUse().executeQuery(statement)) {
                                  return rs.next();
                                }
                              })
                  .toList())) {
        assertThat(read.get()).isEqualTo(true);
      }
    } finally {
      readers.shutdown();
    }
    awaitOperations("ExecuteStreamingSql", 1000);
    Set<String> values =
        this.meters.getMeters().stream()
            .flatMap((meter) -> meter.getId().getTags().stream())
            .map(Tag::getValue)
            .collect(Collectors.toSet());
    assertThat(values)
        .noneMatch((value) -> value.contains("hunter"))
        .noneMatch((value) -> value.contains("s3cr3t"))
        .noneMatch((value) -> value.contains("SELECT"))
        .noneMatch((value) -> value.contains("Vault"));
    assertThat(
            this.meters
                .find("spanner.client.operation")
                .tag("db.operation.name", "ExecuteStreamingSql")
                .meters())
        .as("one series for a thousand statements")
        .hasSize(1);
  }

  @Test
  void theEndpointsSummaryCountsOperationsPerMethodWithTheFrontendsShare() {
    SpannerTuningState state = tuned();
    DatabaseClient client = this.spanner.getDatabaseClient(DATABASE);
    MockSpannerServer.pointSelects(client, 10);
    awaitOperations("ExecuteStreamingSql", 10);
    assertThat(state.observations().status()).isEqualTo(FeatureState.Status.ON);
    CallObserver.OperationSummary reads =
        state.operations().stream()
            .filter((summary) -> summary.method().equals("ExecuteStreamingSql"))
            .findFirst()
            .orElseThrow();
    assertThat(reads.count()).isEqualTo(10);
    assertThat(reads.p50Seconds()).isPositive().isLessThanOrEqualTo(reads.p99Seconds());
    assertThat(reads.frontendShare()).isNotNull().isGreaterThan(0.0).isLessThanOrEqualTo(1.0);
  }

  @Test
  void withoutAnObserverNothingIsObserved() {
    SpannerOptions.Builder builder = server.get().clientOptions(4);
    SpannerTuningState state = SpannerTuning.newBuilder().build().applyTo(builder);
    this.spanner = builder.build().getService();
    MockSpannerServer.pointSelects(this.spanner.getDatabaseClient(DATABASE), 3);
    assertThat(state.observations().status()).isEqualTo(FeatureState.Status.OFF);
    assertThat(state.operations()).isEmpty();
  }

  private DatabaseClient open() {
    return open(server.get().clientOptions(4));
  }

  private DatabaseClient open(SpannerOptions.Builder builder) {
    tuned(builder);
    return this.spanner.getDatabaseClient(DATABASE);
  }

  private SpannerTuningState tuned() {
    return tuned(server.get().clientOptions(4));
  }

  private SpannerTuningState tuned(SpannerOptions.Builder builder) {
    this.observations
        .observationConfig()
        .observationHandler(new DefaultMeterObservationHandler(this.meters));
    SpannerTuningState state =
        SpannerTuning.newBuilder()
            .observations(new SpannerCallObservations(this.observations, this.meters))
            .build()
            .applyTo(builder);
    this.spanner = builder.build().getService();
    return state;
  }

  private void awaitOperations(String method, long count) {
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                this.meters
                        .find("spanner.client.operation")
                        .tag("db.operation.name", method)
                        .timers()
                        .stream()
                        .mapToLong(Timer::count)
                        .sum()
                    >= count);
  }

  private Timer timer(String name, String method, String errorType) {
    return this.meters
        .get(name)
        .tag("db.operation.name", method)
        .tag("error.type", errorType)
        .timer();
  }
}
