package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** The warm-connection workloads' targets, as the report checks them. */
class WarmUpReportTest {

  private static final ObjectMapper json = new ObjectMapper();

  @Test
  void agingSetsEachVariantsP999AgainstItsOwnWithNoRetirement() throws Exception {
    JsonNode aging =
        json.readTree(
            """
            {"name": "aging",
             "variants": [{"variant": "stock", "p999Ms": 120.0},
                          {"variant": "tuned", "p999Ms": 12.0}],
             "noRetirement": {"variants": [{"variant": "stock", "p999Ms": 40.0},
                                           {"variant": "tuned", "p999Ms": 10.0}]}}
            """);

    assertThat(WarmUpReport.agingRatio(aging, "tuned")).isCloseTo(1.2, within(1e-12));
    assertThat(WarmUpReport.agingRatio(aging, "stock")).isCloseTo(3.0, within(1e-12));
    assertThat(WarmUpReport.agingRatio(aging, "round robin")).isNaN();
  }

  @Test
  void aFreshInstanceSetsTheMedianOfItsFirstSecondsAgainstTheMedianOfItsWarmOnes()
      throws Exception {
    // Medians of 5 rounds: first 9 (one slow round does not move it), warm 7.5.
    JsonNode fresh =
        json.readTree(
            """
            {"name": "fresh-instance",
             "variants": [{"variant": "tuned", "rounds": [
               {"firstP99Ms": 8.0, "warmP99Ms": 7.0},
               {"firstP99Ms": 9.0, "warmP99Ms": 8.0},
               {"firstP99Ms": 250.0, "warmP99Ms": 7.5},
               {"firstP99Ms": 10.0, "warmP99Ms": 7.5},
               {"firstP99Ms": 9.0, "warmP99Ms": null}]}]}
            """);

    // The round without a warm P99 counts for the first stretch only: warm is the median of 4.
    assertThat(WarmUpReport.freshInstanceRatio(fresh, "tuned")).isCloseTo(9.0 / 7.5, within(1e-12));
    assertThat(WarmUpReport.freshInstanceRatio(fresh, "stock")).isNaN();
  }

  @Test
  void aTargetIsMetAtItsLimitAndNotAbove() {
    assertThat(WarmUpReport.verdict(1.2, 1.2)).isEqualTo("x1.20, met");
    assertThat(WarmUpReport.verdict(0.93, 1.2)).isEqualTo("x0.93, met");
    assertThat(WarmUpReport.verdict(1.213, 1.2)).isEqualTo("x1.21, NOT met");
    assertThat(WarmUpReport.verdict(Double.NaN, 1.2)).isEqualTo("n/a");
  }
}
