package io.github.spannertuning.metrics;

import static io.github.spannertuning.metrics.DashboardQueries.assertEvery;
import static io.github.spannertuning.metrics.DashboardQueries.assertEveryInstant;
import static io.github.spannertuning.metrics.DashboardQueries.assertNotBelow;
import static io.github.spannertuning.metrics.DashboardQueries.assertSomeAbove;
import static io.github.spannertuning.metrics.DashboardQueries.byKindAndArm;
import static io.github.spannertuning.metrics.DashboardQueries.kindAndArm;
import static io.github.spannertuning.metrics.DashboardQueries.methodsWithValues;
import static io.github.spannertuning.metrics.DashboardQueries.withValues;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.GrafanaDashboard;
import io.github.spannertuning.testing.GrafanaDashboard.Panel;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.PrometheusServer;
import io.github.spannertuning.testing.PrometheusServer.Point;
import io.github.spannertuning.testing.PrometheusServer.Sample;
import io.github.spannertuning.testing.PrometheusServer.Series;
import io.github.spannertuning.testing.StatementResult;
import io.github.spannertuning.testing.TunedInstance;
import io.grpc.Status;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Every query of the shipped Grafana dashboard, run against a real Prometheus server (Debian's
 * {@code prometheus}) that scrapes two instances of a tuned application through {@code
 * /actuator/prometheus} every second. The instances are Spring contexts in this JVM, each on its
 * own port, each a tuned spring-cloud-gcp client under load (point selects from two threads,
 * read/write transactions from a third) against one test server (simulated backend, 2-5 ms per
 * call; client, gRPC and TCP real), and each runs a switchback experiment of one pair of 3 s
 * slices, so that the experiment's panels have data.
 *
 * <p>Each panel's series must carry the labels its legend names, come from both instances where
 * they are per instance, and hold values the setup pins: counts and rates not negative, the guard's
 * timeouts and cancels and the GOAWAYs 0 (trailers 1 ms late, a 1 s drain timeout, no reset limit),
 * the experiment's recorded calls those the instances' experiments report, a fleet quantile between
 * the instances' own, and the tuned/stock ratio the quotient of the fleet quantiles. Skipped,
 * saying so, where Prometheus is not installed.
 */
@Tag("default-line")
@Tag("shares-machine")
class GrafanaDashboardIT {

  private static final Duration SCRAPE_INTERVAL = Duration.ofSeconds(1);

  private static final Duration SLICE = Duration.ofSeconds(3);

  private static final String UPDATE = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  private static final Set<String> PER_CHANNEL = Set.of("instance", "client", "channel");

  private static final Set<String> PER_CLIENT = Set.of("instance", "client");

  private static final Set<String> PER_KIND_AND_ARM = Set.of("kind", "arm");

  private static final Set<String> PER_METHOD = Set.of("spanner_client", "db_operation_name");

  /** A query the test server rejects, with a literal that must show in no label value. */
  private static final String REJECTED =
      "SELECT name FROM Singers WHERE name = 'secret-literal-7f3a'";

  /** Rejected queries each instance sends before its experiment: the only failed operations. */
  static final int REJECTED_PER_INSTANCE = 3;

  /** Load threads per instance, each with one call in flight at a time. */
  static final int LOAD_THREADS = 3;

  private final HttpClient http = HttpClient.newHttpClient();

  /** What the run left in Prometheus, and what the instances reported, for the checks. */
  private PrometheusServer prometheus;

  private GrafanaDashboard dashboard;

  private List<TunedInstance> instances;

  private Instant start;

  private Instant end;

  /** When Prometheus had scraped the load's series twice: a rate's window after it is whole. */
  private Instant loaded;

  private final Map<String, Long> recordedCalls = new HashMap<>();

  /** The run's series as Grafana queries them, once the run is done. */
  private DashboardQueries query;

