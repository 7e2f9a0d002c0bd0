package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The picker's choice among the channels of a pool, on a clock the test sets and latencies it
 * feeds: which channels a read may go to, counted pick by pick. The rule is the default one for
 * Spanner's 100 streams per connection and the guard's margin of 10. What this decides end to end
 * (a slowed, stalled or recovered connection under load) is measured by {@code
 * LatencyAwareRoutingIT} and the benchmark's sweep and degraded workloads.
 */
class ChannelPickerTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final int CHANNELS = 8;

  private static final int PICKS = 1000;

  /** Spanner's 100 streams per connection less the stream-end guard's margin of a tenth. */
  private static final int ROOM = 90;

  private static final ChannelPicker.Rule RULE = ChannelPicker.Rule.defaults(ROOM);

  private final long now = System.nanoTime();

  private final List<Connection> channels = new ArrayList<>();

  ChannelPickerTest() {
    for (int i = 0; i < CHANNELS; i++) {
      Connection channel = new Connection(this.now);
      answer(channel, 5 * MS);
      this.channels.add(channel);
    }
  }

  /**
   * A connection serves its streams in parallel: the healthy channels' calls in flight say nothing
   * of how long the next call takes there while they have room, so a channel five times slower gets
   * none, however many calls the others carry.
   */
  @ParameterizedTest(name = "{0} calls in flight on each healthy channel")
  @ValueSource(ints = {0, 1, 4, 16, 60})
  void aChannelFiveTimesSlowerGetsNoReadWhileTheOthersHaveRoom(int inFlight) {
    answer(this.channels.get(3), 25 * MS);
    carry(inFlight, 3);
    int[] picks = pickOneAtATime();
    assertThat(picks[3])
        .as(
            "reads of %d to the channel at 25 ms, the others at 5 ms with %d in flight each: %s",
            PICKS, inFlight, Arrays.toString(picks))
        .isZero();
    for (int i = 0; i < CHANNELS; i++) {
      if (i != 3) {
        assertThat(picks[i]).as("reads to healthy channel %d of %d", i, PICKS).isPositive();
      }
    }
  }

  /**
   * A sequential reader (a JDBC connection's autocommit reads) beside a connection 20 ms slower:
   * the seven others share its reads alike. A tie broken by the first equal met from a random start
   * gave the slow connection's chances to the one after it, which took two sevenths of the reads.
   */
  @Test
  void readsOneAtATimeAreSharedAlikeByTheConnectionsLeftBesideASlowOne() {
    answer(this.channels.get(3), 25 * MS);
    int[] picks = pickOneAtATime(this.now, 7 * 1000);
    assertThat(picks[3]).as("reads to the slow connection: %s", Arrays.toString(picks)).isZero();
    // Each of the seven takes 1,000 on average, give or take 30: 1,150 is five of those above.
    assertThat(Arrays.stream(picks).max().getAsInt())
        .as("reads to the busiest of the seven: %s", Arrays.toString(picks))
        .isLessThanOrEqualTo(1150);
  }

  @Test
  void theSlowerChannelGetsTheReadsOnceTheOthersAreFull() {
    answer(this.channels.get(3), 25 * MS);
    carry(ROOM, 3);
    int[] picks = pickOneAtATime();
    assertThat(picks[3])
        .as(
            "reads to the channel at 25 ms with the others at %d in flight: %s",
            ROOM, Arrays.toString(picks))
        .isEqualTo(PICKS);
  }

  @Test
  void aChannelWithinAQuarterOfTheFastestSharesTheReads() {
    answer(this.channels.get(3), 6 * MS);
    int[] picks = pickOneAtATime();
    for (int i = 0; i < CHANNELS; i++) {
      assertThat(picks[i])
          .as(
              "reads to channel %d of %d, channel 3 answering in 6 ms: %s",
              i, PICKS, Arrays.toString(picks))
          .isPositive();
    }
  }

  @Test
  void aChannelMoreThanAQuarterSlowerGetsNoRead() {
    answer(this.channels.get(3), 7 * MS);
    int[] picks = pickOneAtATime();
    assertThat(picks[3]).as("reads to the channel answering in 7 ms, the others in 5").isZero();
  }

  /**
   * A client short of CPU adds its own queueing to every answer it times, which brings the
   * connections' estimates closer: a connection twice as slow on the server can look 1.4 times as
   * slow. Left alone, it has the fewest calls in flight, so within the band it would draw every
   * read until it carries as many as the others.
   */
  @Test
  void aChannelLeftAloneAndFortyPercentSlowerDrawsNoReadsByItsEmptiness() {
    answer(this.channels.get(3), 7 * MS);
    carry(4, 3);
    int[] picks = pickOneAtATime();
    assertThat(picks[3])
        .as(
            "reads to the channel at 7 ms with none in flight, the others at 5 ms with 4: %s",
            Arrays.toString(picks))
        .isZero();
  }

  @Test
  void amongChannelsAboutAsFastTheOneWithFewerCallsInFlightGetsTheRead() {
    carry(2, -1);
    this.channels.get(5).uncountCall();
    int[] picks = pickOneAtATime();
    assertThat(picks[5])
        .as(
            "reads to the one channel with 1 call in flight, the others with 2: %s",
            Arrays.toString(picks))
        .isEqualTo(PICKS);
  }

  @Test
  void aBurstOnEqualChannelsIsSpreadByCallsInFlight() {
    Connection[] pool = this.channels.toArray(new Connection[0]);
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 3 * CHANNELS; i++) {
      picks[picker.pick(pool, this.now)]++;
      assertThat(Arrays.stream(picks).max().getAsInt() - Arrays.stream(picks).min().getAsInt())
          .as("calls in flight per channel after %d picks: %s", i + 1, Arrays.toString(picks))
          .isLessThanOrEqualTo(1);
    }
  }

  /**
   * A channel whose estimate is lowest, by noise or because no answer has measured it yet, does not
   * draw every call: once it carries more than the rule's calm (9 calls), half again the pool's
   * mean, and one more, it is hot and the others about as fast take the calls.
   */
  @Test
  void theFastestChannelTakesNoMoreThanHalfAgainTheMeanInFlight() {
    answer(this.channels.get(3), 2 * MS);
    Connection[] pool = this.channels.toArray(new Connection[0]);
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[CHANNELS];
    for (int before = 0; before < 10 * CHANNELS; before++) {
      picks[picker.pick(pool, this.now)]++;
      // It took its last call while it carried at most its calm, or half again the mean and one
      // more.
      int carried = picks[3] - 1;
      assertThat(
              carried <= RULE.calm()
                  || (long) CHANNELS * carried <= before + Math.max(CHANNELS, before / 2))
          .as(
              "calls in flight on the channel at 2 ms, the others at 5, after %d picks: %s",
              before + 1, Arrays.toString(picks))
          .isTrue();
    }
    assertThat(picks[3]).as("the fastest channel carries more than the mean").isGreaterThan(10);
    assertThat(picks[3])
        .as("its calls in flight, past its calm: %s", Arrays.toString(picks))
        .isLessThan(10 * CHANNELS);
  }

  /**
   * A pool the dynamic pool shrank to two connections, one twice as slow as the other, and 8 calls
   * in flight: the fast connection serves them all in parallel. Half again the mean would call it
   * hot at 7 and hand the slow one a quarter of the calls; within its calm it is not hot.
   */
  @Test
  void aQuietPoolOfTwoSendsNothingToAConnectionTwiceAsSlow() {
    Connection fast = new Connection(this.now);
    Connection slow = new Connection(this.now);
    answer(fast, 12 * MS);
    answer(slow, 27 * MS);
    Connection[] pool = {fast, slow};
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[2];
    for (int i = 0; i < 8; i++) {
      picks[picker.pick(pool, this.now)]++;
    }
    assertThat(picks).as("8 calls on the connections at 12 and 27 ms").containsExactly(8, 0);
  }

  /**
   * A pool of two under load, one connection answering in 5 ms and one 20 ms later: 40 calls in
   * flight all go to the fast one, which serves them in parallel. Half again the mean would call it
   * hot at 31 and hand the slow one the rest; a connection more than four times slower than the
   * fastest takes none of a hot one's calls while the fast one has room.
   */
  @Test
  void aHotConnectionShedsNoCallToOneFarSlower() {
    Connection fast = new Connection(this.now);
    Connection slow = new Connection(this.now);
    answer(fast, 5 * MS);
    answer(slow, 25 * MS);
    Connection[] pool = {fast, slow};
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[2];
    for (int i = 0; i < 40; i++) {
      picks[picker.pick(pool, this.now)]++;
    }
    assertThat(picks).as("40 calls on the connections at 5 and 25 ms").containsExactly(40, 0);
  }

  /**
   * A dynamic pool of four connections, one twice as slow, that counts a channel full at 25 calls
   * in flight, where it adds one: the three fast connections at 25 each and the slow one at 7. Each
   * call then goes to a fast connection, up to the stream limit less the guard's margin, before the
   * slow one takes any: the frontend serves it in parallel, and the pool, seeing a channel past 25,
   * grows.
   */
  @Test
  void onADynamicPoolTheFastConnectionsGoPastTheRoomWhereItGrowsBeforeASlowOneTakesACall() {
    int[] picks = fullFastAndOneSlow(RULE.withRoomAtMost(25), 3 * (ROOM - 25) + 1);
    int past = 3 * (ROOM - 25);
    assertThat(picks)
        .as("calls kept in flight, the fast connections at 25 each and the slow one at 7")
        .containsExactly(past / 3, past / 3, past / 3, 1);
  }

  /**
   * The same on a fixed pool whose room is 25: past its room a connection's calls wait at the
   * server, so the slow connection takes the calls while it has room.
   */
  @Test
  void onAFixedPoolTheSlowConnectionTakesTheCallsWhileOnlyItHasRoom() {
    int[] picks = fullFastAndOneSlow(ChannelPicker.Rule.defaults(25), 18);
    assertThat(picks)
        .as("calls kept in flight, the fast connections at their room")
        .containsExactly(0, 0, 0, 18);
  }

  /**
   * Three connections at 100 ms carrying 25 calls each and one at 200 ms carrying 7; then {@code
   * calls} picked and kept in flight: the calls each connection took.
   */
  private int[] fullFastAndOneSlow(ChannelPicker.Rule rule, int calls) {
    Connection[] pool = new Connection[4];
    for (int i = 0; i < pool.length; i++) {
      pool[i] = new Connection(this.now);
      answer(pool[i], (i == 3) ? 200 * MS : 100 * MS);
      for (int c = 0; c < ((i == 3) ? 7 : 25); c++) {
        pool[i].countCall(this.now);
      }
    }
    ChannelPicker picker = new ChannelPicker(rule);
    int[] picks = new int[pool.length];
    for (int i = 0; i < calls; i++) {
      picks[picker.pick(pool, this.now)]++;
    }
    return picks;
  }

  @Test
  void aChannelWhoseCallFailedCarriesOneCallAtATime() {
    Connection failed = this.channels.get(6);
    failed
        .latency()
        .closed(ChannelLatency.Close.CHANNEL_FAULT, this.now - 1000 * MS, this.now, false);
    Connection[] pool = this.channels.toArray(new Connection[0]);
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 4 * CHANNELS; i++) {
      picks[picker.pick(pool, this.now + 2000 * MS)]++;
    }
    assertThat(picks[6])
        .as(
            "reads in flight on the channel whose last call failed, 2 s later: %s",
            Arrays.toString(picks))
        .isEqualTo(1);
  }

  @Test
  void aChannelSilentWithACallInFlightGetsNoRead() {
    Connection silent = new Connection(this.now);
    // It answered in 5 ms like the others until 300 ms ago; its call since then has had no answer.
    answer(silent, 5 * MS, this.now - 300 * MS);
    silent.countCall(this.now - 300 * MS);
    this.channels.set(2, silent);
    // Every other channel has a call in flight too, answered as usual: only the silence differs.
    carry(1, 2);
    int[] picks = pickOneAtATime();
    assertThat(picks[2])
        .as("reads to the channel silent for 300 ms with a call in flight")
        .isZero();
  }

  /**
   * A channel left alone because it was slow is tried again once its estimate is forgotten down to
   * within the band of the others', with one call, and only one until it answers; not sooner when
   * the others are busy.
   */
  @ParameterizedTest(name = "{0} calls in flight on each healthy channel")
  @ValueSource(ints = {0, 16})
  void aChannelLeftAloneIsTriedAgainWithOneCall(int inFlight) {
    Connection slow = this.channels.get(3);
    answer(slow, 25 * MS);
    carry(inFlight, 3);
    Connection[] pool = this.channels.toArray(new Connection[0]);
    ChannelPicker picker = new ChannelPicker(RULE);
    long triedAt = -1;
    for (long at = this.now; at < this.now + 2000 * MS; at += 10 * MS) {
      // The healthy channels answer all along: only the slow one is forgotten.
      for (Connection channel : this.channels) {
        if (channel != slow) {
          channel.latency().answered(at - 5 * MS, at);
        }
      }
      for (int i = 0; i < 10; i++) {
        int channel = picker.pick(pool, at);
        if (channel == 3 && triedAt < 0) {
          triedAt = at - this.now;
        }
        if (channel != 3) {
          this.channels.get(channel).uncountCall();
        }
      }
    }
    assertThat(slow.inFlight())
        .as("calls on the slow channel, never answered, after 2 s of picks")
        .isEqualTo(1);
    // Its 25 ms estimate comes within half again of the others' after two halvings of 250 ms.
    assertThat(triedAt / MS)
        .as("ms until the slow channel was tried again")
        .isGreaterThanOrEqualTo(500);
    if (inFlight > 0) {
      assertThat(triedAt / MS)
          .as("ms until the slow channel, the only one with room to spare, was tried again")
          .isEqualTo(500);
    }
  }

  @Test
  void aChannelThatAnswersItsTrialFastGetsReadsAgain() {
    Connection recovered = this.channels.get(3);
    answer(recovered, 25 * MS, this.now - 1000 * MS);
    Connection[] pool = this.channels.toArray(new Connection[0]);
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 4 * CHANNELS; i++) {
      picks[picker.pick(pool, this.now)]++;
    }
    assertThat(picks[3])
        .as(
            "calls in flight on the channel forgotten since it answered in 25 ms: %s",
            Arrays.toString(picks))
        .isEqualTo(1);
    recovered.latency().answered(this.now, this.now + 5 * MS);
    recovered.callClosed();
    picks = pickOneAtATime(this.now + 5 * MS);
    assertThat(picks[3])
        .as("reads to the channel that answered its trial in 5 ms: %s", Arrays.toString(picks))
        .isPositive();
  }

  /** Every healthy channel (all but {@code except}) carries this many calls. */
  /**
   * A fresh client's burst: one connection has answered (4 ms) and seven have not. The seven's
   * estimate is a guess below any real latency; taken at face value it would send them every call
   * until they are hot and keep the connection that answered first idle. Taken as about as fast as
   * the fastest, the 32 calls are spread by calls in flight, the answered connection included.
   */
  @Test
  void aConnectionThatAnsweredFirstIsNotLeftIdleForThoseThatHaveNotAnsweredYet() {
    Connection[] pool = new Connection[CHANNELS];
    for (int i = 0; i < CHANNELS; i++) {
      pool[i] = new Connection(this.now - 100 * MS);
    }
    pool[0].latency().answered(this.now - 4 * MS, this.now);
    assertThat(pool[1].latency().measured()).isFalse();
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 32; i++) {
      picks[picker.pick(pool, this.now)]++;
    }
    assertThat(picks)
        .as("32 calls held, 4 per connection: %s", Arrays.toString(picks))
        .containsOnly(4);
  }

  private void carry(int inFlight, int except) {
    for (int i = 0; i < CHANNELS; i++) {
      if (i != except) {
        for (int c = 0; c < inFlight; c++) {
          this.channels.get(i).countCall(this.now);
        }
      }
    }
  }

  private int[] pickOneAtATime() {
    return pickOneAtATime(this.now);
  }

  /** Picks one read at a time, each done before the next: nothing is in flight but what is set. */
  private int[] pickOneAtATime(long at) {
    return pickOneAtATime(at, PICKS);
  }

  private int[] pickOneAtATime(long at, int reads) {
    Connection[] pool = this.channels.toArray(new Connection[0]);
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < reads; i++) {
      int channel = picker.pick(pool, at);
      picks[channel]++;
      this.channels.get(channel).uncountCall();
    }
    return picks;
  }

  /** Enough answers of this latency, just before the test's clock, to set the estimate to it. */
  private void answer(Connection channel, long latencyNanos) {
    answer(channel, latencyNanos, this.now);
  }

  private static void answer(Connection channel, long latencyNanos, long lastAt) {
    long at = lastAt - 100 * MS;
    for (int i = 0; i < 100; i++) {
      at += MS;
      channel.latency().answered(at - latencyNanos, at);
    }
  }
}
