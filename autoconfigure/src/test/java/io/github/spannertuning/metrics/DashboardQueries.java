package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.testing.GrafanaDashboard;
import io.github.spannertuning.testing.GrafanaDashboard.Panel;
import io.github.spannertuning.testing.GrafanaDashboard.Target;
import io.github.spannertuning.testing.PrometheusServer;
import io.github.spannertuning.testing.PrometheusServer.Point;
import io.github.spannertuning.testing.PrometheusServer.Sample;
import io.github.spannertuning.testing.PrometheusServer.Series;
import io.github.spannertuning.testing.TunedInstance;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.DoublePredicate;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * What one run of {@link GrafanaDashboardIT} left in Prometheus, queried as Grafana queries it
 * (over the run, a point a scrape interval), and the checks its panels' series share.
 */
final class DashboardQueries {

  private final PrometheusServer prometheus;

  private final List<TunedInstance> instances;

  private final Duration scrapeInterval;

  /** Before Prometheus's first scrape. */
  private final Instant start;

  /** When Prometheus had scraped the load's series twice: a rate's window after it is whole. */
  private final Instant loaded;

  /** The end of the run, as Grafana's "now". */
  private final Instant end;

  private int queries;

  DashboardQueries(
      PrometheusServer prometheus,
      List<TunedInstance> instances,
      Duration scrapeInterval,
      Instant start,
      Instant loaded,
      Instant end) {
    this.prometheus = prometheus;
    this.instances = instances;
    this.scrapeInterval = scrapeInterval;
    this.start = start;
    this.loaded = loaded;
    this.end = end;
  }

  List<TunedInstance> instances() {
    return this.instances;
  }

  Duration scrapeInterval() {
    return this.scrapeInterval;
  }

  /** The queries sent so far. */
  int queries() {
    return this.queries;
  }

  /** A range query over the run, a point a scrape interval, ending at the run's end. */
  List<Series> queryRange(String promql) throws Exception {
    this.queries++;
    return this.prometheus.queryRange(
        promql, this.end.minus(runLength()), this.end, this.scrapeInterval);
  }

  Map<String, String> variables() {
    return new HashMap<>(GrafanaDashboard.allOf(runLength(), this.scrapeInterval));
  }

  /** The dashboard's time range: the run, from before Prometheus's first scrape, in seconds. */
  Duration runLength() {
    return Duration.ofSeconds(Duration.between(this.start, this.end).toSeconds() + 1);
  }

  /** A time series panel's query, as Grafana sends it: over the run, a point a second. */
  List<Series> range(Panel panel, String refId, Set<String> labels) throws Exception {
    Target target = panel.target(refId);
    assertThat(target.instant()).as("%s %s is a range query", panel.title(), refId).isFalse();
    String promql = target.expand(variables());
    // Points a second apart that end at the run's end, as Grafana's end at "now".
    List<Series> series =
        this.prometheus.queryRange(
            promql, this.end.minus(runLength()), this.end, this.scrapeInterval);
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
  List<Sample> instant(Panel panel, String refId, Set<String> labels) throws Exception {
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

  List<Sample> sendInstant(String promql) throws Exception {
    this.queries++;
    return this.prometheus.query(promql, this.end);
  }

  /** The points whose rate window began after {@link #loaded}, with a scrape interval to spare. */
  List<Series> afterLoaded(List<Series> series) {
    Instant from = this.loaded.plus(this.scrapeInterval.multipliedBy(4)).plus(this.scrapeInterval);
    return series.stream()
        .map(
            (s) ->
                new Series(
                    s.labels(),
                    s.points().stream().filter((p) -> !p.time().isBefore(from)).toList()))
        .toList();
  }

  /**
   * How far {@code increase()} over the run may overstate a counter that was 0 at its first scrape:
   * Prometheus extrapolates from the last sample to the window's end when that is at most 1.1
   * average scrape intervals away, and not before a first sample of 0. With {@code n} samples, at
   * most {@code 1 + 1.1 / (n - 1)} times the true increase.
   */
  double extrapolation() throws Exception {
    String samples =
        GrafanaDashboard.expand(
            "min(count_over_time(spanner_tuning_experiment_calls_total[$__range]))", variables());
    double fewest = sendInstant(samples).get(0).value();
    assertThat(fewest).as("samples of every series").isGreaterThanOrEqualTo(4);
    return 1 + 1.1 / (fewest - 1);
  }

  void assertEachInstanceAbove(List<Series> series, Panel panel, double floor) {
    for (TunedInstance instance : this.instances) {
      assertSomeAbove(
          series.stream()
              .filter((s) -> instance.target().equals(s.labels().get("instance")))
              .toList(),
          panel,
          floor);
    }
  }

  /**
   * A fleet quantile lies between the instances' own: the fleet's buckets are the sum of theirs,
   * and a quantile of a sum of histograms, interpolated within the same buckets, lies between the
   * quantiles of its parts.
   */
  void assertBetweenTheInstances(Panel panel, String refId, List<Sample> fleet) throws Exception {
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

  static void assertEvery(List<Series> series, Panel panel, DoublePredicate ok, String what) {
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

  static void assertEveryInstant(
      List<Sample> samples, Panel panel, DoublePredicate ok, String what) {
    for (Sample sample : samples) {
      assertThat(ok.test(sample.value())).as("%s %s: %s", panel.title(), sample, what).isTrue();
    }
  }

  static void assertSomeAbove(List<Series> series, Panel panel, double floor) {
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

  static void assertNotBelow(
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

  static Set<String> withValues(List<Series> series) {
    Set<String> keys = new HashSet<>();
    for (Series each : series) {
      if (each.points().stream().anyMatch((p) -> !Double.isNaN(p.value()))) {
        keys.add(kindAndArm(each.labels()));
      }
    }
    return keys;
  }

  static Set<String> methodsWithValues(List<Series> series) {
    Set<String> methods = new TreeSet<>();
    for (Series each : series) {
      if (each.points().stream().anyMatch((p) -> !Double.isNaN(p.value()))) {
        methods.add(method(each.labels()));
      }
    }
    return methods;
  }

  static String method(Map<String, String> labels) {
    return labels.get("db_operation_name");
  }

  static double lastValue(Series series) {
    return series.points().get(series.points().size() - 1).value();
  }

  static Map<String, Double> byKindAndArm(List<Sample> samples) {
    Map<String, Double> values = new HashMap<>();
    for (Sample sample : samples) {
      String arm = sample.labels().get("arm");
      values.put((arm != null) ? kindAndArm(sample) : sample.labels().get("kind"), sample.value());
    }
    return values;
  }

  static String kindAndArm(Sample sample) {
    return kindAndArm(sample.labels());
  }

  static String kindAndArm(Map<String, String> labels) {
    return labels.get("kind") + " " + labels.get("arm");
  }
}