  @Test
  void everyPanelsQueriesGiveTheSeriesAndValuesTheRunPins() throws Exception {
    assumeTrue(PrometheusServer.find().isPresent(), PrometheusServer.notFoundMessage());
    long began = System.nanoTime();
    this.dashboard = GrafanaDashboard.load();
    try (MockSpannerServer server = MockSpannerServer.start()) {
      server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
      server
          .mock()
          .putStatementResult(
              StatementResult.exception(
                  Statement.of(REJECTED),
                  Status.INVALID_ARGUMENT
                      .withDescription("rejected by the test")
                      .asRuntimeException()));
      List<Integer> ports = List.of(PrometheusServer.freePort(), PrometheusServer.freePort());
      // Prometheus first: it finds its targets about 5 s after it starts, while they start.
      try (PrometheusServer prometheus =
          PrometheusServer.start(
              SCRAPE_INTERVAL, ports.stream().map((port) -> "127.0.0.1:" + port).toList())) {
        this.prometheus = prometheus;
        this.start = Instant.now();
        this.instances = startInstances(server, ports);
        try {
          long started = System.nanoTime();
          run();
          long ran = System.nanoTime();
          this.query =
              new DashboardQueries(
                  prometheus, this.instances, SCRAPE_INTERVAL, this.start, this.loaded, this.end);
          checkEveryPanel();
          ObservationSeriesChecks.checkObservationMeters(this.query);
          System.out.printf(
              "GrafanaDashboardIT: %.1f s in all: Prometheus and the instances started in %.1f s,"
                  + " the run %.1f s, %d queries %.1f s%n",
              (System.nanoTime() - began) / 1e9,
              (started - began) / 1e9,
              (ran - started) / 1e9,
              this.query.queries(),
              (System.nanoTime() - ran) / 1e9);
        } finally {
          this.instances.forEach(TunedInstance::close);
        }
      }
    }
  }

  private static List<TunedInstance> startInstances(MockSpannerServer server, List<Integer> ports) {
    // Side by side: each context takes seconds to start, mostly loading classes.
    List<CompletableFuture<TunedInstance>> starting = new ArrayList<>();
    for (int port : ports) {
      starting.add(
          CompletableFuture.supplyAsync(
              () ->
                  TunedInstance.start(
                      server,
                      port,
                      // The experiment's carry-over is the drain timeout or 2 s, the longer.
                      "spanner.tuning.stream-end-guard.drain-timeout=1s",
                      // Buckets of the operation timers, for the dashboard's quantiles.
                      "management.metrics.distribution.percentiles-histogram.spanner.client=true")));
    }
    try {
      CompletableFuture.allOf(starting.toArray(CompletableFuture[]::new)).join();
    } catch (RuntimeException ex) {
      starting.stream()
          .filter((f) -> !f.isCompletedExceptionally())
          .forEach((f) -> f.join().close());
      throw ex;
    }
    return starting.stream().map(CompletableFuture::join).toList();
  }

  /**
   * Load on both instances, one scrape of every series before the experiments start (so that an
   * increase over the run counts every recorded call), the experiments to their end, and two
   * scrapes after it, with the load still on.
   */
  private void run() throws Exception {
    AtomicBoolean loading = new AtomicBoolean(true);
    List<Thread> load = new ArrayList<>();
    for (TunedInstance instance : this.instances) {
      DatabaseClient client = instance.databaseClient();
      load.add(new Thread(() -> pointSelects(client, loading)));
      load.add(new Thread(() -> pointSelects(client, loading)));
      load.add(new Thread(() -> transactions(client, loading)));
    }
    load.forEach(Thread::start);
    try {
      // One rejected query makes the series; the rest come once it was scraped, so that a rate
      // over the window they fall in counts them (a series' first value is in no rate).
      for (TunedInstance instance : this.instances) {
        rejectedQueries(instance.databaseClient(), 1);
      }
      this.prometheus.awaitScrapes(2, Duration.ofSeconds(20));
      for (TunedInstance instance : this.instances) {
        rejectedQueries(instance.databaseClient(), REJECTED_PER_INSTANCE - 1);
      }
      this.prometheus.awaitScrapes(2, Duration.ofSeconds(20));
      this.loaded = Instant.now();
      for (TunedInstance instance : this.instances) {
        HttpResponse<String> started =
            this.http.send(
                HttpRequest.newBuilder(
                        URI.create(
                            "http://"
                                + instance.target()
                                + "/actuator/spannertuning/spanner/experiment"))
                    .header("Content-Type", "application/json")
                    .POST(
                        HttpRequest.BodyPublishers.ofString(
                            "{\"duration\": \"6s\", \"slice\": \"" + SLICE.toSeconds() + "s\"}"))
                    .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(started.statusCode()).as(started.body()).isEqualTo(200);
      }
      this.prometheus.awaitScrapes(1, Duration.ofSeconds(5));
      assertThat(this.instances)
          .as("still running after a scrape since they started, which saw them running")
          .allMatch((instance) -> instance.tuning().isExperimentRunning());
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () ->
                  this.instances.stream()
                      .noneMatch((instance) -> instance.tuning().isExperimentRunning()));
      this.prometheus.awaitScrapes(2, Duration.ofSeconds(20));
      this.end = Instant.now();
    } finally {
      loading.set(false);
      for (Thread thread : load) {
        thread.join();
      }
    }
    for (TunedInstance instance : this.instances) {
      assertThat(instance.tuning().experiment().state()).isEqualTo("done");
      instance
          .tuning()
          .experiment()
          .results()
          .forEach(
              (kind, result) -> {
                this.recordedCalls.merge(kind + " tuned", result.calls().tuned(), Long::sum);
                this.recordedCalls.merge(kind + " stock", result.calls().stock(), Long::sum);
              });
    }
  }

