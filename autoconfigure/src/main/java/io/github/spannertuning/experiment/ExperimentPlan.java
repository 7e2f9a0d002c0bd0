package io.github.spannertuning.experiment;

import java.time.Duration;
import java.util.Objects;

/**
 * What one switchback experiment runs: {@link #pairs()} pairs of slices of {@code slice} each, the
 * first {@code carryOver} of every slice not recorded. A remainder of {@code duration} shorter than
 * a pair is not run.
 *
 * @param duration how long the experiment runs at most; at least one pair of slices
 * @param slice how long the client stays in one arm; longer than {@code carryOver}
 * @param carryOver how much of each slice, from its switch, is not recorded: {@link
 *     CarryOver#length()}
 * @param guardRail when to stop early because the tuned arm is worse
 */
public record ExperimentPlan(
    Duration duration, Duration slice, Duration carryOver, GuardRail guardRail) {

  /** The duration when none is given. */
  public static final Duration DEFAULT_DURATION = Duration.ofMinutes(20);

  /** The slice when none is given. */
  public static final Duration DEFAULT_SLICE = Duration.ofSeconds(60);

  /**
   * The most pairs one experiment may plan. Each analysis sorts {@code n(n+1)/2} averages of pairs
   * on the client's timer thread; at 500 pairs that is 125,250.
   */
  public static final int MAX_PAIRS = 500;

  public ExperimentPlan {
    Objects.requireNonNull(duration, "duration");
    Objects.requireNonNull(slice, "slice");
    Objects.requireNonNull(carryOver, "carryOver");
    Objects.requireNonNull(guardRail, "guardRail");
    if (carryOver.isNegative()) {
      throw new IllegalArgumentException(
          "carryOver must not be negative, was " + DurationFormat.format(carryOver));
    }
    if (slice.compareTo(carryOver) <= 0) {
      throw new IllegalArgumentException(
          "slice must be longer than the carry-over discarded after each switch ("
              + DurationFormat.format(carryOver)
              + "), was "
              + DurationFormat.format(slice));
    }
    Duration pair = slice.multipliedBy(2);
    if (duration.compareTo(pair) < 0) {
      throw new IllegalArgumentException(
          "duration must hold at least one pair of slices (2 x slice = "
              + DurationFormat.format(pair)
              + "), was "
              + DurationFormat.format(duration));
    }
    long pairs = duration.dividedBy(pair);
    if (pairs > MAX_PAIRS) {
      throw new IllegalArgumentException(
          "duration must hold at most "
              + MAX_PAIRS
              + " pairs of slices (duration / (2 x slice)), was "
              + pairs
              + " pairs ("
              + DurationFormat.format(duration)
              + " of "
              + DurationFormat.format(slice)
              + " slices)");
    }
  }

  /**
   * A plan with the defaults for what is not given, as the endpoint's body and the properties leave
   * them out.
   *
   * @param duration the duration, or {@code null} for {@link #DEFAULT_DURATION}
   * @param slice the slice, or {@code null} for {@link #DEFAULT_SLICE}
   */
  public static ExperimentPlan of(
      Duration duration, Duration slice, Duration carryOver, GuardRail guardRail) {
    return new ExperimentPlan(
        (duration != null) ? duration : DEFAULT_DURATION,
        (slice != null) ? slice : DEFAULT_SLICE,
        carryOver,
        guardRail);
  }

  /** The pairs of slices the experiment runs. */
  public int pairs() {
    return (int) this.duration.dividedBy(this.slice.multipliedBy(2));
  }

  /** The slices the experiment runs, two per pair. */
  public int slices() {
    return 2 * pairs();
  }

  /** How long the experiment runs when nothing stops it. */
  public Duration runTime() {
    return this.slice.multipliedBy(slices());
  }
}
