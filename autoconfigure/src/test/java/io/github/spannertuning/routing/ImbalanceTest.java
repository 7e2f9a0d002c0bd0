package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The imbalance figure and its window, on call counts the test feeds. */
class ImbalanceTest {

  private static final int POOL = 8;

  private static double of(Imbalance imbalance, Long... calls) {
    return imbalance.of(List.of(calls).iterator(), Long::longValue, POOL);
  }

  @Test
  void theMeanIsTakenOverTheWholePoolIdleConnectionsIncluded() {
    Imbalance imbalance = new Imbalance();
    assertThat(of(imbalance, 12L)).as("one connection of eight").isEqualTo(8.0);
    assertThat(of(imbalance, 3L, 3L, 3L, 3L)).as("half the pool, evenly").isEqualTo(2.0);
    assertThat(of(imbalance, 5L, 5L, 5L, 5L, 5L, 5L, 5L, 5L)).isEqualTo(1.0);
  }

  @Test
  void aPoolThatGrewPastItsSizeTakesTheMeanOverTheConnectionsSeen() {
    Long[] calls = new Long[10];
    Arrays.fill(calls, 2L);
    calls[0] = 20L;
    assertThat(of(new Imbalance(), calls)).isEqualTo(20.0 / (38.0 / 10));
  }

  @Test
  void noCallsInTheWindowReadNaN() {
    Imbalance imbalance = new Imbalance();
    assertThat(of(imbalance)).isNaN();
    imbalance.roll(new long[] {4, 4});
    imbalance.roll(new long[] {4, 4});
    assertThat(of(imbalance, 4L, 4L)).as("no call since the window's start").isNaN();
  }

  @Test
  void theWindowStartsAtThePreviousRollAndAResetForgetsIt() {
    Imbalance imbalance = new Imbalance();
    imbalance.roll(new long[] {10, 0});
    assertThat(of(imbalance, 10L, 2L))
        .as("the first roll only marks the next start")
        .isEqualTo(10.0 / (12.0 / POOL));
    imbalance.roll(new long[] {10, 2});
    assertThat(of(imbalance, 10L, 4L)).as("since the first roll: 0 and 4").isEqualTo(8.0);
    assertThat(of(imbalance, 10L, 4L)).as("reading moves nothing").isEqualTo(8.0);
    imbalance.reset();
    assertThat(of(imbalance, 10L, 4L)).isEqualTo(10.0 / (14.0 / POOL));
  }
}
