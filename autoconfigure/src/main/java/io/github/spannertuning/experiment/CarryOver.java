package io.github.spannertuning.experiment;

import java.time.Duration;
import java.util.Objects;

/**
 * How long after each switch of arm the client still carries the other arm's state, and so how much
 * of each slice is not recorded: {@code max(drainTimeout, estimateMemory())}.
 *
 * <ul>
 *   <li><b>The stream-end guard.</b> A stream closed at its {@code last} message in the tuned arm
 *       drains for up to the drain timeout: after a switch to stock it still holds a stream slot,
 *       counts as a call in flight, and may be cancelled in the stock slice.
 *   <li><b>The latency estimates.</b> Calls of both arms update each channel's estimate; the tuned
 *       arm's routing reads them. The most the other arm can leave in one is a failure penalty. An
 *       estimate no call updates halves every {@code forgetHalfLife} down to {@code floor}, so a
 *       penalty is forgotten after {@code h} halvings, the fewest with {@code floor × 2^h ≥
 *       penalty}. A channel whose calls failed repeatedly halves up to {@code 2^maxBackoffShift}
 *       times slower. {@link #estimateMemory()} is the {@code h} halvings at the normal half-life,
 *       rounded up to whole slowest half-lives: {@code ceil(h / 2^maxBackoffShift) × forgetHalfLife
 *       × 2^maxBackoffShift}. After it a penalty is forgotten entirely on a channel that answers,
 *       and halved at least that many times on one still backing off.
 * </ul>
 *
 * <p>With the client's figures ({@link #forDrainTimeout}: half-life 250 ms, backoff up to 4 times,
 * penalty 100 ms, floor 1 ms) {@code h} is 7 and the estimates' memory is 2 s, so the default drain
 * timeout of 5 s decides. Server-side state the client cannot see, such as a reset limit's window,
 * is not covered.
 *
 * @param drainTimeout the stream-end guard's drain timeout
 * @param forgetHalfLife how often an estimate no call updates is halved
 * @param maxBackoffShift the most doublings of that half-life for a channel whose calls keep
 *     failing
 * @param penalty the least latency counted for a failed call
 * @param floor the least a forgotten estimate falls to
 */
public record CarryOver(
    Duration drainTimeout,
    Duration forgetHalfLife,
    int maxBackoffShift,
    Duration penalty,
    Duration floor) {

  /** The latency estimate's half-life without samples ({@code ChannelLatency}'s). */
  static final Duration FORGET_HALF_LIFE = Duration.ofMillis(250);

  /** The most doublings of that half-life ({@code ChannelLatency}'s). */
  static final int MAX_BACKOFF_SHIFT = 2;

  /** The least latency counted for a failed call ({@code ChannelLatency}'s). */
  static final Duration PENALTY = Duration.ofMillis(100);

  /** The least a forgotten estimate falls to ({@code ChannelLatency}'s initial estimate). */
  static final Duration FLOOR = Duration.ofMillis(1);

  /** Bounds the halvings' search: no penalty of the client's comes near it. */
  private static final Duration MAX_PENALTY = Duration.ofHours(1);

  public CarryOver {
    Objects.requireNonNull(drainTimeout, "drainTimeout");
    Objects.requireNonNull(forgetHalfLife, "forgetHalfLife");
    Objects.requireNonNull(penalty, "penalty");
    Objects.requireNonNull(floor, "floor");
    if (drainTimeout.isNegative()
        || forgetHalfLife.isNegative()
        || forgetHalfLife.isZero()
        || maxBackoffShift < 0
        || maxBackoffShift > 16
        || floor.isNegative()
        || floor.isZero()
        || penalty.compareTo(floor) < 0
        || penalty.compareTo(MAX_PENALTY) > 0) {
      throw new IllegalArgumentException(
          "carry-over inputs out of range: drain timeout not negative, half-life and floor positive,"
              + " backoff shift 0 to 16, penalty from the floor to 1h; were drainTimeout="
              + drainTimeout
              + ", forgetHalfLife="
              + forgetHalfLife
              + ", maxBackoffShift="
              + maxBackoffShift
              + ", penalty="
              + penalty
              + ", floor="
              + floor);
    }
  }

  /** The carry-over for this drain timeout, with the latency estimate's figures of the client. */
  public static CarryOver forDrainTimeout(Duration drainTimeout) {
    return new CarryOver(drainTimeout, FORGET_HALF_LIFE, MAX_BACKOFF_SHIFT, PENALTY, FLOOR);
  }

  /**
   * The halvings that bring a penalty down to the floor: the fewest {@code h} with {@code floor ×
   * 2^h ≥ penalty}.
   */
  public int halvingsToForget() {
    long penaltyNanos = this.penalty.toNanos();
    long floorNanos = this.floor.toNanos();
    int halvings = 0;
    while ((floorNanos << halvings) < penaltyNanos) {
      halvings++;
    }
    return halvings;
  }

  /** How long the latency estimates remember the other arm; see the class description. */
  public Duration estimateMemory() {
    int slowdown = 1 << this.maxBackoffShift;
    long slowHalvings = (halvingsToForget() + slowdown - 1) / slowdown;
    return this.forgetHalfLife.multipliedBy(slowdown).multipliedBy(slowHalvings);
  }

  /** The part of each slice, from its switch, that is not recorded. */
  public Duration length() {
    Duration memory = estimateMemory();
    return (this.drainTimeout.compareTo(memory) >= 0) ? this.drainTimeout : memory;
  }
}
