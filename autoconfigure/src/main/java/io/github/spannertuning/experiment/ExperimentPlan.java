package io.github.spannertuning.experiment;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What one switchback experiment runs: {@link #pairs()} pairs of slices of {@code slice} each, the
 * first {@code carryOver} of every slice not recorded. A remainder of {@code duration} shorter than
 * a pair is not run.
 *
 * <p>In a fleet ({@code fleet} set), every instance started with the same id runs the same
 * schedule: slices start at multiples of {@code slice} since the epoch, each pair's order comes
 * from the id and the pair's index, and each slice's recording stops {@link #FLEET_CLOCK_SKEW}
 * before its end, so that instances whose clocks differ by up to that much all record only while
 * every one of them is in the slice's arm.
 *
 * @param duration how long the experiment runs at most; at least one pair of slices
 * @param slice how long the client stays in one arm; longer than {@code carryOver}, and in a fleet
 *     than {@code carryOver} and {@link #FLEET_CLOCK_SKEW} together
 * @param carryOver how much of each slice, from its switch, is not recorded: {@link
 *     CarryOver#length()}
 * @param guardRail when to stop early because the tuned arm is worse
 * @param feature the one feature compared, by its id: the tuned arm has it on and the stock arm
 *     off, every other feature as it was; {@code null} to compare the whole tuning with stock
 * @param fleet the fleet's id, the same on every instance that runs this experiment together; 1 to
 *     64 letters, digits, {@code -}, {@code _} or {@code .}; {@code null} for an experiment of this
 *     client alone
 */
public record ExperimentPlan(
    Duration duration,
    Duration slice,
    Duration carryOver,
    GuardRail guardRail,
    String feature,
    String fleet) {

  /** The duration when none is given. */
  public static final Duration DEFAULT_DURATION = Duration.ofMinutes(20);

  /** The slice when none is given. */
  public static final Duration DEFAULT_SLICE = Duration.ofSeconds(60);

  /**
   * The most pairs one experiment may plan. Each analysis sorts {@code n(n+1)/2} averages of pairs
   * on the client's timer thread; at 500 pairs that is 125,250.
   */
  public static final int MAX_PAIRS = 500;

  /**
   * How far apart the clocks of a fleet's instances may be: each slice stops recording this long
   * before its end, so that an instance whose clock is ahead, and switches early, does not switch
   * inside another's window. A clock behind is absorbed by the carry-over, which the window opens
   * after. NTP keeps hosts within milliseconds of each other; this leaves room for a host far worse
   * than that, at a cost of under 1 % of a 60 s slice.
   */
  public static final Duration FLEET_CLOCK_SKEW = Duration.ofMillis(250);

  /** What a fleet id may hold. */
  public static final String FLEET_ID_ALLOWED =
      "1 to 64 letters, digits, '-', '_' or '.', the same on every instance, such as"
          + " checkout-2026-12";

  private static final Pattern FLEET_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");

  public ExperimentPlan {
    Objects.requireNonNull(duration, "duration");
    Objects.requireNonNull(slice, "slice");
    Objects.requireNonNull(carryOver, "carryOver");
    Objects.requireNonNull(guardRail, "guardRail");
    if (carryOver.isNegative()) {
      throw new IllegalArgumentException(
          "carryOver must not be negative, was " + DurationFormat.format(carryOver));
    }
    if (feature != null && feature.isBlank()) {
      throw new InvalidExperimentPlanException(
          "feature", "feature must name a feature, or be left out to compare the whole tuning");
    }
    if (fleet != null && !FLEET_ID.matcher(fleet).matches()) {
      throw new InvalidExperimentPlanException(
          "fleet", "fleet must be " + FLEET_ID_ALLOWED + ", was '" + fleet + "'");
    }
    if (slice.compareTo(carryOver) <= 0) {
      throw new InvalidExperimentPlanException(
          "slice",
          "slice must be longer than the carry-over discarded after each switch ("
              + DurationFormat.format(carryOver)
              + "), was "
              + DurationFormat.format(slice));
    }
    if (fleet != null && slice.compareTo(carryOver.plus(FLEET_CLOCK_SKEW)) <= 0) {
      throw new InvalidExperimentPlanException(
          "slice",
          "slice must be longer than the carry-over discarded after each switch ("
              + DurationFormat.format(carryOver)
              + ") and the clock skew a fleet run tolerates between instances ("
              + DurationFormat.format(FLEET_CLOCK_SKEW)
              + ") together, was "
              + DurationFormat.format(slice));
    }
    Duration pair = slice.multipliedBy(2);
    if (duration.compareTo(pair) < 0) {
      throw new InvalidExperimentPlanException(
          "duration",
          "duration must hold at least one pair of slices (2 x slice = "
              + DurationFormat.format(pair)
              + "), was "
              + DurationFormat.format(duration));
    }
    long pairs = duration.dividedBy(pair);
    if (pairs > MAX_PAIRS) {
      throw new InvalidExperimentPlanException(
          "duration",
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

  /** A plan of this client alone that compares the whole tuning with stock. */
  public ExperimentPlan(
      Duration duration, Duration slice, Duration carryOver, GuardRail guardRail) {
    this(duration, slice, carryOver, guardRail, null, null);
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

  /** This plan comparing one feature on and off, by its id; {@code null} for the whole tuning. */
  public ExperimentPlan withFeature(String feature) {
    return new ExperimentPlan(
        this.duration, this.slice, this.carryOver, this.guardRail, feature, this.fleet);
  }

  /** This plan run by a fleet with this id; {@code null} for this client alone. */
  public ExperimentPlan inFleet(String fleet) {
    return new ExperimentPlan(
        this.duration, this.slice, this.carryOver, this.guardRail, this.feature, fleet);
  }

  /** The pairs of slices the experiment runs. */
  public int pairs() {
    return (int) this.duration.dividedBy(this.slice.multipliedBy(2));
  }

  /** The slices the experiment runs, two per pair. */
  public int slices() {
    return 2 * pairs();
  }

  /** How long the experiment runs when nothing stops it, from its first recorded slice. */
  public Duration runTime() {
    return this.slice.multipliedBy(slices());
  }
}
