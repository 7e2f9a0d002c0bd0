package io.github.spannertuning.experiment;

/**
 * Wilson's score interval of a proportion: unlike the normal approximation's, it stays within 0 and
 * 1 and keeps close to its level with few events, as failed calls usually are. It treats the calls
 * as independent trials; failures that come in bursts (a GOAWAY fails every call in flight on a
 * connection) make it too narrow, which is why differences are judged over slice pairs instead.
 */
final class Proportion {

  private Proportion() {}

  /** {@code [low, high]} for {@code events} of {@code trials} at the given normal quantile. */
  static double[] wilson(long events, long trials, double z) {
    if (trials <= 0) {
      return new double[] {Double.NaN, Double.NaN};
    }
    double n = trials;
    double p = events / n;
    double z2 = z * z;
    double denominator = 1 + z2 / n;
    double centre = (p + z2 / (2 * n)) / denominator;
    double half = z * Math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator;
    return new double[] {
      (events == 0) ? 0 : Math.max(0, centre - half),
      (events == trials) ? 1 : Math.min(1, centre + half)
    };
  }
}
