package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.within;

import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The per-kind figures, verdicts, warnings and guard rail, on slices with given figures. */
class ExperimentAnalysisTest {

  @Test
  void theP99RatioIsTheHodgesLehmannEstimateOfThePairsLogRatios() {
    // Log ratios -0.1 to -1.0: the estimate and interval of 1..10, scaled by -1/10.
    double[] ratios = new double[10];
    for (int pair = 0; pair < 10; pair++) {
      ratios[pair] = Math.exp(-(pair + 1) / 10.0);
    }
    KindResult result = singleUse(Slices.pairs(ratios, 10_000, 0, 0));
    assertThat(result.pairs()).isEqualTo(10);
    assertThat(result.p99Ratio()).isCloseTo(Math.exp(-0.55), within(1e-6));
    assertThat(result.p99RatioLow()).isCloseTo(Math.exp(-0.8), within(1e-6));
    assertThat(result.p99RatioHigh()).isCloseTo(Math.exp(-0.3), within(1e-6));
    assertThat(result.p50Ratio()).isEqualTo(1.0);
    assertThat(result.p99Seconds().stock()).isEqualTo(0.020);
    assertThat(result.calls().tuned()).isEqualTo(100_000);
    assertThat(result.tailSamples().stock()).isEqualTo(1_000);
    assertThat(result.verdict()).isEqualTo("better");
    assertThat(result.warnings()).isEmpty();
  }

  @Test
  void armsAlikeHaveNoDetectableDifference() {
    double[] ratios = {0.8, 1.2, 0.9, 1.1, 1.0, 0.95, 1.05, 1.15, 0.85, 1.0};
    KindResult result = singleUse(Slices.pairs(ratios, 10_000, 3, 3));
    assertThat(result.p99RatioLow()).isLessThan(1);
    assertThat(result.p99RatioHigh()).isGreaterThan(1);
    assertThat(result.failedRateDifference()).isZero();
    assertThat(result.verdict()).isEqualTo("no-detectable-difference");
  }

  @Test
  void aTunedArmThatIsFasterButFailsMoreIsWorse() {
    KindResult result = singleUse(Slices.pairs(constant(10, 0.5), 1_000, 30, 0));
    assertThat(result.p99RatioHigh()).isLessThan(1);
    assertThat(result.failedRateDifference()).isCloseTo(0.03, within(1e-12));
    assertThat(result.failedRateDifferenceLow()).isCloseTo(0.03, within(1e-12));
    assertThat(result.verdict()).isEqualTo("worse");
  }

  @Test
  void fewerFailuresAtTheSameP99AreBetter() {
    KindResult result = singleUse(Slices.pairs(constant(10, 1.0), 1_000, 0, 20));
    assertThat(result.p99Ratio()).isEqualTo(1.0);
    assertThat(result.failedRateDifferenceHigh()).isCloseTo(-0.02, within(1e-12));
    assertThat(result.verdict()).isEqualTo("better");
  }

  @Test
  void failedRatesPerArmComeWithWilsonIntervalsAndTheirStatuses() {
    KindResult result = singleUse(Slices.pairs(constant(10, 1.0), 1_000, 1, 5));
    assertThat(result.failed().tuned()).isEqualTo(10);
    assertThat(result.failedRate().stock()).isEqualTo(0.005);
    double[] stock = Proportion.wilson(50, 10_000, SignedRank.Confidence.P95.z());
    assertThat(result.failedRateLow().stock()).isEqualTo(stock[0]);
    assertThat(result.failedRateHigh().stock()).isEqualTo(stock[1]);
    assertThat(result.failedByStatus().stock()).isEqualTo(Map.of("UNAVAILABLE", 50L));
  }

