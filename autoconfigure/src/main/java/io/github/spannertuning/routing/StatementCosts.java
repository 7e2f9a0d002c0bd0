package io.github.spannertuning.routing;

/**
 * What each kind of call costs the server whichever connection carries it, so that a connection's
 * latency estimate ({@link ChannelLatency}) measures the connection, not what it happened to run. A
 * report whose first row takes 100 ms on every connection is a costly statement, not a slow
 * connection; a connection 20 ms slower than the others is slow for every statement.
 *
 * <p>The two differ in how they add up. A statement's cost is the same on every connection; a slow
 * connection adds its delay to every statement it carries. So each kind of call (a statement, a
 * read's table and index, or another method) keeps a low percentile of its time to first response
 * over every connection, its <em>base</em>, and so does the pool over every call. A statement's
 * extra cost is how far its base lies above the pool's; a call's time less its statement's extra
 * cost is what the connection added to the pool's cheapest calls, and that is what its connection's
 * estimate takes. A costly statement on a healthy connection then weighs as a point read does, and
 * one on a connection 20 ms slower weighs 20 ms more, as a point read there does.
 *
 * <p>The base is the {@value #PERCENTILE_SHARE_PERCENT}th percentile, tracked by a step up or down
 * per sample (a frugal streaming quantile): a percentile, not a mean, so that the calls a slow
 * connection carries raise it little, and a low one so that the cheapest connections set it. Kinds
 * live in a bounded table ({@link TwoWayTable}), as {@link HedgeDelay}'s shapes do: a kind that
 * finds no free way, or has fewer than {@link #MIN_SAMPLES} samples, is taken at the pool's base
 * (no extra cost), which is what routing did for every call before. Looking a kind up is two array
 * reads and allocates nothing; a new kind allocates its entry.
 */
public final class StatementCosts {

  /** Kinds the table holds at most. */
  static final int KINDS = 256;

  /** Samples a kind needs before its extra cost is taken off its calls. */
  static final int MIN_SAMPLES = 32;

  /** How long a kind goes unused before a new one may take its way. */
  static final long IDLE_NANOS = 1_000_000_000L;

  /** The percentile the base tracks. */
  static final int PERCENTILE_SHARE_PERCENT = 10;

  private final TwoWayTable<Cost> table = new TwoWayTable<>(KINDS, IDLE_NANOS);

  private final Cost pool = new Cost(0, 0);

  /**
   * The kind of call with this key, found or placed; {@code null} when no way is free, and its
   * calls are then taken at the pool's base.
   */
  public Cost kind(long key, long nowNanos) {
    return this.table.find(key, nowNanos, Cost::new);
  }

  /**
   * How much more than the pool's cheapest calls a call of this kind costs on any connection: its
   * base less the pool's, or 0 while either is not known, or for {@code null}.
   */
  public long extraNanos(Cost kind) {
    if (kind == null || kind.samples < MIN_SAMPLES || this.pool.samples < MIN_SAMPLES) {
      return 0;
    }
    long extra = kind.baseNanos - this.pool.baseNanos;
    return (extra > 0) ? extra : 0;
  }

  /**
   * A call of this kind first answered after {@code latencyNanos}: counted in its kind's base and
   * the pool's.
   *
   * @return what the call tells of its connection: its time less its kind's extra cost as it was
   *     before this sample, never below half the pool's base
   */
  public long answered(Cost kind, long latencyNanos) {
    long extra = extraNanos(kind);
    if (kind != null) {
      kind.record(latencyNanos);
    }
    this.pool.record(latencyNanos);
    if (extra == 0) {
      return latencyNanos;
    }
    return Math.max(latencyNanos - extra, this.pool.baseNanos >> 1);
  }

  /** The pool's base: the low percentile of every call's time to first response. */
  public long poolBaseNanos() {
    return this.pool.baseNanos;
  }

  /** One kind of call: its base, as far as it has been sampled. */
  public static final class Cost extends TwoWayTable.Entry {

    private volatile long baseNanos;

    private volatile int samples;

    Cost(long key, long nowNanos) {
      super(key, nowNanos);
    }

    /**
     * Moves the base a step towards the sample: up by a tenth of a step when the sample is above
     * it, down by nine tenths when below, so that it settles where a tenth of the samples fall
     * below it. The step is a sixteenth of the base: relative, so that 2 ms and 200 ms statements
     * settle alike. Two samples landing at once may keep only one step, which a percentile can
     * afford.
     */
    void record(long latencyNanos) {
      int n = this.samples;
      if (n == 0) {
        this.baseNanos = latencyNanos;
      } else {
        long base = this.baseNanos;
        long step = Math.max(base >> 4, 1);
        long next =
            (latencyNanos > base)
                ? base + Math.min(latencyNanos - base, step * PERCENTILE_SHARE_PERCENT / 100 + 1)
                : base
                    - Math.min(base - latencyNanos, step * (100 - PERCENTILE_SHARE_PERCENT) / 100);
        this.baseNanos = next;
      }
      if (n < MIN_SAMPLES) {
        this.samples = n + 1;
      }
    }

    /** The base so far, in nanoseconds. */
    public long baseNanos() {
      return this.baseNanos;
    }
  }
}