  private void checkEveryPanel() throws Exception {
    checkVariables();
    List<String> titles = new ArrayList<>();
    for (Panel panel : this.dashboard.panels()) {
      titles.add(panel.title());
      switch (panel.title()) {
        case "Calls in flight per channel" -> {
          List<Series> inFlight = this.query.range(panel, "A", PER_CHANNEL);
          assertEvery(inFlight, panel, (v) -> v >= 0 && v == Math.rint(v), "a count");
          assertSomeAbove(inFlight, panel, 0);
        }
        case "Latency estimate per channel" -> {
          List<Series> latency = this.query.range(panel, "A", PER_CHANNEL);
          // 1 ms is where a channel's estimate starts before its first answer; a call takes at
          // least the server's 2 ms, and more as the machine gets busier (hundreds of ms with
          // twenty runnable processes on two cores). The ceiling says the figure is in seconds.
          assertEvery(latency, panel, (v) -> v >= 0.001 && v <= 10, "between 1 ms and 10 s");
          List<Double> last = latency.stream().map(DashboardQueries::lastValue).sorted().toList();
          assertThat(last.get(last.size() / 2))
              .as("%s: the median channel's estimate at the end, of %s", panel.title(), last)
              .isBetween(0.002, 10.0);
        }
        case "Calls started per channel" -> {
          List<Series> calls = this.query.range(panel, "A", PER_CHANNEL);
          assertEvery(calls, panel, (v) -> v >= 0, "a rate");
          this.query.assertEachInstanceAbove(calls, panel, 0);
        }
        case "Channel imbalance" -> {
          List<Series> imbalance = this.query.range(panel, "A", PER_CLIENT);
          // busiest over the mean of a pool of 8: from 1 (even) to 8 (all on one channel)
          assertEvery(imbalance, panel, (v) -> v >= 1 && v <= 8, "between 1 and 8");
          this.query.assertEachInstanceAbove(imbalance, panel, 0);
        }
        case "Routed calls" -> {
          for (String refId : List.of("A", "B")) {
            List<Series> routed = this.query.range(panel, refId, PER_CLIENT);
            assertEvery(routed, panel, (v) -> v >= 0, "a rate");
            this.query.assertEachInstanceAbove(routed, panel, 0);
          }
        }
        case "Stream-end guard" -> {
          List<Series> skipped = this.query.range(panel, "A", PER_CLIENT);
          assertEvery(skipped, panel, (v) -> v >= 0, "a rate");
          if (!GuardLine.clientSkipsCancelAtLast()) {
            this.query.assertEachInstanceAbove(skipped, panel, 0);
          }
          List<Series> drained = this.query.range(panel, "B", PER_CLIENT);
          assertEvery(drained, panel, (v) -> v >= 0, "a rate");
          this.query.assertEachInstanceAbove(drained, panel, 0);
          for (String refId : List.of("C", "D")) {
            assertEvery(this.query.range(panel, refId, PER_CLIENT), panel, (v) -> v == 0, "0");
          }
        }
        case "Draining streams" ->
            assertEvery(
                this.query.range(panel, "A", PER_CLIENT),
                panel,
                (v) -> v >= 0 && v == Math.rint(v),
                "a count");
        case "Experiment running" -> {
          for (Series running : this.query.range(panel, "A", PER_CLIENT)) {
            List<Double> values = running.points().stream().map(Point::value).toList();
            assertThat(values).as("%s of %s", panel.title(), running.labels()).contains(1.0);
            assertThat(values.get(values.size() - 1)).as("at the end").isZero();
          }
        }
        case "Recorded calls per arm, fleet" -> {
          double extrapolated = this.query.extrapolation();
          for (Sample calls : this.query.instant(panel, "A", PER_KIND_AND_ARM)) {
            long reported = this.recordedCalls.getOrDefault(kindAndArm(calls), 0L);
            assertThat(calls.value())
                .as("%s: %s against the experiments' own %d", panel.title(), calls, reported)
                .isBetween((double) reported, reported * extrapolated);
          }
          assertThat(this.recordedCalls)
              .as("every kind in both arms")
              .hasSize(6)
              .allSatisfy((kind, calls) -> assertThat(calls).isPositive());
          assertEveryInstant(
              this.query.instant(panel, "B", PER_KIND_AND_ARM), panel, (v) -> v == 0, "0");
        }
        case "GOAWAYs per arm, fleet" -> {
          List<Sample> goAways = this.query.instant(panel, "A", Set.of("arm"));
          assertThat(goAways.stream().map((s) -> s.labels().get("arm")))
              .containsExactlyInAnyOrder("tuned", "stock");
          assertEveryInstant(goAways, panel, (v) -> v == 0, "0: the server has no reset limit");
        }
        case "Experiment latency per arm, fleet" -> {
          List<Series> p50 = this.query.range(panel, "A", PER_KIND_AND_ARM);
          List<Series> p99 = this.query.range(panel, "B", PER_KIND_AND_ARM);
          for (List<Series> quantile : List.of(p50, p99)) {
            assertEvery(quantile, panel, (v) -> v >= 0.001 && v <= 30, "within the buckets");
            assertThat(withValues(quantile))
                .as("%s: series with values", panel.title())
                .contains(
                    "single-use tuned",
                    "single-use stock",
                    "transaction-query tuned",
                    "commit stock");
          }
          assertNotBelow(p99, p50, panel, DashboardQueries::kindAndArm);
        }
        case "P50 and P99 per arm over the time range, fleet" -> {
          for (String refId : List.of("A", "B")) {
            List<Sample> fleet = this.query.instant(panel, refId, PER_KIND_AND_ARM);
            assertThat(fleet.stream().map(DashboardQueries::kindAndArm))
                .containsExactlyInAnyOrderElementsOf(this.recordedCalls.keySet());
            this.query.assertBetweenTheInstances(panel, refId, fleet);
          }
        }
        case "Tuned / stock over the time range, fleet" -> {
          Panel quantiles = this.dashboard.panel("P50 and P99 per arm over the time range, fleet");
          for (String[] refIds : new String[][] {{"A", "A"}, {"B", "B"}}) {
            Map<String, Double> fleet =
                byKindAndArm(this.query.instant(quantiles, refIds[1], null));
            List<Sample> ratios = this.query.instant(panel, refIds[0], Set.of("kind"));
            System.out.printf(
                "GrafanaDashboardIT: fleet %s %s, tuned / stock %s%n",
                refIds[1].equals("A") ? "P50" : "P99",
                new TreeMap<>(fleet),
                ratios.stream()
                    .map((r) -> r.labels().get("kind") + String.format(" %.3f", r.value()))
                    .toList());
            assertThat(ratios).hasSize(3);
            for (Sample ratio : ratios) {
              String kind = ratio.labels().get("kind");
              assertThat(ratio.value())
                  .as("%s %s: the fleet's tuned over stock quantile", panel.title(), kind)
                  .isCloseTo(
                      fleet.get(kind + " tuned") / fleet.get(kind + " stock"),
                      Percentage.withPercentage(1e-6));
            }
          }
        }
        case "Operation latency by method" -> {
          List<Series> p50 = this.query.range(panel, "A", PER_METHOD);
          List<Series> p99 = this.query.range(panel, "B", PER_METHOD);
          List<Series> mean = this.query.range(panel, "C", PER_METHOD);
          for (List<Series> latency : List.of(p50, p99, mean)) {
            ObservationSeriesChecks.assertOfTheClient(latency, panel);
            assertThat(methodsWithValues(latency))
                .as("%s: methods with values", panel.title())
                .containsAll(ObservationSeriesChecks.LOAD_METHODS);
            assertEvery(latency, panel, (v) -> v >= 0 && v <= 30, "within the buckets");
            // Every data-plane call waits the test server's 2 ms at least: a quantile lies in or
            // above the bucket that holds 2 ms, which starts above 1 ms.
            assertEvery(
                ObservationSeriesChecks.loadMethods(latency),
                panel,
                (v) -> v > 0.001,
                "above 1 ms: the server's 2 ms");
          }
          assertEvery(
              ObservationSeriesChecks.loadMethods(mean),
              panel,
              (v) -> v >= 0.002,
              "at least the server's 2 ms");
          assertNotBelow(p99, p50, panel, (labels) -> labels.get("db_operation_name"));
        }
        case "Frontend's share of attempt time" -> {
          List<Series> share = this.query.range(panel, "A", PER_METHOD);
          ObservationSeriesChecks.assertOfTheClient(share, panel);
          assertThat(methodsWithValues(share))
              .as("%s: methods with values", panel.title())
              .containsAll(ObservationSeriesChecks.LOAD_METHODS);
          assertEvery(share, panel, (v) -> v >= 0, "not negative");
          // The test server times each call from its arrival to its response headers; the client
          // times the attempt from before it sends to its close, on the same clock, and records
          // it before the frontend's time: the frontend's time is within the attempt's, and
          // above 0, since it holds the server's 2 ms. Windows that began before the series
          // were scraped twice are left out: their extrapolations differ.
          assertEvery(
              this.query.afterLoaded(ObservationSeriesChecks.loadMethods(share)),
              panel,
              (v) -> v > 0 && v <= 1,
              "within the attempts' time, and above 0");
          assertSomeAbove(
              this.query.afterLoaded(ObservationSeriesChecks.loadMethods(share)), panel, 0);
        }
        case "Attempts per operation" -> {
          List<Series> perOperation = this.query.range(panel, "A", PER_METHOD);
          ObservationSeriesChecks.assertOfTheClient(perOperation, panel);
          assertThat(methodsWithValues(perOperation))
              .as("%s: methods with values", panel.title())
              .containsAll(ObservationSeriesChecks.LOAD_METHODS);
          assertEvery(perOperation, panel, (v) -> v > 0, "above 0");
          ObservationSeriesChecks.assertOneAttemptPerOperation(this.query, panel, perOperation);
        }
        case "Operation errors by code" -> {
          List<Series> errors =
              this.query.range(
                  panel, "A", Set.of("spanner_client", "db_operation_name", "error_type"));
          assertThat(errors.stream().map(Series::labels).toList())
              .as("%s: only the rejected queries failed", panel.title())
              .containsExactly(
                  Map.of(
                      "spanner_client", "spanner",
                      "db_operation_name", "ExecuteStreamingSql",
                      "error_type", "INVALID_ARGUMENT"));
          assertEvery(errors, panel, (v) -> v >= 0, "a rate");
          assertSomeAbove(errors, panel, 0);
        }
        default -> fail("no check for the dashboard's panel '%s'", panel.title());
      }
    }
    System.out.printf("GrafanaDashboardIT: checked the panels %s%n", titles);
  }

