package io.github.spannertuning.routing;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLongFieldUpdater;

/**
 * The race between a read's first attempt and its hedge: which attempt's messages the application
 * sees, and what becomes of the other.
 *
 * <p>The race is on the first response: the first attempt to deliver a message (or to complete
 * without one) wins, the application sees that attempt's stream only, and the other is abandoned.
 * Before that:
 *
 * <ul>
 *   <li>an attempt that fails while the other may still answer leaves the race to it;
 *   <li>both failing ends the race with the first attempt's error, the one the client would have
 *       seen without a hedge;
 *   <li>a failure of the application's own making (its deadline, its cancel) ends both at once;
 *   <li>the first attempt failing before any hedge was sent ends the race with its error, as if no
 *       race had begun: the client retries as it always does;
 *   <li>the application closing the stream ends both.
 * </ul>
 *
 * <p>The state is one int changed by compare-and-set: events from the two attempts' threads, the
 * timer that sends the hedge and the application's thread may meet in any order, and each gets the
 * one decision that fits the order they met in. No lock, no allocation: the wiring extends this
 * class, and the race is its own entry in the {@link HedgeTimer}.
 */
public class HedgeRace {

  /** The first attempt, the one the application's call made. */
  public static final int FIRST = 0;

  /** The hedge. */
  public static final int SECOND = 1;

  /** What the caller does with the event it reported. */
  public enum Decision {

    /** Hand it to the application. */
    FORWARD,

    /** The attempt won: hand it to the application, and abandon the other if it was sent. */
    WIN,

    /** Drop it: it is the loser's, or the race is over. */
    DROP,

    /** Drop the failure: the other attempt may still answer. */
    WAIT,

    /** Hand this failure to the application, and cancel the other attempt if it was sent. */
    END_ALL,

    /** Both attempts failed: hand the application the first attempt's failure. */
    FORWARD_FIRST_ERROR,

    /** The application closed a stream that has a winner: close the winner as the guard does. */
    CLOSE_WINNER,

    /** The application closed the stream before any attempt won: cancel both. */
    CANCEL_ALL
  }

  private static final int FAILED_FIRST = 1;

  private static final int FAILED_SECOND = 2;

  private static final int HEDGED = 4;

  private static final int WON_FIRST = 8;

  private static final int WON_SECOND = 16;

  private static final int WON = WON_FIRST | WON_SECOND;

  private static final int OVER = 32;

  private static final AtomicIntegerFieldUpdater<HedgeRace> STATE =
      AtomicIntegerFieldUpdater.newUpdater(HedgeRace.class, "state");

  private static final AtomicLongFieldUpdater<HedgeRace> DEMAND =
      AtomicLongFieldUpdater.newUpdater(HedgeRace.class, "demand");

  private static final AtomicLongFieldUpdater<HedgeRace> HEDGE_DEMAND =
      AtomicLongFieldUpdater.newUpdater(HedgeRace.class, "hedgeDemand");

  private volatile int state;

  /** The messages asked of the first attempt before a winner, which the hedge is owed too. */
  private volatile long demand;

  /** How many of those the hedge was asked for. */
  private volatile long hedgeDemand;

  /** When the hedge is due, for the {@link HedgeTimer}. */
  long dueNanos;

  /** The next entry on the timer's list of new entries. */
  HedgeRace nextNew;

  /**
   * The read's delay passed with the race still {@link #hedgeable()}: the wiring sends the hedge if
   * the budget allows, on the {@link HedgeTimer}'s thread.
   */
  protected void hedgeDue() {}

  /** The attempt delivered its first message, or completed without one. */
  public final Decision respond(int attempt) {
    while (true) {
      int current = this.state;
      if ((current & WON) != 0) {
        return ((current & won(attempt)) != 0) ? Decision.FORWARD : Decision.DROP;
      }
      if ((current & OVER) != 0) {
        return Decision.DROP;
      }
      if (STATE.compareAndSet(this, current, current | won(attempt))) {
        return Decision.WIN;
      }
    }
  }

  /**
   * The attempt failed.
   *
   * @param terminal whether the failure is the application's own (its deadline passed, or it
   *     cancelled), which ends every attempt
   */
  public final Decision fail(int attempt, boolean terminal) {
    while (true) {
      int current = this.state;
      if ((current & WON) != 0) {
        return ((current & won(attempt)) != 0) ? Decision.FORWARD : Decision.DROP;
      }
      if ((current & OVER) != 0) {
        return Decision.DROP;
      }
      boolean hedged = (current & HEDGED) != 0;
      int other = 1 - attempt;
      boolean otherMayAnswer = hedged && (current & failed(other)) == 0;
      Decision decision;
      int next;
      if (terminal) {
        decision = hedged ? Decision.END_ALL : Decision.FORWARD;
        next = current | OVER;
      } else if (otherMayAnswer) {
        decision = Decision.WAIT;
        next = current | failed(attempt);
      } else {
        decision = (attempt == SECOND) ? Decision.FORWARD_FIRST_ERROR : Decision.FORWARD;
        next = current | failed(attempt) | OVER;
      }
      if (STATE.compareAndSet(this, current, next)) {
        return decision;
      }
    }
  }

  /**
   * Whether a hedge could be sent now: no attempt has answered or failed, the stream is open, and
   * none was sent. The caller asks the budget, then {@link #hedge()}.
   */
  public final boolean hedgeable() {
    return this.state == 0;
  }

  /**
   * Marks the hedge sent, if the race is still {@link #hedgeable()}; the caller then starts it, and
   * abandons it at once should the first attempt win meanwhile ({@link #winner()}).
   */
  public final boolean hedge() {
    return STATE.compareAndSet(this, 0, HEDGED);
  }

  /** The application closed the stream. */
  public final Decision close() {
    while (true) {
      int current = this.state;
      if ((current & WON) != 0) {
        return Decision.CLOSE_WINNER;
      }
      if (STATE.compareAndSet(this, current, current | OVER)) {
        return Decision.CANCEL_ALL;
      }
    }
  }

  /**
   * The application asked for {@code messages} more before a winner: the first attempt is asked for
   * them now, the hedge by {@link #owedToHedge()}.
   */
  public final void asked(int messages) {
    DEMAND.addAndGet(this, messages);
  }

  /**
   * How many messages the hedge must be asked for now to have been asked what the first attempt
   * was; each is owed once, whichever thread takes it (the hedge's, once it is made, or the
   * application's, asking for more).
   */
  public final int owedToHedge() {
    while (true) {
      long owed = this.demand;
      long asked = this.hedgeDemand;
      if (asked >= owed) {
        return 0;
      }
      if (HEDGE_DEMAND.compareAndSet(this, asked, owed)) {
        return (int) (owed - asked);
      }
    }
  }

  /** {@link #FIRST}, {@link #SECOND}, or -1 while no attempt has won. */
  public final int winner() {
    int current = this.state;
    return ((current & WON_FIRST) != 0) ? FIRST : ((current & WON_SECOND) != 0) ? SECOND : -1;
  }

  /** Whether the race ended with no winner: a failure went to the application, or it closed. */
  public final boolean over() {
    int current = this.state;
    return (current & OVER) != 0 && (current & WON) == 0;
  }

  /** Whether the hedge was sent. */
  public final boolean hedged() {
    return (this.state & HEDGED) != 0;
  }

  private static int won(int attempt) {
    return (attempt == FIRST) ? WON_FIRST : WON_SECOND;
  }

  private static int failed(int attempt) {
    return (attempt == FIRST) ? FAILED_FIRST : FAILED_SECOND;
  }
}
