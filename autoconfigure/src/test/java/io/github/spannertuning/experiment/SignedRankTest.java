package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.spannertuning.experiment.SignedRank.Confidence;
import io.github.spannertuning.experiment.SignedRank.Estimate;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The Hodges–Lehmann estimate and Wilcoxon's interval on samples whose answers are known. */
class SignedRankTest {

  @Test
  void theSignedRankDistributionOfTenPairsHasTheTabulatedTail() {
    double[] cumulative = SignedRank.cumulative(10);
    // Subsets of 1..10 summing to at most 8: 1, 1, 1, 2, 2, 3, 4, 5, 6 for sums 0 to 8; 8 sum to 9.
    assertThat(cumulative[8]).isEqualTo(25 / 1024.0);
    assertThat(cumulative[9]).isEqualTo(33 / 1024.0);
    assertThat(cumulative[55]).isEqualTo(1.0);
  }

  @Test
  void tenPairsCutNineWalshAveragesFromEachEndAt95AndFourAt99() {
    assertThat(SignedRank.depth(10, Confidence.P95)).isEqualTo(9);
    // P(T <= 3) = 5/1024 = 0.0049, P(T <= 4) = 7/1024 = 0.0068.
    assertThat(SignedRank.depth(10, Confidence.P99)).isEqualTo(4);
  }

  @Test
  void theHodgesLehmannEstimateOfOneToTenIsItsCentreWithinThreeAndEight() {
    // Walsh averages of 1..10 in order: 1, 1.5, 2, 2, 2.5, 2.5, 3, 3, 3 (the 9th), ...; and the 9th
    // from the top is 11 - 3 by symmetry.
    Estimate estimate =
        SignedRank.estimate(
            IntStream.rangeClosed(1, 10).asDoubleStream().toArray(), Confidence.P95);
    assertThat(estimate.point()).isEqualTo(5.5);
    assertThat(estimate.low()).isEqualTo(3.0);
    assertThat(estimate.high()).isEqualTo(8.0);
  }

  @Test
  void sixPairsGiveTheirRangeAsThe95Interval() {
    // 2/2^6 = 1/32 is the only two-sided level under 5 %: one Walsh average off each end, which is
    // the smallest and the largest difference.
    Estimate estimate =
        SignedRank.estimate(new double[] {0.4, -0.1, 0.9, 0.2, 0.3, 0.6}, Confidence.P95);
    assertThat(estimate.low()).isEqualTo(-0.1);
    assertThat(estimate.high()).isEqualTo(0.9);
    // The median of the 21 Walsh averages, the 11th: -0.1, 0.05, 0.1, 0.15, 0.2, 0.25, 0.25, 0.3,
    // 0.3, 0.35, 0.4.
    assertThat(estimate.point()).isCloseTo(0.4, within(1e-12));
  }

  @Test
  void fewerThanSixPairsHaveNo95IntervalAndFewerThanEightNo99One() {
    assertThat(SignedRank.depth(SignedRank.FEWEST_PAIRS_95 - 1, Confidence.P95)).isZero();
    assertThat(SignedRank.depth(SignedRank.FEWEST_PAIRS_95, Confidence.P95)).isOne();
    assertThat(SignedRank.depth(SignedRank.FEWEST_PAIRS_99 - 1, Confidence.P99)).isZero();
    assertThat(SignedRank.depth(SignedRank.FEWEST_PAIRS_99, Confidence.P99)).isOne();
    Estimate five = SignedRank.estimate(new double[] {1, 2, 3, 4, 5}, Confidence.P95);
    assertThat(five.point()).isEqualTo(3.0);
    assertThat(five.hasInterval()).isFalse();
  }

  @ParameterizedTest
  @ValueSource(ints = {51, 60, 100, 213, 500})
  void beyondFiftyPairsTheNormalApproximationGivesAnIntervalAsWideOrWiderThanTheExactOne(int n) {
    assertThat(n).isGreaterThan(SignedRank.EXACT_UP_TO);
    double[] cumulative = SignedRank.cumulative(n);
    for (Confidence confidence : Confidence.values()) {
      int exact = 0;
      while (cumulative[exact] <= confidence.alphaHalf()) {
        exact++;
      }
      assertThat(SignedRank.depth(n, confidence))
          .as("averages cut at each end for %d pairs at %s", n, confidence)
          .isLessThanOrEqualTo(exact)
          .isGreaterThanOrEqualTo(exact - ((confidence == Confidence.P95) ? 2 : 10));
    }
  }

  @Test
  void theEstimateFollowsAShiftAndAScaleOfItsSample() {
    double[] sample = {0.12, -0.3, 0.05, 0.4, 0.22, -0.07, 0.31, 0.18};
    double[] moved = new double[sample.length];
    for (int i = 0; i < sample.length; i++) {
      moved[i] = 3 * sample[i] - 1;
    }
    Estimate before = SignedRank.estimate(sample, Confidence.P95);
    Estimate after = SignedRank.estimate(moved, Confidence.P95);
    assertThat(after.point()).isCloseTo(3 * before.point() - 1, within(1e-12));
    assertThat(after.low()).isCloseTo(3 * before.low() - 1, within(1e-12));
    assertThat(after.high()).isCloseTo(3 * before.high() - 1, within(1e-12));
  }
}
