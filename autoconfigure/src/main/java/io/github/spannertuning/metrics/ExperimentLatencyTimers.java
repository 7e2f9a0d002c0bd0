package io.github.spannertuning.metrics;

import io.github.spannertuning.experiment.Arm;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.experiment.RecordedCallListener;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code spanner.tuning.experiment.latency}: the latency of each call an experiment records, per
 * kind and arm, as a histogram with fixed buckets. Unlike the slices' percentiles, buckets add up
 * across instances, and a fleet's P99 per arm is a quantile of their sum.
 *
 * <p>The timers are resolved once, when the meters are bound: a recorded call costs an array read
 * and the timer's own record.
 */
final class ExperimentLatencyTimers implements RecordedCallListener {

  /** Read once: {@code values()} copies its array on every call. */
  private static final int ARMS = Arm.values().length;

  private final Timer[] timers = new Timer[CallKind.values().length * ARMS];

  /**
   * @param tags the client's tags; {@code kind} and {@code arm} are added
   */
  ExperimentLatencyTimers(MeterRegistry registry, Iterable<Tag> tags) {
    for (CallKind kind : CallKind.values()) {
      for (Arm arm : Arm.values()) {
        this.timers[index(kind, arm)] =
            Timer.builder("spanner.tuning.experiment.latency")
                .tags(Tags.concat(tags, "kind", kind.id(), "arm", arm.id()))
                .description(
                    "Latency of the calls of the kind the experiments recorded in slices of the"
                        + " arm, after each slice's carry-over, failed ones included")
                .publishPercentileHistogram()
                .register(registry);
      }
    }
  }

  List<Timer> timers() {
    return List.of(this.timers);
  }

  @Override
  public void recorded(CallKind kind, Arm arm, long latencyNanos) {
    this.timers[index(kind, arm)].record(latencyNanos, TimeUnit.NANOSECONDS);
  }

  private static int index(CallKind kind, Arm arm) {
    return kind.ordinal() * ARMS + arm.ordinal();
  }
}
