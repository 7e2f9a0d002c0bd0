package io.github.spannertuning.metrics;

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
import io.github.spannertuning.testing.GrafanaDashboard.Target;
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
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.DoublePredicate;
import java.util.function.Function;
import java.util.regex.Pattern;
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
  private static final int REJECTED_PER_INSTANCE = 3;

  /** The methods the load calls: point selects and transactions' queries, updates and commits. */
  private static final Set<String> LOAD_METHODS =
      Set.of("ExecuteStreamingSql", "ExecuteSql", "Commit");

  /** Load threads per instance, each with one call in flight at a time. */
  private static final int LOAD_THREADS = 3;

  /** Spanner's RPC methods that may name an operation. */
  private static final Set<String> SPANNER_METHODS =
      Set.of(
          "BatchCreateSessions",
          "CreateSession",
          "GetSession",
          "DeleteSession",
          "ExecuteSql",
          "ExecuteStreamingSql",
          "ExecuteBatchDml",
          "Read",
          "StreamingRead",
          "BeginTransaction",
          "Commit",
          "Rollback",
          "PartitionQuery",
          "PartitionRead",
          "BatchWrite");

  /** A label value with no space, quote or parenthesis: no SQL. */
  private static final Pattern NO_SQL = Pattern.compile("[A-Za-z0-9_.:/-]*");

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
          checkEveryPanel();
          checkObservationMeters();
          System.out.printf(
              "GrafanaDashboardIT: %.1f s in all: Prometheus and the instances started in %.1f s,"
                  + " the run %.1f s, %d queries %.1f s%n",
              (System.nanoTime() - began) / 1e9,
              (started - began) / 1e9,
              (ran - started) / 1e9,
              this.queries,
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

  private int queries;

  private void checkEveryPanel() throws Exception {
    checkVariables();
    List<String> titles = new ArrayList<>();
    for (Panel panel : this.dashboard.panels()) {
      titles.add(panel.title());
      switch (panel.title()) {
        case "Calls in flight per channel" -> {
          List<Series> inFlight = range(panel, "A", PER_CHANNEL);
          assertEvery(inFlight, panel, (v) -> v >= 0 && v == Math.rint(v), "a count");
          assertSomeAbove(inFlight, panel, 0);
        }
        case "Latency estimate per channel" -> {
          List<Series> latency = range(panel, "A", PER_CHANNEL);
          // 1 ms is where a channel's estimate starts before its first answer; a call takes at
          // least the server's 2 ms, and more as the machine gets busier (hundreds of ms with
          // twenty runnable processes on two cores). The ceiling says the figure is in seconds.
          assertEvery(latency, panel, (v) -> v >= 0.001 && v <= 10, "between 1 ms and 10 s");
          List<Double> last = latency.stream().map(GrafanaDashboardIT::lastValue).sorted().toList();
          assertThat(last.get(last.size() / 2))
              .as("%s: the median channel's estimate at the end, of %s", panel.title(), last)
              .isBetween(0.002, 10.0);
        }
        case "Calls started per channel" -> {
          List<Series> calls = range(panel, "A", PER_CHANNEL);
          assertEvery(calls, panel, (v) -> v >= 0, "a rate");
          assertEachInstanceAbove(calls, panel, 0);
        }
        case "Channel imbalance" -> {
          List<Series> imbalance = range(panel, "A", PER_CLIENT);
          // busiest over the mean of a pool of 8: from 1 (even) to 8 (all on one channel)
          assertEvery(imbalance, panel, (v) -> v >= 1 && v <= 8, "between 1 and 8");
          assertEachInstanceAbove(imbalance, panel, 0);
        }
        case "Routed calls" -> {
          for (String refId : List.of("A", "B")) {
            List<Series> routed = range(panel, refId, PER_CLIENT);
            assertEvery(routed, panel, (v) -> v >= 0, "a rate");
            assertEachInstanceAbove(routed, panel, 0);
          }
        }
        case "Stream-end guard" -> {
          List<Series> skipped = range(panel, "A", PER_CLIENT);
          assertEvery(skipped, panel, (v) -> v >= 0, "a rate");
          if (!GuardLine.clientSkipsCancelAtLast()) {
            assertEachInstanceAbove(skipped, panel, 0);
          }
          List<Series> drained = range(panel, "B", PER_CLIENT);
          assertEvery(drained, panel, (v) -> v >= 0, "a rate");
          assertEachInstanceAbove(drained, panel, 0);
          for (String refId : List.of("C", "D")) {
            assertEvery(range(panel, refId, PER_CLIENT), panel, (v) -> v == 0, "0");
          }
        }
        case "Draining streams" ->
            assertEvery(
                range(panel, "A", PER_CLIENT),
                panel,
                (v) -> v >= 0 && v == Math.rint(v),
                "a count");
        case "Experiment running" -> {
          for (Series running : range(panel, "A", PER_CLIENT)) {
            List<Double> values = running.points().stream().map(Point::value).toList();
            assertThat(values).as("%s of %s", panel.title(), running.labels()).contains(1.0);
            assertThat(values.get(values.size() - 1)).as("at the end").isZero();
          }
        }
        case "Recorded calls per arm, fleet" -> {
          double extrapolated = extrapolation();
          for (Sample calls : instant(panel, "A", PER_KIND_AND_ARM)) {
            long reported = this.recordedCalls.getOrDefault(kindAndArm(calls), 0L);
            assertThat(calls.value())
                .as("%s: %s against the experiments' own %d", panel.title(), calls, reported)
                .isBetween((double) reported, reported * extrapolated);
          }
          assertThat(this.recordedCalls)
              .as("every kind in both arms")
              .hasSize(6)
              .allSatisfy((kind, calls) -> assertThat(calls).isPositive());
          assertEveryInstant(instant(panel, "B", PER_KIND_AND_ARM), panel, (v) -> v == 0, "0");
        }
        case "GOAWAYs per arm, fleet" -> {
          List<Sample> goAways = instant(panel, "A", Set.of("arm"));
          assertThat(goAways.stream().map((s) -> s.labels().get("arm")))
              .containsExactlyInAnyOrder("tuned", "stock");
          assertEveryInstant(goAways, panel, (v) -> v == 0, "0: the server has no reset limit");
        }
        case "Experiment latency per arm, fleet" -> {
          List<Series> p50 = range(panel, "A", PER_KIND_AND_ARM);
          List<Series> p99 = range(panel, "B", PER_KIND_AND_ARM);
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
          assertNotBelow(p99, p50, panel, GrafanaDashboardIT::kindAndArm);
        }
        case "P50 and P99 per arm over the time range, fleet" -> {
          for (String refId : List.of("A", "B")) {
            List<Sample> fleet = instant(panel, refId, PER_KIND_AND_ARM);
            assertThat(fleet.stream().map(GrafanaDashboardIT::kindAndArm))
                .containsExactlyInAnyOrderElementsOf(this.recordedCalls.keySet());
            assertBetweenTheInstances(panel, refId, fleet);
          }
        }
        case "Tuned / stock over the time range, fleet" -> {
          Panel quantiles = this.dashboard.panel("P50 and P99 per arm over the time range, fleet");
          for (String[] refIds : new String[][] {{"A", "A"}, {"B", "B"}}) {
            Map<String, Double> fleet = byKindAndArm(instant(quantiles, refIds[1], null));
            List<Sample> ratios = instant(panel, refIds[0], Set.of("kind"));
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
          List<Series> p50 = range(panel, "A", PER_METHOD);
          List<Series> p99 = range(panel, "B", PER_METHOD);
          List<Series> mean = range(panel, "C", PER_METHOD);
          for (List<Series> latency : List.of(p50, p99, mean)) {
            assertOfTheClient(latency, panel);
            assertThat(methodsWithValues(latency))
                .as("%s: methods with values", panel.title())
                .containsAll(LOAD_METHODS);
            assertEvery(latency, panel, (v) -> v >= 0 && v <= 30, "within the buckets");
            // Every data-plane call waits the test server's 2 ms at least: a quantile lies in or
            // above the bucket that holds 2 ms, which starts above 1 ms.
            assertEvery(
                loadMethods(latency), panel, (v) -> v > 0.001, "above 1 ms: the server's 2 ms");
          }
          assertEvery(loadMethods(mean), panel, (v) -> v >= 0.002, "at least the server's 2 ms");
          assertNotBelow(p99, p50, panel, (labels) -> labels.get("db_operation_name"));
        }
        case "Frontend's share of attempt time" -> {
          List<Series> share = range(panel, "A", PER_METHOD);
          assertOfTheClient(share, panel);
          assertThat(methodsWithValues(share))
              .as("%s: methods with values", panel.title())
              .containsAll(LOAD_METHODS);
          assertEvery(share, panel, (v) -> v >= 0, "not negative");
          // The test server times each call from its arrival to its response headers; the client
          // times the attempt from before it sends to its close, on the same clock, and records
          // it before the frontend's time: the frontend's time is within the attempt's, and
          // above 0, since it holds the server's 2 ms. Windows that began before the series
          // were scraped twice are left out: their extrapolations differ.
          assertEvery(
              afterLoaded(loadMethods(share)),
              panel,
              (v) -> v > 0 && v <= 1,
              "within the attempts' time, and above 0");
          assertSomeAbove(afterLoaded(loadMethods(share)), panel, 0);
        }
        case "Attempts per operation" -> {
          List<Series> perOperation = range(panel, "A", PER_METHOD);
          assertOfTheClient(perOperation, panel);
          assertThat(methodsWithValues(perOperation))
              .as("%s: methods with values", panel.title())
              .containsAll(LOAD_METHODS);
          assertEvery(perOperation, panel, (v) -> v > 0, "above 0");
          assertOneAttemptPerOperation(panel, perOperation);
        }
        case "Operation errors by code" -> {
          List<Series> errors =
              range(panel, "A", Set.of("spanner_client", "db_operation_name", "error_type"));
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

  /**
   * Attempts per operation are 1, nothing being retried, up to the calls in flight at the window's
   * two ends: a method's attempts and operations that ended in a window differ by at most the
   * operations whose attempt ended on the other side of one of its ends: a stream past its last
   * message still draining (a call in flight on its channel), or a call between its attempt's end
   * and its own, one per load thread. Checked where the window began after the series were scraped
   * twice, where the two rates are extrapolated alike, against the operations that ended in the
   * window, from the same samples.
   */
  private void assertOneAttemptPerOperation(Panel panel, List<Series> perOperation)
      throws Exception {
    String ended =
        GrafanaDashboard.expand(
            "sum by (spanner_client, db_operation_name) (max_over_time("
                + "spanner_client_operation_seconds_count{spanner_client=~\"$client\","
                + " instance=~\"$instance\"}[$__rate_interval]) - min_over_time("
                + "spanner_client_operation_seconds_count{spanner_client=~\"$client\","
                + " instance=~\"$instance\"}[$__rate_interval]))",
            variables());
    Map<String, Map<Instant, Double>> operations = new HashMap<>();
    for (Series series :
        this.prometheus.queryRange(ended, this.end.minus(runLength()), this.end, SCRAPE_INTERVAL)) {
      Map<Instant, Double> points = new HashMap<>();
      series.points().forEach((p) -> points.put(p.time(), p.value()));
      operations.put(method(series.labels()), points);
    }
    this.queries++;
    // Streams whose last message came and whose attempt waits for its trailers are calls in
    // flight on their channel: the most the fleet had at a scrape, at either end of a window.
    double streams =
        sendInstant(
                GrafanaDashboard.expand(
                    "max_over_time(sum(spanner_tuning_channel_active_streams{client=~\"$client\","
                        + " instance=~\"$instance\"})[$__range:1s])",
                    variables()))
            .get(0)
            .value();
    double inFlight = 2 * (streams + LOAD_THREADS * this.instances.size());
    Map<String, Instant> settled = new HashMap<>();
    for (String meter :
        List.of("spanner_client_attempt_seconds_count", "spanner_client_operation_seconds_count")) {
      for (Series series :
          this.prometheus.queryRange(
              GrafanaDashboard.expand(
                  meter + "{spanner_client=~\"$client\", instance=~\"$instance\"}", variables()),
              this.end.minus(runLength()),
              this.end,
              SCRAPE_INTERVAL)) {
        if (!series.points().isEmpty()) {
          settled.merge(
              method(series.labels()),
              series.points().get(0).time().plus(SCRAPE_INTERVAL.multipliedBy(5)),
              (a, b) -> a.isAfter(b) ? a : b);
        }
      }
      this.queries++;
    }
    int checked = 0;
    for (Series series : afterLoaded(loadMethods(perOperation))) {
      Instant from = settled.getOrDefault(method(series.labels()), Instant.MAX);
      for (Point point : series.points()) {
        if (point.time().isBefore(from)) {
          continue;
        }
        Double count = operations.get(method(series.labels())).get(point.time());
        if (Double.isNaN(point.value()) || count == null || count == 0) {
          continue;
        }
        assertThat(Math.abs(point.value() - 1))
            .as(
                "%s %s at %s = %s: 1 within %s calls in flight of %s operations",
                panel.title(), series.labels(), point.time(), point.value(), inFlight, count)
            .isLessThanOrEqualTo(inFlight / count);
        checked++;
      }
    }
    assertThat(checked).as("%s: points checked", panel.title()).isPositive();
  }

  /**
   * A real Prometheus scrape holds the operation, attempt and frontend timers of the instances'
   * client, with exactly the five keys as labels besides Prometheus's own and Micrometer's {@code
   * error}, none holding SQL; and the rejected queries as failed operations of one attempt each.
   */
  private void checkObservationMeters() throws Exception {
    Set<String> targets =
        this.instances.stream().map(TunedInstance::target).collect(Collectors.toSet());
    for (String meter :
        List.of(
            "spanner_client_operation_seconds_count",
            "spanner_client_attempt_seconds_count",
            "spanner_client_server_duration_seconds_count")) {
      List<Sample> samples = sendInstant(meter);
      Set<String> keys =
          new TreeSet<>(
              Set.of(
                  "__name__",
                  "instance",
                  "job",
                  "db_system_name",
                  "db_operation_name",
                  "db_namespace",
                  "error_type",
                  "spanner_client"));
      if (!meter.contains("server")) {
        keys.add("error"); // Micrometer's observation handler's own
      }
      assertThat(samples).as(meter).isNotEmpty();
      for (Sample sample : samples) {
        Map<String, String> labels = sample.labels();
        assertThat(labels.keySet()).as("%s labels", meter).isEqualTo(keys);
        assertThat(labels)
            .as(meter)
            .containsEntry("db_system_name", "gcp.spanner")
            .containsEntry("db_namespace", TunedInstance.DATABASE.getDatabase())
            .containsEntry("spanner_client", "spanner")
            .containsEntry("job", PrometheusServer.JOB);
        assertThat(labels.get("db_operation_name")).as(meter).isIn(SPANNER_METHODS);
        // The rejected queries fail; in the experiment's stock arm the client (6.119) cancels each
        // point select it closes at its last row, so those attempts end CANCELLED, while their
        // operations ended at the last row; the frontend's time is recorded per attempt.
        if (!meter.startsWith("spanner_client_operation")) {
          assertThat(labels.get("error_type"))
              .as(meter)
              .isIn("none", "INVALID_ARGUMENT", "CANCELLED");
        } else {
          assertThat(labels.get("error_type")).as(meter).isIn("none", "INVALID_ARGUMENT");
        }
        assertThat(labels.values())
            .as("%s: no SQL in a label value", meter)
            .allMatch((value) -> NO_SQL.matcher(value).matches())
            .noneMatch((value) -> value.contains("secret-literal"));
      }
      assertThat(
              samples.stream().map((s) -> s.labels().get("instance")).collect(Collectors.toSet()))
          .as("%s: both instances", meter)
          .isEqualTo(targets);
      assertThat(
              samples.stream()
                  .filter((s) -> s.labels().get("error_type").equals("none"))
                  .map((s) -> s.labels().get("db_operation_name"))
                  .collect(Collectors.toSet()))
          .as("%s: the load's methods", meter)
          .containsAll(LOAD_METHODS);
    }
    for (String meter :
        List.of("spanner_client_operation_seconds_count", "spanner_client_attempt_seconds_count")) {
      List<Sample> rejected = sendInstant(meter + "{error_type=\"INVALID_ARGUMENT\"}");
      assertThat(rejected).as("%s of the rejected queries", meter).hasSize(targets.size());
      for (Sample sample : rejected) {
        assertThat(sample.labels().get("db_operation_name")).isEqualTo("ExecuteStreamingSql");
        assertThat(sample.value())
            .as("%s of %s", meter, sample.labels())
            .isEqualTo(REJECTED_PER_INSTANCE);
      }
    }
  }

  /**
   * How far {@code increase()} over the run may overstate a counter that was 0 at its first scrape:
   * Prometheus extrapolates from the last sample to the window's end when that is at most 1.1
   * average scrape intervals away, and not before a first sample of 0. With {@code n} samples, at
   * most {@code 1 + 1.1 / (n - 1)} times the true increase.
   */
  private double extrapolation() throws Exception {
    String samples =
        GrafanaDashboard.expand(
            "min(count_over_time(spanner_tuning_experiment_calls_total[$__range]))", variables());
    double fewest = sendInstant(samples).get(0).value();
    assertThat(fewest).as("samples of every series").isGreaterThanOrEqualTo(4);
    return 1 + 1.1 / (fewest - 1);
  }

  /** The variables' queries find the application's client and both instances. */
  private void checkVariables() throws Exception {
    Map<String, String> variables = variables();
    for (GrafanaDashboard.Variable variable : this.dashboard.variables()) {
      if (variable.type().equals("datasource")) {
        continue;
      }
      Set<String> values = new TreeSet<>();
      for (Sample sample :
          this.prometheus.query(GrafanaDashboard.expand(variable.promql(), variables), this.end)) {
        values.add(sample.labels().get(variable.name()));
      }
      this.queries++;
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

  /**
   * A fleet quantile lies between the instances' own: the fleet's buckets are the sum of theirs,
   * and a quantile of a sum of histograms, interpolated within the same buckets, lies between the
   * quantiles of its parts.
   */
  private void assertBetweenTheInstances(Panel panel, String refId, List<Sample> fleet)
      throws Exception {
    List<Map<String, Double>> each = new ArrayList<>();
    for (TunedInstance instance : this.instances) {
      Map<String, String> variables = variables();
      variables.put("instance", instance.target().replace(".", "\\\\."));
      each.add(byKindAndArm(sendInstant(panel.target(refId).expand(variables))));
    }
    for (Sample sample : fleet) {
      String key = kindAndArm(sample);
      double low = each.stream().mapToDouble((m) -> m.get(key)).min().getAsDouble();
      double high = each.stream().mapToDouble((m) -> m.get(key)).max().getAsDouble();
      assertThat(sample.value())
          .as("%s %s %s: between the instances' %s and %s", panel.title(), refId, key, low, high)
          .isBetween(low * (1 - 1e-9), high * (1 + 1e-9));
    }
  }

  private Map<String, String> variables() {
    return new HashMap<>(GrafanaDashboard.allOf(runLength(), SCRAPE_INTERVAL));
  }

  /** The dashboard's time range: the run, from before Prometheus's first scrape, in seconds. */
  private Duration runLength() {
    return Duration.ofSeconds(Duration.between(this.start, this.end).toSeconds() + 1);
  }

  /** A time series panel's query, as Grafana sends it: over the run, a point a second. */
  private List<Series> range(Panel panel, String refId, Set<String> labels) throws Exception {
    Target target = panel.target(refId);
    assertThat(target.instant()).as("%s %s is a range query", panel.title(), refId).isFalse();
    String promql = target.expand(variables());
    // Points a second apart that end at the run's end, as Grafana's end at "now".
    List<Series> series =
        this.prometheus.queryRange(promql, this.end.minus(runLength()), this.end, SCRAPE_INTERVAL);
    this.queries++;
    assertThat(series).as("%s %s: %s", panel.title(), refId, promql).isNotEmpty();
    for (Series each : series) {
      assertThat(each.labels().keySet()).as("%s %s labels", panel.title(), refId).isEqualTo(labels);
    }
    if (labels.contains("instance")) {
      assertThat(series.stream().map((s) -> s.labels().get("instance")).collect(Collectors.toSet()))
          .as("%s %s: both instances", panel.title(), refId)
          .containsExactlyInAnyOrderElementsOf(
              this.instances.stream().map(TunedInstance::target).toList());
    }
    return series;
  }

  /** A stat panel's query, as Grafana sends it: at the end of the run, over the run. */
  private List<Sample> instant(Panel panel, String refId, Set<String> labels) throws Exception {
    Target target = panel.target(refId);
    assertThat(target.instant()).as("%s %s is an instant query", panel.title(), refId).isTrue();
    List<Sample> samples = sendInstant(target.expand(variables()));
    assertThat(samples).as("%s %s", panel.title(), refId).isNotEmpty();
    if (labels != null) {
      for (Sample sample : samples) {
        assertThat(sample.labels().keySet())
            .as("%s %s labels", panel.title(), refId)
            .isEqualTo(labels);
      }
    }
    return samples;
  }

  private List<Sample> sendInstant(String promql) throws Exception {
    this.queries++;
    return this.prometheus.query(promql, this.end);
  }

  private static void assertEvery(
      List<Series> series, Panel panel, DoublePredicate ok, String what) {
    for (Series each : series) {
      for (Point point : each.points()) {
        if (!Double.isNaN(point.value())) {
          assertThat(ok.test(point.value()))
              .as("%s %s at %s = %s: %s", panel.title(), each.labels(), point.time(), point, what)
              .isTrue();
        }
      }
    }
  }

  private static void assertEveryInstant(
      List<Sample> samples, Panel panel, DoublePredicate ok, String what) {
    for (Sample sample : samples) {
      assertThat(ok.test(sample.value())).as("%s %s: %s", panel.title(), sample, what).isTrue();
    }
  }

  private static void assertSomeAbove(List<Series> series, Panel panel, double floor) {
    double highest =
        series.stream()
            .flatMap((s) -> s.points().stream())
            .mapToDouble(Point::value)
            .filter((v) -> !Double.isNaN(v))
            .max()
            .orElse(Double.NaN);
    assertThat(highest)
        .as("%s: the highest value of %s", panel.title(), series)
        .isGreaterThan(floor);
  }

  private void assertEachInstanceAbove(List<Series> series, Panel panel, double floor) {
    for (TunedInstance instance : this.instances) {
      assertSomeAbove(
          series.stream()
              .filter((s) -> instance.target().equals(s.labels().get("instance")))
              .toList(),
          panel,
          floor);
    }
  }

  private static void assertNotBelow(
      List<Series> higher,
      List<Series> lower,
      Panel panel,
      Function<Map<String, String>, String> key) {
    Map<String, Series> byKey = new HashMap<>();
    lower.forEach((s) -> byKey.put(key.apply(s.labels()), s));
    for (Series high : higher) {
      Map<Instant, Double> low = new HashMap<>();
      byKey.get(key.apply(high.labels())).points().forEach((p) -> low.put(p.time(), p.value()));
      for (Point point : high.points()) {
        Double below = low.get(point.time());
        if (below != null && !Double.isNaN(below) && !Double.isNaN(point.value())) {
          assertThat(point.value())
              .as("%s: P99 of %s at %s", panel.title(), high.labels(), point.time())
              .isGreaterThanOrEqualTo(below);
        }
      }
    }
  }

  private static Set<String> withValues(List<Series> series) {
    Set<String> keys = new HashSet<>();
    for (Series each : series) {
      if (each.points().stream().anyMatch((p) -> !Double.isNaN(p.value()))) {
        keys.add(kindAndArm(each.labels()));
      }
    }
    return keys;
  }

  private static Set<String> methodsWithValues(List<Series> series) {
    Set<String> methods = new TreeSet<>();
    for (Series each : series) {
      if (each.points().stream().anyMatch((p) -> !Double.isNaN(p.value()))) {
        methods.add(method(each.labels()));
      }
    }
    return methods;
  }

  private static List<Series> loadMethods(List<Series> series) {
    return series.stream().filter((s) -> LOAD_METHODS.contains(method(s.labels()))).toList();
  }

  private static String method(Map<String, String> labels) {
    return labels.get("db_operation_name");
  }

  private static void assertOfTheClient(List<Series> series, Panel panel) {
    assertThat(series)
        .as("%s: the instances' client", panel.title())
        .allMatch((s) -> "spanner".equals(s.labels().get("spanner_client")));
  }

  /** The points whose rate window began after {@link #loaded}, with a scrape interval to spare. */
  private List<Series> afterLoaded(List<Series> series) {
    Instant from = this.loaded.plus(SCRAPE_INTERVAL.multipliedBy(4)).plus(SCRAPE_INTERVAL);
    return series.stream()
        .map(
            (s) ->
                new Series(
                    s.labels(),
                    s.points().stream().filter((p) -> !p.time().isBefore(from)).toList()))
        .toList();
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

  private static double lastValue(Series series) {
    return series.points().get(series.points().size() - 1).value();
  }

  private static Map<String, Double> byKindAndArm(List<Sample> samples) {
    Map<String, Double> values = new HashMap<>();
    for (Sample sample : samples) {
      String arm = sample.labels().get("arm");
      values.put((arm != null) ? kindAndArm(sample) : sample.labels().get("kind"), sample.value());
    }
    return values;
  }

  private static String kindAndArm(Sample sample) {
    return kindAndArm(sample.labels());
  }

  private static String kindAndArm(Map<String, String> labels) {
    return labels.get("kind") + " " + labels.get("arm");
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
