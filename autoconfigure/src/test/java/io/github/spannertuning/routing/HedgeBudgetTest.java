package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The budget of hedges, on reads the test counts and a clock it sets. */
class HedgeBudgetTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final long T0 = 1_000_000 * MS;

  /**
   * The partial outage: every read is slow, so every read asks for a hedge. Hedges stay within the
   * budget's share of the reads, plus the burst.
   */
  @Test
  void whenEveryReadAsksForAHedgeTheyStayWithinTheBudget() {
    HedgeBudget budget = new HedgeBudget(0.05, HedgeBudget.DEFAULT_BURST, T0);
    int reads = 10_000;
    int granted = 0;
    for (int i = 0; i < reads; i++) {
      budget.onRead();
      if (budget.tryAcquire(T0 + i * MS)) {
        granted++;
      }
    }
    assertThat(granted).as("hedges for %d reads that all asked", reads).isBetween(499, 500);
    assertThat(budget.sent()).isEqualTo(granted);
    assertThat(budget.denied()).isEqualTo(reads - granted);
  }

  @Test
  void aQuietSpellSavesAtMostTheBurst() {
    HedgeBudget budget = new HedgeBudget(0.05, HedgeBudget.DEFAULT_BURST, T0);
    for (int i = 0; i < 100_000; i++) {
      budget.onRead();
    }
    assertThat(budget.available(T0)).isEqualTo(HedgeBudget.DEFAULT_BURST);
    int granted = 0;
    while (budget.tryAcquire(T0)) {
      granted++;
    }
    assertThat(granted).as("hedges in a row after 100,000 reads that needed none").isEqualTo(10);
  }

  @Test
  void aFreshClientHasNoHedgeUntilItsReadsEarnedOne() {
    HedgeBudget budget = new HedgeBudget(0.05, HedgeBudget.DEFAULT_BURST, T0);
    for (int i = 0; i < 19; i++) {
      budget.onRead();
    }
    assertThat(budget.tryAcquire(T0)).as("after 19 reads at 5 %").isFalse();
    budget.onRead();
    assertThat(budget.tryAcquire(T0)).as("after 20").isTrue();
  }

  @Test
  void theExtraCallRateCoversAboutTheLastMinute() {
    HedgeBudget budget = new HedgeBudget(0.05, HedgeBudget.DEFAULT_BURST, T0);
    long now = T0;
    // Two minutes of 100 reads a second, a hedge for every 50th read, then one minute of none.
    for (int second = 0; second < 180; second++) {
      now = T0 + second * 1000 * MS;
      for (int i = 0; i < 100; i++) {
        budget.onRead();
        if (second < 120 && i % 50 == 0) {
          budget.tryAcquire(now);
        }
      }
      if (second == 119) {
        assertThat(budget.extraRate(now)).as("rate while hedging").isCloseTo(0.02, within(0.002));
      }
    }
    assertThat(budget.extraRate(now)).as("rate a minute after the last hedge").isLessThan(0.004);
  }
}
