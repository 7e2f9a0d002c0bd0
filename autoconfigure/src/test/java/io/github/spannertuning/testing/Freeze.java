package io.github.spannertuning.testing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stall of the whole {@link MockSpannerService}, as {@link
 * MockSpannerService#freezeAfterReturningNumRows} starts it: once a number of rows has been
 * streamed, no stream sends more and no call is answered until {@link #unfreeze()}. What waits is
 * parked work, not a thread.
 */
final class Freeze {

  private final Executor executor;

  private final AtomicInteger rowsBeforeFreeze = new AtomicInteger();

  private final List<Runnable> held = new ArrayList<>();

  private boolean frozen;

  Freeze(Executor executor) {
    this.executor = executor;
  }

  void freezeAfterRows(int rows) {
    this.rowsBeforeFreeze.set(rows);
  }

  /** Counts one row streamed; {@code true} when it was the last one before the freeze. */
  boolean rowSent() {
    if (this.rowsBeforeFreeze.get() > 0 && this.rowsBeforeFreeze.decrementAndGet() == 0) {
      synchronized (this) {
        this.frozen = true;
      }
      return true;
    }
    return false;
  }

  /** Runs the work now, or, while frozen, once unfrozen. */
  void whenUnfrozen(Runnable work) {
    synchronized (this) {
      if (this.frozen) {
        this.held.add(work);
        return;
      }
    }
    work.run();
  }

  void unfreeze() {
    List<Runnable> released;
    synchronized (this) {
      this.frozen = false;
      released = List.copyOf(this.held);
      this.held.clear();
    }
    released.forEach(this.executor::execute);
  }
}