  /** The variables' queries find the application's client and both instances. */
  private void checkVariables() throws Exception {
    Map<String, String> variables = this.query.variables();
    for (GrafanaDashboard.Variable variable : this.dashboard.variables()) {
      if (variable.type().equals("datasource")) {
        continue;
      }
      Set<String> values = new TreeSet<>();
      for (Sample sample :
          this.query.sendInstant(GrafanaDashboard.expand(variable.promql(), variables))) {
        values.add(sample.labels().get(variable.name()));
      }
      Set<String> expected =
          switch (variable.name()) {
            case "client" -> Set.of("spanner");
            case "instance" ->
                this.instances.stream().map(TunedInstance::target).collect(Collectors.toSet());
            default -> throw new AssertionError("no check for variable " + variable.name());
          };
      assertThat(values).as("values of $%s", variable.name()).isEqualTo(expected);
    }
  }

  private static void rejectedQueries(DatabaseClient client, int count) {
    for (int i = 0; i < count; i++) {
      try (ResultSet resultSet = client.singleUse().executeQuery(Statement.of(REJECTED))) {
        resultSet.next();
        fail("the test server rejects " + REJECTED);
      } catch (SpannerException ex) {
        assertThat(ex.getErrorCode()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
      }
    }
  }

  private static void pointSelects(DatabaseClient client, AtomicBoolean loading) {
    while (loading.get()) {
      try (ResultSet resultSet =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        resultSet.next();
      }
    }
  }

  private static void transactions(DatabaseClient client, AtomicBoolean loading) {
    while (loading.get()) {
      client
          .readWriteTransaction()
          .run(
              (tx) -> {
                try (ResultSet resultSet =
                    tx.executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
                  while (resultSet.next()) {
                    // read to the end, as a read-modify-write does
                  }
                }
                return tx.executeUpdate(Statement.of(UPDATE));
              });
    }
  }
}
