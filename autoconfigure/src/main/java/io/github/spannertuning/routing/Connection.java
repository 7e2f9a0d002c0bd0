package io.github.spannertuning.routing;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One connection of a client's pool as routing sees it: the calls in flight on it, the calls made
 * on it, how long it takes to answer, and its budget of resets. The client's interceptor and the
 * picker keep the counts; {@link ChannelPicker} and the hedge's loser read them.
 */
public final class Connection {

  private final AtomicInteger inFlight = new AtomicInteger();

  private final AtomicLong calls = new AtomicLong();

  private final ChannelLatency latency;

  /** Start of the window of {@link #tryReset}'s budget. */
  private final AtomicLong resetWindowStart;

  private final AtomicInteger resetsInWindow = new AtomicInteger();

  /** The connection is warm: up and primed, or its warmth is not watched. */
  private static final int WARM = 0;

  /** The connection is up and its priming call not answered yet. */
  private static final int PRIMING = 1;

  /** The connection is not up: being set up, or not asked for yet. */
  private static final int UNCONNECTED = 2;

  /** Where the connection is ({@link ChannelWarmth}): one of the three above. */
  private volatile int warmth = WARM;

  public Connection(long nowNanos) {
    this(nowNanos, null);
  }

  /** A connection of a pool whose level moves its latency's estimate ({@link PoolLevel}). */
  public Connection(long nowNanos, PoolLevel pool) {
    this.latency = new ChannelLatency(nowNanos, pool);
    this.resetWindowStart = new AtomicLong(nowNanos);
  }

  /**
   * Whether the connection is cold: a channel whose warmth is watched ({@link ChannelWarmth}) and
   * whose connection is not up and primed. The picker sends it no read while a warm connection has
   * room and is not hot. False where warmth is not watched.
   */
  public boolean isCold() {
    return this.warmth != WARM;
  }

  /**
   * Whether the connection is up and being primed: cold, but a read sent there waits for no
   * connection to be set up. The picker lets it share a burst that makes every warm connection hot,
   * so that the channel primed first does not take the burst alone.
   */
  public boolean isPriming() {
    return this.warmth == PRIMING;
  }

  void markCold() {
    this.warmth = UNCONNECTED;
  }

  void markPriming() {
    this.warmth = PRIMING;
  }

  void markWarm() {
    this.warmth = WARM;
  }

  /** Calls in flight now. */
  public int inFlight() {
    return this.inFlight.get();
  }

  /** Calls made; one the picker chose counts from its pick. */
  public long calls() {
    return this.calls.get();
  }

  public ChannelLatency latency() {
    return this.latency;
  }

  /**
   * Counts a call that is about to be made, as made and in flight, if the in-flight count is still
   * {@code expected}: how concurrent picks are kept apart.
   */
  public boolean tryCountCall(int expected, long nowNanos) {
    if (this.inFlight.compareAndSet(expected, expected + 1)) {
      this.calls.incrementAndGet();
      if (expected == 0) {
        this.latency.firstOutstanding(nowNanos);
      }
      return true;
    }
    return false;
  }

  /** Counts a call as made and in flight. */
  public void countCall(long nowNanos) {
    if (this.inFlight.incrementAndGet() == 1) {
      this.latency.firstOutstanding(nowNanos);
    }
    this.calls.incrementAndGet();
  }

  /** Takes back a call counted here that was made elsewhere or not at all. */
  public void uncountCall() {
    this.inFlight.decrementAndGet();
    this.calls.decrementAndGet();
  }

  /** A call counted here is no longer in flight. */
  public void callClosed() {
    this.inFlight.decrementAndGet();
  }

  /**
   * Takes one reset from this connection's budget: at most {@code max} per window of {@code
   * windowNanos}, so that the resets spanner-tuning sends of its own accord (a finished stream
   * released on a full connection, a hedge's loser cancelled) stay well within a server's
   * rapid-reset limit. A server counts in windows of its own: two of ours overlap any one of its,
   * so half its limit per window never reaches it. Approximate under races; taken only for a stream
   * that would otherwise hold its slot, never per call.
   */
  public boolean tryReset(long nowNanos, long windowNanos, int max) {
    long start = this.resetWindowStart.get();
    if (nowNanos - start >= windowNanos && this.resetWindowStart.compareAndSet(start, nowNanos)) {
      this.resetsInWindow.set(0);
    }
    return this.resetsInWindow.incrementAndGet() <= max;
  }
}
