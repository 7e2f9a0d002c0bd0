package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The carry-over rule: {@code max(drainTimeout, ceil(h / 2^s) × halfLife × 2^s)}. */
class CarryOverTest {

  @Test
  void withTheClientsFiguresTheEstimatesRememberTwoSecondsAndTheDefaultDrainTimeoutDecides() {
    CarryOver carryOver = CarryOver.forDrainTimeout(Duration.ofSeconds(5));
    // 1 ms x 2^7 = 128 ms is the first power that reaches the 100 ms penalty.
    assertThat(carryOver.halvingsToForget()).isEqualTo(7);
    // 7 halvings fit in 2 of the slowest, 1 s, half-lives.
    assertThat(carryOver.estimateMemory()).isEqualTo(Duration.ofSeconds(2));
    assertThat(carryOver.length()).isEqualTo(Duration.ofSeconds(5));
  }

  @Test
  void aShortDrainTimeoutLeavesTheEstimatesMemory() {
    assertThat(CarryOver.forDrainTimeout(Duration.ofMillis(500)).length())
        .isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void theMemoryFollowsItsInputs() {
    Duration halfLife = Duration.ofMillis(250);
    Duration penalty = Duration.ofMillis(100);
    Duration floor = Duration.ofMillis(1);
    Duration none = Duration.ZERO;
    assertThat(new CarryOver(none, halfLife, 0, penalty, floor).estimateMemory())
        .as("no backoff: 7 half-lives of 250 ms")
        .isEqualTo(Duration.ofMillis(1750));
    assertThat(new CarryOver(none, halfLife, 3, penalty, floor).estimateMemory())
        .as("backoff up to 8 times: one half-life of 2 s holds the 7")
        .isEqualTo(Duration.ofSeconds(2));
    assertThat(new CarryOver(none, halfLife, 2, Duration.ofMillis(128), floor).halvingsToForget())
        .as("a penalty a power of two above the floor")
        .isEqualTo(7);
    assertThat(new CarryOver(none, halfLife, 2, Duration.ofMillis(129), floor).estimateMemory())
        .as("8 halvings: still 2 slowest half-lives")
        .isEqualTo(Duration.ofSeconds(2));
    assertThat(new CarryOver(none, halfLife, 2, Duration.ofMillis(257), floor).estimateMemory())
        .as("9 halvings: 3 slowest half-lives")
        .isEqualTo(Duration.ofSeconds(3));
    assertThat(new CarryOver(none, halfLife, 2, floor, floor).length())
        .as("nothing to forget")
        .isEqualTo(Duration.ZERO);
  }

  @Test
  void inputsOutOfRangeAreRefusedWithWhatIsAccepted() {
    assertThatIllegalArgumentException()
        .isThrownBy(
            () ->
                new CarryOver(
                    Duration.ofSeconds(-1),
                    Duration.ofMillis(250),
                    2,
                    Duration.ofMillis(100),
                    Duration.ofMillis(1)))
        .withMessageContaining("drain timeout not negative")
        .withMessageContaining("drainTimeout=PT-1S");
    assertThatIllegalArgumentException()
        .isThrownBy(
            () ->
                new CarryOver(
                    Duration.ZERO,
                    Duration.ofMillis(250),
                    2,
                    Duration.ofMillis(1),
                    Duration.ofMillis(2)))
        .withMessageContaining("penalty from the floor to 1h");
  }
}