  @Test
  void fewerThanSixPairsGiveEstimatesWithoutIntervalsAndNoVerdict() {
    KindResult result = singleUse(Slices.pairs(constant(5, 0.5), 10_000, 0, 0));
    assertThat(result.p99Ratio()).isCloseTo(0.5, within(1e-9));
    assertThat(result.p99RatioLow()).isNull();
    assertThat(result.p99RatioHigh()).isNull();
    assertThat(result.verdict()).isEqualTo("no-detectable-difference");
    assertThat(result.warnings())
        .containsExactly("5 pairs with calls in both arms: the 95 % intervals need at least 6");
  }

  @Test
  void fewTailSamplesAndPairsWithoutCallsAreWarnedOf() {
    List<SliceSummary> slices = new ArrayList<>(Slices.pairs(constant(7, 0.5), 1_000, 0, 0));
    slices.set(13, Slices.singleUse(13, slices.get(13).arm(), 0, 0, 0, 0));
    KindResult result = singleUse(slices);
    assertThat(result.pairs()).isEqualTo(6);
    assertThat(result.tailSamples().tuned()).isEqualTo(60);
    assertThat(result.warnings())
        .containsExactly(
            "1 of 7 pairs left out: one of their slices had no calls of this kind",
            "60 calls above P99 in the tuned arm, fewer than 100: the P99 figures rest on few samples",
            "60 calls above P99 in the stock arm, fewer than 100: the P99 figures rest on few samples");
    assertThat(ExperimentAnalysis.analyze(slices, CallKind.COMMIT).warnings())
        .containsExactly("no calls of this kind");
  }

  @Test
  void theGuardRailActsOnAConfidentP99RatioAboveItsMarginAfterItsPairs() {
    GuardRail rail = GuardRail.DEFAULT;
    assertThat(
            ExperimentAnalysis.guardRail(all(Slices.pairs(constant(6, 1.5), 10_000, 0, 0)), rail))
        .isEqualTo(
            "guard rail: over 6 pairs the tuned arm's P99 of single-use calls was x1.50 the stock"
                + " arm's (95 % interval x1.50 to x1.50), entirely above the x1.20 margin; the"
                + " client is tuned as configured again");
    assertThat(
            ExperimentAnalysis.guardRail(all(Slices.pairs(constant(5, 1.5), 10_000, 0, 0)), rail))
        .as("fewer pairs than the guard rail waits for")
        .isNull();
    double[] justAbove = {1.1, 1.3, 1.25, 1.4, 1.3, 1.35};
    assertThat(ExperimentAnalysis.guardRail(all(Slices.pairs(justAbove, 10_000, 0, 0)), rail))
        .as("worse, but its interval reaches below the margin")
        .isNull();
  }

  @Test
  void theGuardRailActsOnFailuresAboveItsMargin() {
    assertThat(
            ExperimentAnalysis.guardRail(
                all(Slices.pairs(constant(8, 1.0), 1_000, 30, 0)), GuardRail.DEFAULT))
        .isEqualTo(
            "guard rail: over 8 pairs the tuned arm failed 3.00 % more of its single-use calls"
                + " than the stock arm (99 % interval 3.00 % to 3.00 %), entirely above the 1.00 %"
                + " margin; the client is tuned as configured again");
  }

  @Test
  void aPairWithTwoSlicesOfOneArmIsAMistake() {
    List<SliceSummary> slices =
        List.of(
            Slices.singleUse(0, Arm.TUNED, 100, 5, 20, 0),
            Slices.singleUse(1, Arm.TUNED, 100, 5, 20, 0));
    assertThatIllegalArgumentException()
        .isThrownBy(() -> ExperimentAnalysis.analyze(slices))
        .withMessage("pair 0 has two TUNED slices");
  }

  private static KindResult singleUse(List<SliceSummary> slices) {
    return ExperimentAnalysis.analyze(slices, CallKind.SINGLE_USE);
  }

  private static Map<CallKind, KindResult> all(List<SliceSummary> slices) {
    return ExperimentAnalysis.analyze(slices);
  }

  private static double[] constant(int pairs, double ratio) {
    double[] ratios = new double[pairs];
    Arrays.fill(ratios, ratio);
    return ratios;
  }
}
