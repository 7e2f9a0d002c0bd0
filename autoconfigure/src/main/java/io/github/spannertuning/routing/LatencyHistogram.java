package io.github.spannertuning.routing;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * Recent latencies of one kind of call, for a high percentile of them: counts in logarithmic
 * buckets, eight to an octave (a bucket spans 9 % of its value), from 16 µs to 34 s, over the
 * current window and the one before. A window closes after {@link #WINDOW_SAMPLES} samples, or once
 * it is {@link #WINDOW_NANOS} old and holds a sixteenth of that, so the percentile follows a change
 * within one or two windows and a seldom-made kind of call still has enough samples to rest on.
 *
 * <p>A sample is one atomic increment: no lock, no allocation, except the new window's counts once
 * per window. Samples recorded while a window closes may land in the one just closed, which is
 * still counted.
 */
public final class LatencyHistogram {

  /** Samples in a window. */
  static final int WINDOW_SAMPLES = 1000;

  /** The longest a window stays open, for kinds of call that are seldom made. */
  static final long WINDOW_NANOS = 10_000_000_000L;

  private static final int SUB_BITS = 3;

  private static final int SUBS = 1 << SUB_BITS;

  /** The octave of the smallest bucket: 2^14 ns, 16 µs. */
  private static final int MIN_OCTAVE = 14;

  /** One past the octave of the largest: 2^35 ns, 34 s. */
  private static final int MAX_OCTAVE = 35;

  static final int BUCKETS = (MAX_OCTAVE - MIN_OCTAVE) * SUBS;

  private volatile Window current;

  private volatile Window previous;

  public LatencyHistogram(long nowNanos) {
    this.current = new Window(nowNanos);
    this.previous = null;
  }

  /**
   * Counts one latency sample taken at {@code nowNanos}.
   *
   * @return the samples in the window it went to, this one included
   */
  public int record(long latencyNanos, long nowNanos) {
    Window window = this.current;
    window.counts.incrementAndGet(bucket(latencyNanos));
    int samples = window.samples.incrementAndGet();
    if (samples == WINDOW_SAMPLES
        || (samples > WINDOW_SAMPLES >> 4 && nowNanos - window.startNanos >= WINDOW_NANOS)) {
      roll(window, nowNanos);
    }
    return samples;
  }

  /**
   * Whichever sample closes the window opens the next; for the time limit, the first sample past it
   * that finds the window current.
   */
  private synchronized void roll(Window closing, long nowNanos) {
    if (this.current == closing) {
      this.previous = closing;
      this.current = new Window(nowNanos);
    }
  }

  /** Samples in the current window and the one before. */
  public int samples() {
    Window previous = this.previous;
    return this.current.samples.get() + ((previous != null) ? previous.samples.get() : 0);
  }

  /**
   * The latency below which a share {@code quantile} of the recent samples fell, interpolated
   * within its bucket; {@code -1} without samples. Scans the buckets from the top: for a high
   * percentile, a few of them.
   */
  public long quantileNanos(double quantile) {
    Window current = this.current;
    Window previous = this.previous;
    long total = 0;
    for (int i = 0; i < BUCKETS; i++) {
      total += count(current, previous, i);
    }
    if (total == 0) {
      return -1;
    }
    // The samples above the quantile, counted down from the top.
    double above = (1.0 - quantile) * total;
    double seen = 0;
    for (int i = BUCKETS - 1; i >= 0; i--) {
      int count = count(current, previous, i);
      if (seen + count > above) {
        double inBucket = (above - seen) / count;
        long low = lowerBound(i);
        long high = lowerBound(i + 1);
        return high - (long) (inBucket * (high - low));
      }
      seen += count;
    }
    return lowerBound(0);
  }

  private static int count(Window current, Window previous, int bucket) {
    return current.counts.get(bucket) + ((previous != null) ? previous.counts.get(bucket) : 0);
  }

  static int bucket(long nanos) {
    if (nanos < 1L << MIN_OCTAVE) {
      return 0;
    }
    int octave = 63 - Long.numberOfLeadingZeros(nanos);
    if (octave >= MAX_OCTAVE) {
      return BUCKETS - 1;
    }
    int sub = (int) (nanos >>> (octave - SUB_BITS)) & (SUBS - 1);
    return (octave - MIN_OCTAVE) * SUBS + sub;
  }

  /** The least latency counted in bucket {@code index}; for one past the last, its upper bound. */
  static long lowerBound(int index) {
    int octave = MIN_OCTAVE + index / SUBS;
    int sub = index % SUBS;
    return (1L << octave) + ((long) sub << (octave - SUB_BITS));
  }

  private static final class Window {

    final AtomicIntegerArray counts = new AtomicIntegerArray(BUCKETS);

    final AtomicInteger samples = new AtomicInteger();

    final long startNanos;

    Window(long startNanos) {
      this.startNanos = startNanos;
    }
  }
}
