package io.github.spannertuning.warmup;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import org.junit.jupiter.api.Test;

/** How the warm-up's count and its timeout combine, on a test clock (nanoseconds from 0). */
class ReadBudgetTest {

  private static final long MS = 1_000_000L;

  @Test
  void theCountEndsTheWarmUpWhenItIsReachedBeforeTheDeadline() {
    ReadBudget budget = new ReadBudget(3, 1_000 * MS);
    assertThat(budget.tryStart(0)).isTrue();
    assertThat(budget.tryStart(1 * MS)).isTrue();
    assertThat(budget.tryStart(2 * MS)).isTrue();
    assertThat(budget.tryStart(3 * MS)).as("the count is taken").isFalse();
    assertThat(budget.isDone(3 * MS)).as("three reads still in flight").isFalse();
    budget.onAnswered();
    budget.onAnswered();
    assertThat(budget.isDone(4 * MS)).isFalse();
    budget.onAnswered();
    assertThat(budget.isDone(5 * MS)).as("every read ended, long before the deadline").isTrue();
    assertThat(budget.startedCount()).isEqualTo(3);
    assertThat(budget.answeredCount()).isEqualTo(3);
  }

  @Test
  void theDeadlineEndsTheWarmUpWhenItComesBeforeTheCount() {
    ReadBudget budget = new ReadBudget(400, 100 * MS);
    int started = 0;
    // One read every 10 ms: ten fit before the deadline.
    for (long now = 0; budget.tryStart(now); now += 10 * MS) {
      started++;
      budget.onAnswered();
    }
    assertThat(started).isEqualTo(10);
    assertThat(budget.isDone(99 * MS)).as("reads may still start").isFalse();
    assertThat(budget.isDone(100 * MS)).isTrue();
    assertThat(budget.tryStart(100 * MS)).as("none starts at the deadline").isFalse();
  }

  @Test
  void aReadInFlightAtTheDeadlineHasNoTimeLeftAndTheWarmUpIsDone() {
    ReadBudget budget = new ReadBudget(10, 50 * MS);
    assertThat(budget.tryStart(40 * MS)).isTrue();
    assertThat(budget.remainingNanos(40 * MS)).isEqualTo(10 * MS);
    assertThat(budget.remainingNanos(70 * MS)).isZero();
    assertThat(budget.isDone(50 * MS))
        .as("the deadline does not wait for the stalled read")
        .isTrue();
  }

  @Test
  void failedReadsCountAsEndedSoTheCountIsNotSentAgain() {
    ReadBudget budget = new ReadBudget(2, 1_000 * MS);
    assertThat(budget.tryStart(0)).isTrue();
    assertThat(budget.tryStart(0)).isTrue();
    budget.onFailed();
    budget.onAnswered();
    assertThat(budget.isDone(1 * MS)).isTrue();
    assertThat(budget.tryStart(1 * MS)).isFalse();
    assertThat(budget.failedCount()).isEqualTo(1);
  }

  @Test
  void noReadsMeansNoneIsSentAndTheWarmUpIsDoneAtOnce() {
    ReadBudget budget = new ReadBudget(0, 1_000 * MS);
    assertThat(budget.tryStart(0)).isFalse();
    assertThat(budget.isDone(0)).isTrue();
    assertThatIllegalArgumentException().isThrownBy(() -> new ReadBudget(-1, 0));
  }

  @Test
  void readersSharingTheBudgetTakeExactlyTheCount() throws InterruptedException {
    ReadBudget budget = new ReadBudget(10_000, Long.MAX_VALUE);
    Thread[] readers = new Thread[8];
    for (int i = 0; i < readers.length; i++) {
      readers[i] =
          new Thread(
              () -> {
                while (budget.tryStart(0)) {
                  budget.onAnswered();
                }
              });
      readers[i].start();
    }
    for (Thread reader : readers) {
      reader.join();
    }
    assertThat(budget.startedCount()).isEqualTo(10_000);
    assertThat(budget.answeredCount()).isEqualTo(10_000);
  }
}
