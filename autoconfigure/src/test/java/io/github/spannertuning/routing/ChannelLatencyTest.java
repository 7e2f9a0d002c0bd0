package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The latency estimate the picker weighs, on a clock the test sets: how answers, silence, errors
 * and time without samples move it.
 */
class ChannelLatencyTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final long T0 = 1_000_000 * MS;

  @Test
  void answersMoveTheEstimateTowardsTheirLatency() {
    ChannelLatency latency = new ChannelLatency(T0);
    long now = T0;
    for (int i = 0; i < 50; i++) {
      now += 10 * MS;
      latency.answered(now - 20 * MS, now);
    }
    assertThat(latency.estimateNanos())
        .as("estimate after 50 answers of 20 ms")
        .isBetween(18 * MS, 20 * MS);
    assertThat(latency.expectedNanos(now, 0)).isEqualTo(latency.estimateNanos());
  }

  @Test
  void aChannelThatStopsAnsweringIsExpectedToTakeAtLeastItsSilence() {
    ChannelLatency latency = answering(3 * MS);
    long now = T0 + 1000 * MS;
    latency.firstOutstanding(now);
    assertThat(latency.expectedNanos(now + 40 * MS, 1))
        .as("40 ms of silence is below the threshold")
        .isEqualTo(latency.expectedNanos(now + 40 * MS, 0));
    assertThat(latency.expectedNanos(now + 300 * MS, 1))
        .as("300 ms of silence, a call outstanding")
        .isGreaterThanOrEqualTo(300 * MS);
    assertThat(latency.expectedNanos(now + 300 * MS, 0))
        .as("silence with nothing outstanding")
        .isLessThan(300 * MS);
  }

  /**
   * A channel whose one outstanding call is a report not due for 100 ms (its statement's extra
   * cost) is not taken as stuck at 80 ms of silence, as it is without; past the report's time its
   * silence counts again.
   */
  @Test
  void aCostlyCallsSilenceCountsOnlyOnceTheCallIsDue() {
    ChannelLatency latency = answering(3 * MS);
    long now = T0 + 1000 * MS;
    latency.firstOutstanding(now);
    assertThat(latency.expectedNanos(now + 80 * MS, 1))
        .as("80 ms of silence, a point read outstanding")
        .isGreaterThanOrEqualTo(80 * MS);
    latency.quietUntil(now + 100 * MS);
    assertThat(latency.expectedNanos(now + 80 * MS, 1))
        .as("80 ms of silence, a report due at 100 ms outstanding")
        .isLessThan(10 * MS);
    assertThat(latency.expectedNanos(now + 400 * MS, 1))
        .as("300 ms past the report's time")
        .isGreaterThanOrEqualTo(300 * MS);
  }

  @Test
  void aFailedCallMakesTheChannelSuspectUntilItAnswers() {
    ChannelLatency latency = answering(3 * MS);
    long now = T0 + 1000 * MS;
    latency.closed(ChannelLatency.Close.DEADLINE, now - 1000 * MS, now, false);
    assertThat(latency.suspect()).isTrue();
    assertThat(latency.estimateNanos()).as("the deadline's wait counts").isEqualTo(1000 * MS);
    latency.answered(now + 10 * MS, now + 13 * MS);
    assertThat(latency.suspect()).isFalse();
  }

  @Test
  void aCancelOfACallThatAnsweredOrWasCancelledSoonTellsNothingOfTheChannel() {
    ChannelLatency latency = answering(3 * MS);
    long estimate = latency.estimateNanos();
    long now = T0 + 1000 * MS;
    latency.closed(ChannelLatency.Close.CANCELLED, now - 900 * MS, now, true);
    latency.closed(ChannelLatency.Close.CANCELLED, now - 2 * MS, now, false);
    assertThat(latency.estimateNanos()).isEqualTo(estimate);
    assertThat(latency.suspect()).isFalse();
  }

  /**
   * A hedged read's loser on a slow channel is cancelled once the hedge answered elsewhere, before
   * its own answer: its wait is what is known of the channel. Taken as at least that long, a slow
   * channel probed by hedged reads stays measured, rather than forgotten down to the least and
   * probed on.
   */
  @Test
  void aCallCancelledUnansweredAfterLongerThanExpectedCountsAtLeastItsWait() {
    ChannelLatency latency = answering(3 * MS);
    long now = T0 + 1000 * MS + ChannelLatency.FORGET_HALF_LIFE_NANOS;
    latency.closed(ChannelLatency.Close.CANCELLED, now - 13 * MS, now, false);
    assertThat(latency.estimateNanos())
        .as("a channel unheard for a half-life, a call of it cancelled unanswered after 13 ms")
        .isEqualTo(13 * MS);
    assertThat(latency.suspect()).as("a cancel is no failure").isFalse();
  }

  @Test
  void anEstimateNoCallUpdatesIsForgottenByHalves() {
    ChannelLatency latency = new ChannelLatency(T0);
    latency.closed(ChannelLatency.Close.CHANNEL_FAULT, T0, T0 + 100 * MS, false);
    long sampled = T0 + 100 * MS;
    assertThat(latency.expectedNanos(sampled + ChannelLatency.FORGET_HALF_LIFE_NANOS, 0))
        .isEqualTo(50 * MS);
    assertThat(latency.expectedNanos(sampled + 20 * ChannelLatency.FORGET_HALF_LIFE_NANOS, 0))
        .as("never below an untried channel's estimate")
        .isEqualTo(ChannelLatency.INITIAL_NANOS);
  }

  @Test
  void failuresInARowLeaveTheChannelAloneLonger() {
    ChannelLatency once = new ChannelLatency(T0);
    once.closed(ChannelLatency.Close.CHANNEL_FAULT, T0, T0 + 100 * MS, false);
    ChannelLatency thrice = new ChannelLatency(T0);
    for (int i = 0; i < 3; i++) {
      thrice.closed(ChannelLatency.Close.CHANNEL_FAULT, T0, T0 + 100 * MS, false);
    }
    long later = T0 + 100 * MS + 4 * ChannelLatency.FORGET_HALF_LIFE_NANOS;
    assertThat(once.expectedNanos(later, 0))
        .as("one failure: four halvings")
        .isEqualTo(100 * MS >> 4);
    assertThat(thrice.expectedNanos(later, 0))
        .as("three in a row: the half-life doubled twice, one halving")
        .isEqualTo(100 * MS >> 1);
  }

  @Test
  void aChannelTriedAgainAfterAPenaltyIsJudgedByWhatItIsNowExpectedToTake() {
    ChannelLatency latency = new ChannelLatency(T0);
    latency.closed(ChannelLatency.Close.DEADLINE, T0, T0 + 1000 * MS, false);
    long retried = T0 + 1000 * MS + 20 * ChannelLatency.FORGET_HALF_LIFE_NANOS;
    latency.firstOutstanding(retried);
    assertThat(latency.expectedNanos(retried + 100 * MS, 1))
        .as("100 ms of silence counts against the forgotten estimate, not the 1 s penalty")
        .isGreaterThanOrEqualTo(100 * MS);
  }

  @Test
  void aProbeOfAForgottenChannelIsJudgedByItsAnswerAlone() {
    ChannelLatency slow = answering(100 * MS);
    long probed = T0 + 1000 * MS + ChannelLatency.FORGET_HALF_LIFE_NANOS + 100 * MS;
    slow.answered(probed - 100 * MS, probed);
    assertThat(slow.estimateNanos())
        .as("still 100 ms: not averaged with the forgotten estimate that let the probe through")
        .isEqualTo(100 * MS);
    ChannelLatency recovered = answering(100 * MS);
    recovered.answered(probed - 3 * MS, probed);
    assertThat(recovered.estimateNanos()).as("recovered: 3 ms at once").isEqualTo(3 * MS);
    ChannelLatency busy = answering(100 * MS);
    long soon = T0 + 1000 * MS + 10 * MS;
    busy.answered(soon - 3 * MS, soon);
    assertThat(busy.estimateNanos())
        .as("a channel in use moves by the sample's weight")
        .isGreaterThan(80 * MS);
  }

  @Test
  void anEstimateIsUnverifiedOnceAHalfLifePassesWithoutAnAnswer() {
    ChannelLatency latency = answering(3 * MS);
    long answered = T0 + 1000 * MS;
    assertThat(latency.unverified(answered + ChannelLatency.FORGET_HALF_LIFE_NANOS - 1)).isFalse();
    assertThat(latency.unverified(answered + ChannelLatency.FORGET_HALF_LIFE_NANOS)).isTrue();
  }

  @Test
  void aSuspectChannelCarriesOneCallAtATime() {
    long now = System.nanoTime();
    Connection stats = new Connection(now);
    ChannelPicker.Rule rule = ChannelPicker.Rule.defaults(90);
    stats.latency().closed(ChannelLatency.Close.CHANNEL_FAULT, now - 200 * MS, now, false);
    assertThat(ChannelPicker.expected(stats, now, rule))
        .as("suspect, nothing outstanding")
        .isNotEqualTo(ChannelPicker.CLOSED);
    stats.countCall(now);
    assertThat(ChannelPicker.expected(stats, now, rule))
        .as("suspect, one call outstanding")
        .isEqualTo(ChannelPicker.CLOSED);
    stats.latency().answered(now, now + 3 * MS);
    assertThat(ChannelPicker.expected(stats, now + 3 * MS, rule))
        .as("answered")
        .isNotEqualTo(ChannelPicker.CLOSED);
  }

  /**
   * An estimate of 20 ms set while its pool's level was 29 ms (a client slowing every answer, whose
   * level sits above the mean of its answers), and the level fallen to 3 ms since: shifted down by
   * the level's whole fall it would be below nothing, 1 ns. It falls in proportion to the level
   * instead, keeping its ratio to it, as a client's slowdown scales every answer.
   */
  @Test
  void anEstimateFallsWithItsPoolsLevelInProportion() {
    PoolLevel pool = new PoolLevel();
    ChannelLatency other = new ChannelLatency(T0, pool);
    ChannelLatency measured = new ChannelLatency(T0, pool);
    long now = T0 + ChannelLatency.FORGET_HALF_LIFE_NANOS;
    other.answered(now - 30 * MS, now);
    measured.answered(now - 20 * MS, now);
    long levelAt = pool.nanos();
    assertThat(measured.estimateNanos()).isEqualTo(20 * MS);
    for (int i = 0; i < 100; i++) {
      now += MS;
      other.answered(now - 3 * MS, now);
    }
    long level = pool.nanos();
    assertThat(level).as("the level after 100 answers of 3 ms").isBetween(3 * MS, 4 * MS);
    assertThat(measured.estimateNanos())
        .as("20 ms set at a level of %d ns, the level now %d ns", levelAt, level)
        .isBetween(20 * MS * level / levelAt - 1, 20 * MS * level / levelAt + 1);
  }

  /** A channel that has answered for a while in about this time. */
  private static ChannelLatency answering(long nanos) {
    ChannelLatency latency = new ChannelLatency(T0);
    for (long now = T0 + 10 * MS; now <= T0 + 1000 * MS; now += 10 * MS) {
      latency.answered(now - nanos, now);
    }
    return latency;
  }
}
