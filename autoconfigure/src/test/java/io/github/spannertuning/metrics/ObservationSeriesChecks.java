package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.testing.GrafanaDashboard;
import io.github.spannertuning.testing.GrafanaDashboard.Panel;
import io.github.spannertuning.testing.PrometheusServer;
import io.github.spannertuning.testing.PrometheusServer.Point;
import io.github.spannertuning.testing.PrometheusServer.Sample;
import io.github.spannertuning.testing.PrometheusServer.Series;
import io.github.spannertuning.testing.TunedInstance;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The checks of the observations' meters in {@link GrafanaDashboardIT}'s run: the labels of a real
 * Prometheus scrape, and one attempt per operation on the dashboard's Operations row.
 */
final class ObservationSeriesChecks {

  /** The methods the load calls: point selects and transactions' queries, updates and commits. */
  static final Set<String> LOAD_METHODS = Set.of("ExecuteStreamingSql", "ExecuteSql", "Commit");

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

  private ObservationSeriesChecks() {}

  /**
   * A real Prometheus scrape holds the operation, attempt and frontend timers of the instances'
   * client, with exactly the five keys as labels besides Prometheus's own and Micrometer's {@code
   * error}, none holding SQL; and the rejected queries as failed operations of one attempt each.
   */
  static void checkObservationMeters(DashboardQueries query) throws Exception {
    Set<String> targets =
        query.instances().stream().map(TunedInstance::target).collect(Collectors.toSet());
    for (String meter :
        List.of(
            "spanner_client_operation_seconds_count",
            "spanner_client_attempt_seconds_count",
            "spanner_client_server_duration_seconds_count")) {
      List<Sample> samples = query.sendInstant(meter);
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
      List<Sample> rejected = query.sendInstant(meter + "{error_type=\"INVALID_ARGUMENT\"}");
      assertThat(rejected).as("%s of the rejected queries", meter).hasSize(targets.size());
      for (Sample sample : rejected) {
        assertThat(sample.labels().get("db_operation_name")).isEqualTo("ExecuteStreamingSql");
        assertThat(sample.value())
            .as("%s of %s", meter, sample.labels())
            .isEqualTo(GrafanaDashboardIT.REJECTED_PER_INSTANCE);
      }
    }
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
  static void assertOneAttemptPerOperation(
      DashboardQueries query, Panel panel, List<Series> perOperation) throws Exception {
    String ended =
        GrafanaDashboard.expand(
            "sum by (spanner_client, db_operation_name) (max_over_time("
                + "spanner_client_operation_seconds_count{spanner_client=~\"$client\","
                + " instance=~\"$instance\"}[$__rate_interval]) - min_over_time("
                + "spanner_client_operation_seconds_count{spanner_client=~\"$client\","
                + " instance=~\"$instance\"}[$__rate_interval]))",
            query.variables());
    Map<String, Map<Instant, Double>> operations = new HashMap<>();
    for (Series series : query.queryRange(ended)) {
      Map<Instant, Double> points = new HashMap<>();
      series.points().forEach((p) -> points.put(p.time(), p.value()));
      operations.put(DashboardQueries.method(series.labels()), points);
    }
    // Streams whose last message came and whose attempt waits for its trailers are calls in
    // flight on their channel: the most the fleet had at a scrape, at either end of a window.
    double streams =
        query
            .sendInstant(
                GrafanaDashboard.expand(
                    "max_over_time(sum(spanner_tuning_channel_active_streams{client=~\"$client\","
                        + " instance=~\"$instance\"})[$__range:1s])",
                    query.variables()))
            .get(0)
            .value();
    double inFlight = 2 * (streams + GrafanaDashboardIT.LOAD_THREADS * query.instances().size());
    Map<String, Instant> settled = new HashMap<>();
    for (String meter :
        List.of("spanner_client_attempt_seconds_count", "spanner_client_operation_seconds_count")) {
      for (Series series :
          query.queryRange(
              GrafanaDashboard.expand(
                  meter + "{spanner_client=~\"$client\", instance=~\"$instance\"}",
                  query.variables()))) {
        if (!series.points().isEmpty()) {
          settled.merge(
              DashboardQueries.method(series.labels()),
              series.points().get(0).time().plus(query.scrapeInterval().multipliedBy(5)),
              (a, b) -> a.isAfter(b) ? a : b);
        }
      }
    }
    int checked = 0;
    for (Series series : query.afterLoaded(loadMethods(perOperation))) {
      Instant from = settled.getOrDefault(DashboardQueries.method(series.labels()), Instant.MAX);
      for (Point point : series.points()) {
        if (point.time().isBefore(from)) {
          continue;
        }
        Double count = operations.get(DashboardQueries.method(series.labels())).get(point.time());
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

  static List<Series> loadMethods(List<Series> series) {
    return series.stream()
        .filter((s) -> LOAD_METHODS.contains(DashboardQueries.method(s.labels())))
        .toList();
  }

  static void assertOfTheClient(List<Series> series, Panel panel) {
    assertThat(series)
        .as("%s: the instances' client", panel.title())
        .allMatch((s) -> "spanner".equals(s.labels().get("spanner_client")));
  }
}
