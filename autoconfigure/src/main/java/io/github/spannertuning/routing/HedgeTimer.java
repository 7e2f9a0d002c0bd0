package io.github.spannertuning.routing;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * When each read's hedge is due: one thread, shared by every client, that calls a race's {@link
 * HedgeRace#hedgeDue()} once its delay has passed, if it is still {@link HedgeRace#hedgeable()}.
 *
 * <p>A read joins a list of new entries by a compare-and-set, with no lock and no allocation (the
 * race is its own entry), and wakes the thread only when it is due before the thread's next
 * wake-up. The thread takes the new entries, drops those whose read answered, calls those due and
 * sleeps until the next one ({@link #poll}). It ends after a minute with nothing to do and starts
 * again with the next read.
 */
public final class HedgeTimer implements Runnable {

  /** The timer of every client. */
  public static final HedgeTimer SHARED = new HedgeTimer(System::nanoTime, true);

  private static final Logger logger = Logger.getLogger(HedgeTimer.class.getName());

  private static final long IDLE_NANOS = TimeUnit.MINUTES.toNanos(1);

  /** {@link #poll}'s answer when nothing is pending. */
  static final long NOTHING = Long.MAX_VALUE;

  private static final AtomicReferenceFieldUpdater<HedgeTimer, HedgeRace> NEW =
      AtomicReferenceFieldUpdater.newUpdater(HedgeTimer.class, HedgeRace.class, "newest");

  private final LongSupplier clock;

  /** Whether the timer runs a thread of its own; a test that polls it itself runs none. */
  private final boolean threaded;

  private volatile HedgeRace newest;

  private final AtomicReference<Thread> thread = new AtomicReference<>();

  /** When the thread wakes next; {@link #NOTHING} while it waits for new entries. */
  private volatile long wakeNanos = NOTHING;

  /** Entries taken and not yet due; the thread's own. */
  private final List<HedgeRace> pending = new ArrayList<>();

  /**
   * @param clock nanoseconds, the clock the due times are read on
   * @param threaded whether to run the thread that polls; {@code false} for a test that polls
   */
  HedgeTimer(LongSupplier clock, boolean threaded) {
    this.clock = clock;
    this.threaded = threaded;
  }

  /** Calls the race's {@link HedgeRace#hedgeDue()} at {@code dueNanos} if it is hedgeable then. */
  public void schedule(HedgeRace race, long dueNanos) {
    race.dueNanos = dueNanos;
    HedgeRace head;
    do {
      head = this.newest;
      race.nextNew = head;
    } while (!NEW.compareAndSet(this, head, race));
    if (!this.threaded) {
      return;
    }
    Thread running = this.thread.get();
    long wake = this.wakeNanos;
    if (running == null) {
      start();
    } else if (wake == NOTHING || dueNanos - wake < 0) {
      LockSupport.unpark(running);
    }
  }

  /**
   * Takes the new entries, drops those no longer hedgeable, calls those due at {@code nowNanos},
   * and returns when the next one is due; {@link #NOTHING} when none is pending. Called by the
   * timer's thread only.
   */
  long poll(long nowNanos) {
    for (HedgeRace race = NEW.getAndSet(this, null); race != null; race = race.nextNew) {
      this.pending.add(race);
    }
    long next = NOTHING;
    for (int i = this.pending.size() - 1; i >= 0; i--) {
      HedgeRace race = this.pending.get(i);
      if (!race.hedgeable()) {
        removeAt(i);
      } else if (race.dueNanos - nowNanos <= 0) {
        removeAt(i);
        try {
          race.hedgeDue();
        } catch (RuntimeException ex) {
          logger.log(Level.WARNING, "spanner-tuning: sending a hedge failed", ex);
        }
      } else if (next == NOTHING || race.dueNanos - next < 0) {
        next = race.dueNanos;
      }
    }
    return next;
  }

  /** Entries taken and not yet due or dropped. */
  int pending() {
    return this.pending.size();
  }

  private void start() {
    Thread next = new Thread(this, "spanner-tuning-hedge");
    next.setDaemon(true);
    if (this.thread.compareAndSet(null, next)) {
      next.start();
    } else {
      LockSupport.unpark(this.thread.get());
    }
  }

  @Override
  public void run() {
    Thread self = Thread.currentThread();
    long idleSince = this.clock.getAsLong();
    while (true) {
      long now = this.clock.getAsLong();
      long next = poll(now);
      if (next != NOTHING) {
        idleSince = now;
      }
      // Published before new entries are looked for again: one added since either sees it and
      // wakes the thread, or is found by the look.
      this.wakeNanos = next;
      if (this.newest != null) {
        continue;
      }
      if (next != NOTHING) {
        LockSupport.parkNanos(this, next - now);
      } else if (now - idleSince < IDLE_NANOS) {
        LockSupport.parkNanos(this, IDLE_NANOS);
      } else {
        this.thread.compareAndSet(self, null);
        // An entry added while the thread was going found it still running, and did not start
        // another: take it up again.
        if (this.newest == null || !this.thread.compareAndSet(null, self)) {
          return;
        }
      }
    }
  }

  /** Removes an entry by moving the last one into its place: the order does not matter. */
  private void removeAt(int index) {
    int last = this.pending.size() - 1;
    this.pending.set(index, this.pending.get(last));
    this.pending.remove(last);
  }
}
