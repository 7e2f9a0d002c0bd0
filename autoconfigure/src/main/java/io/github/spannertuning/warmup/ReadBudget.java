package io.github.spannertuning.warmup;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many of the warm-up's reads to send, and until when: the count or the deadline, whichever
 * comes first. Logic over numbers on the caller's clock, shared by the warm-up's readers.
 *
 * <p>A reader takes one read at a time ({@link #tryStart}); none is taken once the count is taken
 * or the deadline has passed. A read that fails ends its reader: a warm-up against a Spanner that
 * answers with errors sends at most one failed read per reader, not its whole count.
 */
public final class ReadBudget {

  private final int count;

  private final long deadlineNanos;

  private final AtomicInteger started = new AtomicInteger();

  private final AtomicInteger answered = new AtomicInteger();

  private final AtomicInteger failed = new AtomicInteger();

  /**
   * @param count reads to send in all; 0 sends none
   * @param deadlineNanos when the last read may start and every read must have ended, on the clock
   *     the readers pass to {@link #tryStart}
   */
  public ReadBudget(int count, long deadlineNanos) {
    if (count < 0) {
      throw new IllegalArgumentException("count must be at least 0: " + count);
    }
    this.count = count;
    this.deadlineNanos = deadlineNanos;
  }

  /** Takes one read if the count is not taken and the deadline has not passed at {@code now}. */
  public boolean tryStart(long nowNanos) {
    if (nowNanos - this.deadlineNanos >= 0) {
      return false;
    }
    int taken;
    do {
      taken = this.started.get();
      if (taken >= this.count) {
        return false;
      }
    } while (!this.started.compareAndSet(taken, taken + 1));
    return true;
  }

  /** A read taken by {@link #tryStart} was read to its end. */
  public void onAnswered() {
    this.answered.incrementAndGet();
  }

  /** A read taken by {@link #tryStart} failed (or ran past the deadline): its reader stops. */
  public void onFailed() {
    this.failed.incrementAndGet();
  }

  /** Whether every read is taken and has ended, or the deadline has passed at {@code now}. */
  public boolean isDone(long nowNanos) {
    return nowNanos - this.deadlineNanos >= 0
        || (this.started.get() >= this.count
            && this.answered.get() + this.failed.get() >= this.started.get());
  }

  /** Time left until the deadline at {@code now}; 0 once it has passed. */
  public long remainingNanos(long nowNanos) {
    return Math.max(0, this.deadlineNanos - nowNanos);
  }

  public int count() {
    return this.count;
  }

  public int startedCount() {
    return this.started.get();
  }

  public int answeredCount() {
    return this.answered.get();
  }

  public int failedCount() {
    return this.failed.get();
  }
}
