package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The estimate the comparison puts on the load generator's per-pair ratios. */
class ExperimentComparisonTest {

  @Test
  void theEstimateIsTheMedianOfTheWalshAveragesOfTheLogRatios() {
    assertThat(ExperimentComparison.hodgesLehmann(new double[] {0.7}))
        .isCloseTo(0.7, within(1e-12));
    // Logs -1, 0, 1 (in units of ln 2): averages -2, -1.5, -1, -1, -0.5, 0; median -1.
    assertThat(ExperimentComparison.hodgesLehmann(new double[] {0.25, 0.5, 1.0}))
        .isCloseTo(0.5, within(1e-12));
    assertThat(ExperimentComparison.hodgesLehmann(new double[] {0.5, 2.0}))
        .isCloseTo(1.0, within(1e-12));
    assertThat(ExperimentComparison.hodgesLehmann(new double[0])).isNaN();
  }

  @Test
  void onePairThatCaughtAStallDoesNotMoveIt() {
    // Three pairs at 0.5 and one at 26: six of the ten averages are ln 0.5.
    assertThat(ExperimentComparison.hodgesLehmann(new double[] {0.5, 0.5, 0.5, 26.0}))
        .isCloseTo(0.5, within(1e-12));
  }
}
