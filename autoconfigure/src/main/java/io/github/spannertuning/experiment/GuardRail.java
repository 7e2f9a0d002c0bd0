package io.github.spannertuning.experiment;

/**
 * When an experiment stops early because the tuned arm is harming the application: after at least
 * {@code minPairs} pairs, for any call kind, the tuned/stock P99 ratio's 95 % interval lies
 * entirely above {@code p99Ratio}, or the difference in failed rates (tuned less stock) has its 99
 * % interval entirely above {@code failedRateDifference}. The experiment is then {@code aborted}
 * with the figures in its reason, and the client is switched back to the tuned arm, as configured.
 *
 * <p>It is checked after every pair, so it looks several times; the margin above "no difference" is
 * what keeps those repeated looks from stopping an experiment where the arms are alike.
 *
 * @param p99Ratio the P99 ratio the whole interval must exceed; above 1
 * @param failedRateDifference the excess of failed calls, as a fraction of calls, the whole
 *     interval must exceed; above 0 and at most 1
 * @param minPairs the pairs needed before it may act; at least 6, the fewest for which a 95 %
 *     interval exists
 */
public record GuardRail(double p99Ratio, double failedRateDifference, int minPairs) {

  /** Tuned slower by a fifth at P99, or failing one call in a hundred more, over 6 pairs. */
  public static final GuardRail DEFAULT = new GuardRail(1.2, 0.01, 6);

  public GuardRail {
    if (!(p99Ratio > 1) || Double.isInfinite(p99Ratio)) {
      throw new IllegalArgumentException(
          "the guard rail's p99Ratio must be a finite ratio above 1, was " + p99Ratio);
    }
    if (!(failedRateDifference > 0 && failedRateDifference <= 1)) {
      throw new IllegalArgumentException(
          "the guard rail's failedRateDifference must be above 0 and at most 1, was "
              + failedRateDifference);
    }
    if (minPairs < SignedRank.FEWEST_PAIRS_95) {
      throw new IllegalArgumentException(
          "the guard rail's minPairs must be at least "
              + SignedRank.FEWEST_PAIRS_95
              + " (with fewer pairs no 95 % interval exists), was "
              + minPairs);
    }
  }
}
