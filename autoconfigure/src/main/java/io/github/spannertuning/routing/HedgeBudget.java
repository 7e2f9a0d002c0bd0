package io.github.spannertuning.routing;

import java.util.concurrent.atomic.LongAdder;

/**
 * How many hedges a client may send: a token bucket that each hedgeable read fills by {@code
 * maxExtra} of a token, up to a burst ({@link #DEFAULT_BURST} tokens by default), and each hedge
 * empties by one. Over any span of time, then, hedges number at most {@code maxExtra} times the
 * reads plus the burst, whatever the server does: when every read is slow (the partial outage in
 * which naive hedging doubles the load) the reads still pay for their hedges, and once the bucket
 * is empty the rest go unhedged. The bucket starts empty, so a fresh client's first reads earn
 * their hedges before any is sent.
 *
 * <p>A read adds to a striped counter and takes no lock; the bucket is settled from that count only
 * when a hedge is due (a read that has not answered within its delay) or the figures are read. The
 * bucket only fills between two settlements, so filling it then by the reads made since, capped,
 * gives the level it would have had.
 */
public final class HedgeBudget {

  /** Hedges the bucket holds at most by default: a short spell of slow reads is hedged whole. */
  public static final int DEFAULT_BURST = 10;

  /** The span of the extra-call rate the endpoint shows. */
  static final long RATE_SPAN_NANOS = 60_000_000_000L;

  /** How often the rate's history takes a point: six points cover its span. */
  private static final long RATE_STEP_NANOS = 10_000_000_000L;

  private final double maxExtra;

  private final double burst;

  private final LongAdder reads = new LongAdder();

  /** Guarded by this, as everything below. */
  private double tokens;

  private long settledReads;

  private long sent;

  private long denied;

  /** The rate's history: time, reads and hedges sent at each step, oldest overwritten first. */
  private final long[][] history = new long[8][];

  private int historyNext;

  /**
   * @param maxExtra the extra calls a read may cost on average, as a share of reads: 0.05 is 5 %
   * @param burst the hedges the bucket holds at most
   * @param nowNanos the time now
   */
  public HedgeBudget(double maxExtra, int burst, long nowNanos) {
    if (!(maxExtra >= 0 && maxExtra <= 1)) {
      throw new IllegalArgumentException("maxExtra must be from 0 to 1: " + maxExtra);
    }
    this.maxExtra = maxExtra;
    this.burst = burst;
    this.history[0] = new long[] {nowNanos, 0, 0};
    this.historyNext = 1;
  }

  /** A hedgeable read was made: it earns its share of a hedge. */
  public void onRead() {
    this.reads.increment();
  }

  /**
   * Takes a token for a hedge due now, if the bucket has one; a refusal is counted as denied.
   *
   * @return whether the hedge may be sent
   */
  public synchronized boolean tryAcquire(long nowNanos) {
    settle(nowNanos);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      this.sent++;
      return true;
    }
    this.denied++;
    return false;
  }

  /**
   * Gives back a token taken for a hedge that was not sent after all: the read answered between the
   * token and the hedge.
   */
  public synchronized void giveBack() {
    this.tokens = Math.min(this.burst, this.tokens + 1);
    this.sent--;
  }

  /** The hedges the bucket holds now: the budget left. */
  public synchronized double available(long nowNanos) {
    settle(nowNanos);
    return this.tokens;
  }

  /**
   * Hedges sent per hedgeable read over about the last minute (less on a client younger than that);
   * 0 without reads.
   */
  public synchronized double extraRate(long nowNanos) {
    settle(nowNanos);
    // From the newest point at least a span old, or the oldest there is on a young client.
    long[] from = null;
    long[] oldest = null;
    for (long[] point : this.history) {
      if (point == null) {
        continue;
      }
      if (oldest == null || point[0] < oldest[0]) {
        oldest = point;
      }
      if (nowNanos - point[0] >= RATE_SPAN_NANOS && (from == null || point[0] > from[0])) {
        from = point;
      }
    }
    if (from == null) {
      from = oldest;
    }
    long reads = this.settledReads - from[1];
    return (reads <= 0) ? 0 : (double) (this.sent - from[2]) / reads;
  }

  public synchronized long sent() {
    return this.sent;
  }

  public synchronized long denied() {
    return this.denied;
  }

  public double maxExtra() {
    return this.maxExtra;
  }

  private void settle(long nowNanos) {
    long reads = this.reads.sum();
    this.tokens = Math.min(this.burst, this.tokens + (reads - this.settledReads) * this.maxExtra);
    this.settledReads = reads;
    long[] last = this.history[(this.historyNext + this.history.length - 1) % this.history.length];
    if (nowNanos - last[0] >= RATE_STEP_NANOS) {
      this.history[this.historyNext] = new long[] {nowNanos, reads, this.sent};
      this.historyNext = (this.historyNext + 1) % this.history.length;
    }
  }
}
