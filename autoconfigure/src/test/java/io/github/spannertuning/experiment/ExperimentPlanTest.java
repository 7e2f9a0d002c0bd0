package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Plans, their defaults and the messages that refuse a bad one. */
class ExperimentPlanTest {

  private static final Duration CARRY_OVER = Duration.ofSeconds(5);

  @Test
  void theDefaultsRunTenPairsOfMinuteSlices() {
    ExperimentPlan plan = ExperimentPlan.of(null, null, CARRY_OVER, GuardRail.DEFAULT);
    assertThat(plan.duration()).isEqualTo(Duration.ofMinutes(20));
    assertThat(plan.slice()).isEqualTo(Duration.ofSeconds(60));
    assertThat(plan.pairs()).isEqualTo(10);
    assertThat(plan.slices()).isEqualTo(20);
  }

  @Test
  void aRemainderShorterThanAPairIsNotRun() {
    ExperimentPlan plan =
        ExperimentPlan.of(
            Duration.ofSeconds(50), Duration.ofSeconds(10), CARRY_OVER, GuardRail.DEFAULT);
    assertThat(plan.pairs()).isEqualTo(2);
    assertThat(plan.runTime()).isEqualTo(Duration.ofSeconds(40));
  }

  @Test
  void aSliceNoLongerThanTheCarryOverIsRefused() {
    assertThatIllegalArgumentException()
        .isThrownBy(
            () -> ExperimentPlan.of(null, Duration.ofSeconds(5), CARRY_OVER, GuardRail.DEFAULT))
        .withMessage(
            "slice must be longer than the carry-over discarded after each switch (5s), was 5s");
  }

  @Test
  void aDurationShorterThanAPairIsRefused() {
    assertThatIllegalArgumentException()
        .isThrownBy(
            () -> ExperimentPlan.of(Duration.ofSeconds(90), null, CARRY_OVER, GuardRail.DEFAULT))
        .withMessage("duration must hold at least one pair of slices (2 x slice = 2m), was 90s");
  }

  @Test
  void moreThanTheMostPairsAreRefused() {
    assertThatIllegalArgumentException()
        .isThrownBy(
            () ->
                ExperimentPlan.of(
                    Duration.ofHours(24), Duration.ofSeconds(60), CARRY_OVER, GuardRail.DEFAULT))
        .withMessage(
            "duration must hold at most 500 pairs of slices (duration / (2 x slice)), was 720 pairs"
                + " (24h of 60s slices)");
  }

  @Test
  void eachRefusalNamesThePartOfThePlanItConcerns() {
    assertThatExceptionOfType(InvalidExperimentPlanException.class)
        .isThrownBy(
            () -> ExperimentPlan.of(null, Duration.ofSeconds(5), CARRY_OVER, GuardRail.DEFAULT))
        .extracting(InvalidExperimentPlanException::field)
        .isEqualTo("slice");
    assertThatExceptionOfType(InvalidExperimentPlanException.class)
        .isThrownBy(
            () -> ExperimentPlan.of(Duration.ofSeconds(90), null, CARRY_OVER, GuardRail.DEFAULT))
        .extracting(InvalidExperimentPlanException::field)
        .isEqualTo("duration");
  }

  @Test
  void aFleetsSliceMustHoldTheCarryOverAndTheToleratedSkewTogether() {
    ExperimentPlan alone =
        ExperimentPlan.of(null, Duration.ofMillis(5250), CARRY_OVER, GuardRail.DEFAULT);
    assertThatExceptionOfType(InvalidExperimentPlanException.class)
        .isThrownBy(() -> alone.inFleet("checkout-2026-12"))
        .satisfies((ex) -> assertThat(ex.field()).isEqualTo("slice"))
        .withMessage(
            "slice must be longer than the carry-over discarded after each switch (5s) and the"
                + " clock skew a fleet run tolerates between instances (250ms) together, was"
                + " 5250ms");
    ExperimentPlan fleet =
        ExperimentPlan.of(null, Duration.ofMillis(5260), CARRY_OVER, GuardRail.DEFAULT)
            .inFleet("checkout-2026-12");
    assertThat(fleet.fleet()).isEqualTo("checkout-2026-12");
    assertThat(fleet.slice()).isEqualTo(Duration.ofMillis(5260));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "checkout 2026",
        "checkout/2026",
        "é",
        "0123456789012345678901234567890123456789012345678901234567890123x"
      })
  void aFleetIdOutsideItsLettersOrLengthIsRefused(String id) {
    ExperimentPlan plan = ExperimentPlan.of(null, null, CARRY_OVER, GuardRail.DEFAULT);
    assertThatExceptionOfType(InvalidExperimentPlanException.class)
        .isThrownBy(() -> plan.inFleet(id))
        .satisfies((ex) -> assertThat(ex.field()).isEqualTo("fleet"))
        .withMessage(
            "fleet must be 1 to 64 letters, digits, '-', '_' or '.', the same on every instance,"
                + " such as checkout-2026-12, was '"
                + id
                + "'");
  }

  @Test
  void aFleetIdOfItsLettersIsTaken() {
    ExperimentPlan plan = ExperimentPlan.of(null, null, CARRY_OVER, GuardRail.DEFAULT);
    String longest = "a".repeat(64);
    assertThat(plan.inFleet("Checkout_2026-12.eu").fleet()).isEqualTo("Checkout_2026-12.eu");
    assertThat(plan.inFleet(longest).fleet()).isEqualTo(longest);
    assertThat(plan.inFleet("checkout").inFleet(null).fleet()).isNull();
  }

  @Test
  void aGuardRailThatCouldActBeforeAnIntervalExistsIsRefused() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new GuardRail(1.2, 0.01, 5))
        .withMessage(
            "the guard rail's minPairs must be at least 6 (with fewer pairs no 95 % interval"
                + " exists), was 5");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new GuardRail(1.0, 0.01, 6))
        .withMessageContaining("p99Ratio must be a finite ratio above 1");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> new GuardRail(1.2, 0, 6))
        .withMessageContaining("failedRateDifference must be above 0 and at most 1");
  }

  @ParameterizedTest
  @CsvSource({
    "PT60S, 60s",
    "PT2M, 2m",
    "PT20M, 20m",
    "PT90S, 90s",
    "PT1H, 60m",
    "PT2H, 2h",
    "PT0.5S, 500ms",
    "PT0.000001S, 1us",
    "PT0S, 0s"
  })
  void durationsAreWrittenAsAUserWouldWriteThem(Duration duration, String written) {
    assertThat(DurationFormat.format(duration)).isEqualTo(written);
  }
}
