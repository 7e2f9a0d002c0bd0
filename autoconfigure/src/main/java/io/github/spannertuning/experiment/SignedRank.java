package io.github.spannertuning.experiment;

import java.util.Arrays;

/**
 * The Hodges–Lehmann estimate of a paired difference and the confidence interval of Wilcoxon's
 * signed-rank test, by Tukey's Walsh averages.
 *
 * <p>Given the differences {@code d_1..d_n} of {@code n} pairs, the Walsh averages are the {@code M
 * = n(n+1)/2} means {@code (d_i + d_j) / 2} for {@code i ≤ j}. Their median estimates the centre of
 * the differences' distribution; cutting {@code k} of them from each end, where {@code k} is the
 * largest with {@code P(T ≤ k − 1) ≤ α/2} for the signed-rank statistic {@code T} of {@code n}
 * pairs, leaves a {@code 1 − α} interval: {@code [W_(k), W_(M − k + 1)]}. It assumes only that,
 * with no effect, each difference is as likely positive as negative, which a random order within
 * each pair makes true.
 *
 * <p>The distribution of {@code T} is counted exactly up to {@link #EXACT_UP_TO} pairs and
 * approximated by a normal one (with a continuity correction) beyond, where counting would keep the
 * shared timer thread busy for tens of milliseconds. Its levels are discrete: with 6 pairs the
 * smallest two-sided level is {@code 2/2^6 = 1/32}, so the 95 % interval is the range of the 6
 * differences, and with 5 or fewer there is none.
 */
final class SignedRank {

  /** The fewest pairs for which a 95 % interval exists. */
  static final int FEWEST_PAIRS_95 = 6;

  /** The fewest pairs for which a 99 % interval exists: {@code 2/2^8 ≤ 0.01}. */
  static final int FEWEST_PAIRS_99 = 8;

  /**
   * Beyond this many pairs, the normal approximation. From 51 to {@link ExperimentPlan#MAX_PAIRS}
   * pairs it cuts as many averages as the exact count or fewer, so its interval is as wide or
   * wider: by at most 2 of the {@code n(n+1)/2} averages at 95 %, 10 at 99 %.
   */
  static final int EXACT_UP_TO = 50;

  /** A two-sided confidence level. */
  enum Confidence {
    P95(0.95, 1.959963984540054),
    P99(0.99, 2.5758293035489004);

    private final double level;

    private final double z;

    Confidence(double level, double z) {
      this.level = level;
      this.z = z;
    }

    double alphaHalf() {
      return (1 - this.level) / 2;
    }

    double z() {
      return this.z;
    }
  }

  /**
   * A centre and its interval; {@code low} and {@code high} are NaN when the pairs are too few for
   * one.
   */
  record Estimate(double point, double low, double high) {

    static final Estimate NONE = new Estimate(Double.NaN, Double.NaN, Double.NaN);

    boolean hasInterval() {
      return !Double.isNaN(this.low);
    }
  }

  private SignedRank() {}

  /** The Hodges–Lehmann estimate of {@code differences} and its interval at {@code confidence}. */
  static Estimate estimate(double[] differences, Confidence confidence) {
    int n = differences.length;
    if (n == 0) {
      return Estimate.NONE;
    }
    double[] walsh = walshAverages(differences);
    int m = walsh.length;
    double median = (m % 2 == 1) ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2;
    int k = depth(n, confidence);
    if (k < 1) {
      return new Estimate(median, Double.NaN, Double.NaN);
    }
    return new Estimate(median, walsh[k - 1], walsh[m - k]);
  }

  /** The {@code n(n+1)/2} Walsh averages, sorted. */
  static double[] walshAverages(double[] differences) {
    int n = differences.length;
    double[] walsh = new double[n * (n + 1) / 2];
    int index = 0;
    for (int i = 0; i < n; i++) {
      for (int j = i; j < n; j++) {
        walsh[index++] = (differences[i] + differences[j]) / 2;
      }
    }
    Arrays.sort(walsh);
    return walsh;
  }

  /**
   * How many Walsh averages the interval leaves out at each end: the largest {@code k} with {@code
   * P(T ≤ k − 1) ≤ α/2}; 0 when even {@code P(T = 0)} is above it.
   */
  static int depth(int n, Confidence confidence) {
    if (n <= EXACT_UP_TO) {
      double[] cumulative = cumulative(n);
      int k = 0;
      while (k < cumulative.length && cumulative[k] <= confidence.alphaHalf()) {
        k++;
      }
      return k;
    }
    double mean = n * (n + 1) / 4.0;
    double sd = Math.sqrt(n * (n + 1) * (2.0 * n + 1) / 24.0);
    return Math.max(0, (int) Math.floor(mean - confidence.z() * sd + 0.5));
  }

  /**
   * {@code P(T ≤ t)} for {@code t = 0..n(n+1)/2}, where {@code T} is the sum of the ranks {@code
   * 1..n} that a fair coin each includes. The counts of subsets by sum are exact in a double up to
   * {@code 2^53}, past {@link #EXACT_UP_TO}'s {@code 2^50}; beyond, they are rounded to 16 digits,
   * which the tests' comparisons afford.
   */
  static double[] cumulative(int n) {
    int max = n * (n + 1) / 2;
    double[] counts = new double[max + 1];
    counts[0] = 1;
    for (int rank = 1; rank <= n; rank++) {
      for (int sum = rank * (rank + 1) / 2; sum >= rank; sum--) {
        counts[sum] += counts[sum - rank];
      }
    }
    double total = Math.pow(2, n);
    double[] cumulative = new double[max + 1];
    double running = 0;
    for (int sum = 0; sum <= max; sum++) {
      running += counts[sum];
      cumulative[sum] = running / total;
    }
    return cumulative;
  }
}
