package io.github.spannertuning.routing;

import static io.github.spannertuning.routing.HedgeRace.FIRST;
import static io.github.spannertuning.routing.HedgeRace.SECOND;
import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.routing.HedgeRace.Decision;
import org.junit.jupiter.api.Test;

/** The race between a read and its hedge, event by event in the order the test gives. */
class HedgeRaceTest {

  private final HedgeRace race = new HedgeRace();

  @Test
  void theFirstAttemptToRespondWinsAndOnlyItsMessagesPass() {
    hedge();
    assertThat(this.race.respond(SECOND)).isEqualTo(Decision.WIN);
    assertThat(this.race.winner()).isEqualTo(SECOND);
    assertThat(this.race.respond(FIRST)).isEqualTo(Decision.DROP);
    assertThat(this.race.respond(SECOND)).isEqualTo(Decision.FORWARD);
    assertThat(this.race.fail(FIRST, false)).as("the loser's failure").isEqualTo(Decision.DROP);
    assertThat(this.race.fail(SECOND, false)).as("the winner's").isEqualTo(Decision.FORWARD);
  }

  @Test
  void aReadAnsweredBeforeItsDelayIsNeverHedged() {
    assertThat(this.race.respond(FIRST)).isEqualTo(Decision.WIN);
    assertThat(this.race.hedgeable()).isFalse();
    assertThat(this.race.hedge()).isFalse();
  }

  @Test
  void aFirstAttemptThatFailsBeforeAnyHedgeFailsAsItWouldWithout() {
    assertThat(this.race.fail(FIRST, false)).isEqualTo(Decision.FORWARD);
    assertThat(this.race.hedge()).as("no hedge after the failure went to the client").isFalse();
  }

  @Test
  void aFirstAttemptThatFailsLeavesTheHedgeToAnswer() {
    hedge();
    assertThat(this.race.fail(FIRST, false)).isEqualTo(Decision.WAIT);
    assertThat(this.race.respond(SECOND)).isEqualTo(Decision.WIN);
  }

  @Test
  void bothFailingGivesTheFirstAttemptsFailure() {
    hedge();
    assertThat(this.race.fail(FIRST, false)).isEqualTo(Decision.WAIT);
    assertThat(this.race.fail(SECOND, false)).isEqualTo(Decision.FORWARD_FIRST_ERROR);
  }

  @Test
  void bothFailingTheOtherWayRoundGivesTheFirstAttemptsFailureToo() {
    hedge();
    assertThat(this.race.fail(SECOND, false)).isEqualTo(Decision.WAIT);
    assertThat(this.race.fail(FIRST, false)).isEqualTo(Decision.FORWARD);
  }

  @Test
  void theApplicationsDeadlineEndsBoth() {
    hedge();
    assertThat(this.race.fail(FIRST, true)).isEqualTo(Decision.END_ALL);
    assertThat(this.race.respond(SECOND))
        .as("the hedge after the deadline")
        .isEqualTo(Decision.DROP);
    assertThat(this.race.fail(SECOND, true)).isEqualTo(Decision.DROP);
  }

  @Test
  void closingBeforeAWinnerCancelsBothAndNoHedgeFollows() {
    assertThat(this.race.close()).isEqualTo(Decision.CANCEL_ALL);
    assertThat(this.race.hedge()).isFalse();
    assertThat(this.race.respond(FIRST)).isEqualTo(Decision.DROP);
  }

  @Test
  void closingAfterAWinnerClosesTheWinner() {
    hedge();
    this.race.respond(FIRST);
    assertThat(this.race.close()).isEqualTo(Decision.CLOSE_WINNER);
  }

  private void hedge() {
    assertThat(this.race.hedgeable()).isTrue();
    assertThat(this.race.hedge()).isTrue();
    assertThat(this.race.hedged()).isTrue();
  }
}
