package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.github.spannertuning.experiment.SignedRank.Confidence;
import org.junit.jupiter.api.Test;

/** Wilson's interval on cases worked by hand. */
class ProportionTest {

  private static final double Z = Confidence.P95.z();

  @Test
  void fiveOfTen() {
    // centre (0.5 + z²/20) / (1 + z²/10) = 0.5; half z·sqrt(0.025 + z²/400) / (1 + z²/10) = 0.2634.
    double[] interval = Proportion.wilson(5, 10, Z);
    assertThat(interval[0]).isCloseTo(0.2366, within(1e-4));
    assertThat(interval[1]).isCloseTo(0.7634, within(1e-4));
  }

  @Test
  void noneOfTenStartsAtZeroAndEndsAtZSquaredOverTenPlusZSquared() {
    double[] interval = Proportion.wilson(0, 10, Z);
    assertThat(interval[0]).isZero();
    assertThat(interval[1])
        .isCloseTo(Z * Z / (10 + Z * Z), within(1e-12))
        .isCloseTo(0.2775, within(1e-4));
  }

  @Test
  void allOfTenEndsAtOne() {
    double[] interval = Proportion.wilson(10, 10, Z);
    assertThat(interval[0]).isCloseTo(1 - 0.2775, within(1e-4));
    assertThat(interval[1]).isOne();
  }

  @Test
  void noTrialsHaveNoInterval() {
    assertThat(Proportion.wilson(0, 0, Z)).containsOnly(Double.NaN);
  }
}
