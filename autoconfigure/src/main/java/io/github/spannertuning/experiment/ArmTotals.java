package io.github.spannertuning.experiment;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * One client's experiment figures per call kind and arm, over every slice its experiments recorded:
 * what the meters tagged {@code arm} read. Updated once per slice, as its window closes, never per
 * call. The calls, failed calls and GOAWAYs add up across experiments; the latencies are the last
 * recorded slice's of that arm.
 */
public final class ArmTotals {

  private static final int ARMS = Arm.values().length;

  private final AtomicLongArray calls = new AtomicLongArray(CallKind.values().length * ARMS);

  private final AtomicLongArray failed = new AtomicLongArray(CallKind.values().length * ARMS);

  private final AtomicLongArray goAways = new AtomicLongArray(ARMS);

  /** Nanoseconds; -1 until a slice of that arm with calls of that kind was recorded. */
  private final AtomicLongArray lastP50 = unset();

  private final AtomicLongArray lastP99 = unset();

  private static AtomicLongArray unset() {
    AtomicLongArray values = new AtomicLongArray(CallKind.values().length * ARMS);
    for (int i = 0; i < values.length(); i++) {
      values.set(i, -1);
    }
    return values;
  }

  private static int index(CallKind kind, Arm arm) {
    return kind.ordinal() * ARMS + arm.ordinal();
  }

  void add(SliceSummary slice) {
    if (slice == null) {
      return;
    }
    this.goAways.addAndGet(slice.arm().ordinal(), slice.goAways());
    for (CallKind kind : CallKind.values()) {
      SliceSummary.KindSlice figures = slice.kind(kind);
      int index = index(kind, slice.arm());
      this.calls.addAndGet(index, figures.calls());
      this.failed.addAndGet(index, figures.failed());
      if (figures.calls() > 0) {
        this.lastP50.set(index, figures.p50Nanos());
        this.lastP99.set(index, figures.p99Nanos());
      }
    }
  }

  /** Calls of {@code kind} recorded in slices of {@code arm}, failed ones included. */
  public long calls(CallKind kind, Arm arm) {
    return this.calls.get(index(kind, arm));
  }

  /** Calls of {@code kind} that failed in slices of {@code arm}. */
  public long failed(CallKind kind, Arm arm) {
    return this.failed.get(index(kind, arm));
  }

  /** GOAWAYs the client saw in the recorded slices of {@code arm}. */
  public long goAways(Arm arm) {
    return this.goAways.get(arm.ordinal());
  }

  /** The median latency of the last recorded slice of {@code arm}, in seconds; NaN before one. */
  public double lastP50Seconds(CallKind kind, Arm arm) {
    return seconds(this.lastP50.get(index(kind, arm)));
  }

  /** The P99 latency of the last recorded slice of {@code arm}, in seconds; NaN before one. */
  public double lastP99Seconds(CallKind kind, Arm arm) {
    return seconds(this.lastP99.get(index(kind, arm)));
  }

  private static double seconds(long nanos) {
    return (nanos < 0) ? Double.NaN : nanos / 1e9;
  }
}
