package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** When hedges are due, polled by the test on a clock it sets, with no thread of the timer's. */
class HedgeTimerTest {

  private static final long T0 = 1_000_000_000L;

  private final HedgeTimer timer = new HedgeTimer(() -> T0, false);

  private final List<String> due = new ArrayList<>();

  @Test
  void aRaceIsDueOnceAtItsTimeAndTheNextOneSetsTheWakeUp() {
    Race soon = race("soon", T0 + 5);
    race("later", T0 + 9);
    assertThat(this.timer.poll(T0)).as("next wake-up").isEqualTo(T0 + 5);
    assertThat(this.due).isEmpty();
    assertThat(this.timer.poll(T0 + 5)).isEqualTo(T0 + 9);
    assertThat(this.due).containsExactly("soon");
    soon.hedge();
    assertThat(this.timer.poll(T0 + 9)).isEqualTo(HedgeTimer.NOTHING);
    assertThat(this.due).containsExactly("soon", "later");
    assertThat(this.timer.pending()).isZero();
  }

  @Test
  void aReadThatAnsweredIsDroppedWithoutBeingDue() {
    Race answered = race("answered", T0 + 5);
    Race closed = race("closed", T0 + 5);
    race("waiting", T0 + 7);
    answered.respond(HedgeRace.FIRST);
    closed.close();
    assertThat(this.timer.poll(T0 + 6)).isEqualTo(T0 + 7);
    assertThat(this.due).isEmpty();
    assertThat(this.timer.pending()).as("only the read still waiting").isEqualTo(1);
  }

  @Test
  void aRaceAddedWithAnEarlierTimeMovesTheWakeUpForward() {
    race("late", T0 + 100);
    assertThat(this.timer.poll(T0)).isEqualTo(T0 + 100);
    race("early", T0 + 10);
    assertThat(this.timer.poll(T0 + 1)).isEqualTo(T0 + 10);
    assertThat(this.timer.poll(T0 + 10)).isEqualTo(T0 + 100);
    assertThat(this.due).containsExactly("early");
  }

  private Race race(String name, long dueNanos) {
    Race race = new Race(name);
    this.timer.schedule(race, dueNanos);
    return race;
  }

  private final class Race extends HedgeRace {

    private final String name;

    Race(String name) {
      this.name = name;
    }

    @Override
    protected void hedgeDue() {
      HedgeTimerTest.this.due.add(this.name);
    }
  }
}
