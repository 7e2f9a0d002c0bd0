package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.experiment.Arm;
import io.github.spannertuning.experiment.CallKind;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The experiment's latency timers: each recorded call lands in its kind's and arm's timer, as
 * Prometheus histogram buckets, and recording allocates nothing.
 */
class ExperimentLatencyTimersTest {

  private static final Pattern BUCKET =
      Pattern.compile(
          "^spanner_tuning_experiment_latency_seconds_bucket\\{arm=\"stock\",client=\"spanner\","
              + "kind=\"single-use\",le=\"([^\"]+)\"} (\\S+)$",
          Pattern.MULTILINE);

  @Test
  void eachCallLandsInItsKindsAndArmsTimer() {
    MeterRegistry registry = new SimpleMeterRegistry();
    ExperimentLatencyTimers timers =
        new ExperimentLatencyTimers(registry, Tags.of("client", "spanner"));
    timers.recorded(CallKind.SINGLE_USE, Arm.STOCK, 3_000_000);
    timers.recorded(CallKind.SINGLE_USE, Arm.STOCK, 5_000_000);
    timers.recorded(CallKind.COMMIT, Arm.TUNED, 7_000_000);
    assertThat(timers.timers()).hasSize(6);
    Timer singleUseStock = timer(registry, "single-use", "stock");
    assertThat(singleUseStock.count()).isEqualTo(2);
    assertThat(singleUseStock.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(8);
    assertThat(timer(registry, "commit", "tuned").count()).isOne();
    assertThat(timer(registry, "single-use", "tuned").count()).isZero();
    assertThat(timer(registry, "transaction-query", "stock").count()).isZero();
  }

  @Test
  void prometheusGetsCumulativeBucketsThatPlaceEachCall() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    ExperimentLatencyTimers timers =
        new ExperimentLatencyTimers(registry, Tags.of("client", "spanner"));
    timers.recorded(CallKind.SINGLE_USE, Arm.STOCK, 3_000_000);
    timers.recorded(CallKind.SINGLE_USE, Arm.STOCK, 50_000_000);
    Matcher bucket = BUCKET.matcher(registry.scrape());
    int buckets = 0;
    while (bucket.find()) {
      buckets++;
      double le =
          bucket.group(1).equals("+Inf")
              ? Double.POSITIVE_INFINITY
              : Double.parseDouble(bucket.group(1));
      double count = Double.parseDouble(bucket.group(2));
      double expected = (le >= 0.050) ? 2 : (le >= 0.003) ? 1 : 0;
      assertThat(count).as("calls up to %s s", le).isEqualTo(expected);
    }
    System.out.printf("buckets per kind and arm: %d%n", buckets);
    assertThat(buckets).as("buckets between 1 ms and 30 s, and +Inf").isBetween(20, 100);
  }

  @Test
  void recordingAllocatesNothingPerCall() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    ExperimentLatencyTimers timers =
        new ExperimentLatencyTimers(registry, Tags.of("client", "spanner"));
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    record(timers, 100_000);
    // The least of three windows: a one-off allocation that comes with time, not with calls (seen
    // once, 1,392 bytes in one window; the timers' time-window rotation is the likely source),
    // falls
    // in one window at most, while one per call would be in every window, 100,000 times over.
    long allocated = Long.MAX_VALUE;
    for (int window = 0; window < 3; window++) {
      long before = threads.getCurrentThreadAllocatedBytes();
      record(timers, 100_000);
      allocated = Math.min(allocated, threads.getCurrentThreadAllocatedBytes() - before);
    }
    System.out.printf("100,000 timer records allocated %d bytes%n", allocated);
    assertThat(allocated).as("bytes allocated by 100,000 records").isLessThan(1024);
    assertThat(timer(registry, "commit", "stock").count()).isPositive();
  }

  private static void record(ExperimentLatencyTimers timers, int calls) {
    CallKind[] kinds = CallKind.values();
    Arm[] arms = Arm.values();
    for (int i = 0; i < calls; i++) {
      timers.recorded(kinds[i % kinds.length], arms[i % 2], 1_000_000L + (i % 5000) * 10_000L);
    }
  }

  private static Timer timer(MeterRegistry registry, String kind, String arm) {
    return registry
        .get("spanner.tuning.experiment.latency")
        .tags("client", "spanner", "kind", kind, "arm", arm)
        .timer();
  }
}
