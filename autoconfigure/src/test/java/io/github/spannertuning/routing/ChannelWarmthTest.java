package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.routing.ChannelWarmth.Action;
import io.github.spannertuning.routing.ChannelWarmth.State;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A channel's warmth and what routing makes of it, on a fake pool of four connections, a clock the
 * test sets and events it feeds: the connection comes up, goes (a GOAWAY), the priming call answers
 * or fails. Counted picks, no timing. What this decides end to end (a tuned client on a server
 * whose connections cost time to set up and are retired) is measured by {@code WarmUpIT}.
 */
class ChannelWarmthTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final ChannelPicker.Rule RULE = ChannelPicker.Rule.defaults(90);

  private final long now = System.nanoTime();

  private final ChannelPicker picker = new ChannelPicker(RULE);

  private final Connection[] pool = new Connection[4];

  private final ChannelWarmth[] warmth = new ChannelWarmth[4];

  ChannelWarmthTest() {
    for (int i = 0; i < this.pool.length; i++) {
      this.pool[i] = new Connection(this.now);
      this.warmth[i] = new ChannelWarmth(this.pool[i]);
    }
  }

  @Test
  void aChannelIsPrimedOnceConnectedAndASessionIsKnownAndWarmOnlyWhenThePrimingCallAnswers() {
    ChannelWarmth channel = this.warmth[0];
    assertThat(channel.state()).isEqualTo(State.COLD);
    assertThat(this.pool[0].isCold()).isTrue();
    assertThat(channel.notReady(true, 9_000))
        .as("idle at the start: connect now")
        .isEqualTo(Action.CONNECT);
    assertThat(channel.ready(1_000)).as("connected, no session yet").isEqualTo(Action.NONE);
    assertThat(channel.state()).isEqualTo(State.CONNECTED);
    assertThat(this.pool[0].isCold()).as("connected but not primed").isTrue();
    assertThat(channel.sessionKnown()).isEqualTo(Action.PRIME);
    assertThat(channel.sessionKnown()).as("its priming call is in flight").isEqualTo(Action.NONE);
    assertThat(channel.primed(1_200)).isEqualTo(Action.NONE);
    assertThat(channel.state()).isEqualTo(State.WARM);
    assertThat(this.pool[0].isCold()).isFalse();
    assertThat(channel.connectedSinceMillis()).isEqualTo(1_000);
    assertThat(channel.warmSinceMillis()).isEqualTo(1_200);
    assertThat(channel.primedCount()).isEqualTo(1);
  }

  /**
   * The deterministic case: a channel whose connection got a GOAWAY takes no read until its
   * new connection is up and primed, while the three others take every read; once primed it takes
   * reads again.
   */
  @Test
  void aChannelThatGotAGoAwayTakesNoReadUntilItsNewConnectionIsPrimed() {
    warmAll();
    assertThat(picks(400)[2]).as("warm: channel 2 takes its share").isPositive();

    assertThat(this.warmth[2].notReady(true, 9_000))
        .as("GOAWAY: grpc-java leaves the channel idle; connect it now")
        .isEqualTo(Action.CONNECT);
    assertThat(picks(400)[2]).as("reads to channel 2 while it reconnects").isZero();
    assertThat(this.warmth[2].ready(5_000))
        .as("new connection up: prime it")
        .isEqualTo(Action.PRIME);
    assertThat(picks(400)[2]).as("reads to channel 2 while it is being primed").isZero();
    this.warmth[2].primed(5_100);
    assertThat(picks(400)[2]).as("reads to channel 2 once primed").isPositive();
    assertThat(this.warmth[2].connectedSinceMillis()).isEqualTo(5_000);
  }

  /** A break that grpc-java reconnects itself (TRANSIENT_FAILURE, CONNECTING) is cold as well. */
  @Test
  void aBrokenConnectionIsColdWithoutAConnectOfOurs() {
    warmAll();
    assertThat(this.warmth[1].notReady(false, 9_000)).isEqualTo(Action.NONE);
    assertThat(this.pool[1].isCold()).isTrue();
    assertThat(picks(200)[1]).isZero();
  }

  /**
   * A channel whose priming call fails is primed again, and after {@value
   * ChannelWarmth#MAX_PRIME_ATTEMPTS} attempts taken as warm: routing never keeps away from a
   * connection it cannot prime.
   */
  @Test
  void aChannelThatCannotBePrimedIsTakenAsWarmAfterItsAttempts() {
    ChannelWarmth channel = this.warmth[0];
    channel.sessionKnown();
    assertThat(channel.ready(0)).isEqualTo(Action.PRIME);
    for (int attempt = 1; attempt < ChannelWarmth.MAX_PRIME_ATTEMPTS; attempt++) {
      assertThat(channel.primeFailed(attempt))
          .as("attempt %d failed", attempt)
          .isEqualTo(Action.PRIME);
      assertThat(channel.isWarm()).isFalse();
    }
    assertThat(channel.primeFailed(10)).isEqualTo(Action.NONE);
    assertThat(channel.isWarm()).isTrue();
    assertThat(this.pool[0].isCold()).isFalse();
    assertThat(channel.failedPrimes()).isEqualTo(ChannelWarmth.MAX_PRIME_ATTEMPTS);
  }

  /**
   * A channel the dynamic pool primed itself before adding it (grpc-gcp 1.20) is warm once
   * connected, with no priming call of ours; its next connection is primed as any channel's.
   */
  @Test
  void aChannelThePoolPrimedIsWarmOnceConnectedAndPrimedByUsOnlyAfterAReconnect() {
    ChannelWarmth channel =
        new ChannelWarmth(new Connection(this.now), true, ConnectionRefresh.off());
    channel.sessionKnown();
    assertThat(channel.isWarm()).as("not connected yet").isFalse();
    assertThat(channel.ready(0)).isEqualTo(Action.NONE);
    assertThat(channel.isWarm()).isTrue();
    assertThat(channel.notReady(true, 9_000)).isEqualTo(Action.CONNECT);
    assertThat(channel.ready(10)).as("its next connection").isEqualTo(Action.PRIME);
  }

  /** A priming call that answers after its connection went leaves the channel cold. */
  @Test
  void aPrimingCallThatAnswersAfterItsConnectionWentDoesNotWarmTheChannel() {
    ChannelWarmth channel = this.warmth[0];
    channel.sessionKnown();
    channel.ready(0);
    channel.notReady(true, 9_000);
    channel.primed(50);
    assertThat(channel.isWarm()).isFalse();
    assertThat(this.pool[0].isCold()).isTrue();
    assertThat(channel.ready(100)).as("the new connection is primed").isEqualTo(Action.PRIME);
  }

  /**
   * While no channel is warm (a client's first reads, before its warm-up is done), reads still go
   * out, spread by calls in flight. A warm channel takes reads up to its room (the server's stream
   * limit, or the calls past which a dynamic pool adds a channel) before a cold one takes any, and
   * a cold one takes the next before the warm one goes past it.
   */
  @Test
  void withNoWarmChannelReadsSpreadAndAColdOneComesBeforeAWarmOnePastItsRoom() {
    int[] cold = new int[4];
    for (int i = 0; i < 8; i++) {
      cold[this.picker.pick(this.pool, this.now)]++;
    }
    assertThat(cold)
        .as("8 reads while all four are cold: %s", Arrays.toString(cold))
        .containsOnly(2);

    for (Connection connection : this.pool) {
      connection.callClosed();
      connection.callClosed();
    }
    warm(0);
    for (int i = 0; i < RULE.room() - 1; i++) {
      assertThat(this.picker.pick(this.pool, this.now))
          .as("read %d: channel 0 warm, the others cold", i)
          .isZero();
    }
    assertThat(this.picker.pick(this.pool, this.now))
        .as("channel 0 warm with one below its room, the others cold")
        .isZero();
    assertThat(this.picker.pick(this.pool, this.now))
        .as("channel 0 warm at its room, the others cold")
        .isNotZero();
  }

  /**
   * A burst of 120 reads, none answered yet, when one channel has just been primed and the other
   * three are up and still being primed (a cold burst right after the start; the JDBC driver's
   * first reads): the warm channel takes at most a quarter above the mean of the three channels up,
   * not the burst up to its room (90, three quarters of the burst), and every channel being primed
   * takes a share. A channel that is not connected yet takes none while those have room.
   */
  @Test
  void aBurstIsSpreadOverChannelsBeingPrimedNotTakenByTheOneWarmFirst() {
    for (ChannelWarmth channel : this.warmth) {
      channel.sessionKnown();
    }
    warm(0);
    this.warmth[1].ready(0);
    this.warmth[2].ready(0);
    assertThat(this.pool[1].isPriming()).isTrue();
    assertThat(this.pool[3].isPriming()).as("not connected").isFalse();

    int[] burst = new int[4];
    for (int i = 0; i < 120; i++) {
      burst[this.picker.pick(this.pool, this.now)]++;
    }

    assertThat(burst[0])
        .as("the warm channel's reads of 120, over 3 channels up: %s", Arrays.toString(burst))
        .isLessThanOrEqualTo(120 / 3 * 5 / 4);
    assertThat(burst[1]).as("being primed: %s", Arrays.toString(burst)).isPositive();
    assertThat(burst[2]).as("being primed: %s", Arrays.toString(burst)).isPositive();
    assertThat(burst[3]).as("not connected: %s", Arrays.toString(burst)).isZero();
  }

  /**
   * The server retires one connection of a warm pool under load; its channel reconnects, and its
   * new connection is being primed while the frontend sets it up (100 ms in the dynamic pool's
   * check, where reads sent there waited for it). The three warm connections each carry a call and
   * are in doubt (they joined the pool and have not answered yet): the one being primed, with no
   * call in flight, would be the least busy, but takes no call while a warm one has room. Nor does
   * it take what hot warm connections shed, as it would while the pool was starting.
   */
  @Test
  void aConnectionPrimedAgainAfterTheServerRetiredItTakesNoCallWhileWarmOnesHaveRoom() {
    warmAll();
    this.warmth[2].notReady(true, 9_000);
    this.warmth[2].ready(9_010);
    assertThat(this.pool[2].isPriming()).isTrue();
    for (int i : new int[] {0, 1, 3}) {
      this.pool[i].latency().joined(5 * MS, this.now);
      this.pool[i].countCall(this.now);
    }

    int[] burst = new int[4];
    for (int i = 0; i < 60; i++) {
      burst[this.picker.pick(this.pool, this.now)]++;
    }

    assertThat(burst[2])
        .as("calls on the connection being primed again: %s", Arrays.toString(burst))
        .isZero();
    assertThat(burst[0] + burst[1] + burst[3]).isEqualTo(60);
  }

  private void warmAll() {
    for (int i = 0; i < this.pool.length; i++) {
      warm(i);
      answer(this.pool[i], 5 * MS);
    }
  }

  private void warm(int i) {
    this.warmth[i].sessionKnown();
    this.warmth[i].ready(0);
    this.warmth[i].primed(0);
  }

  private void answer(Connection connection, long latency) {
    connection.countCall(this.now);
    connection.latency().answered(this.now, this.now + latency);
    connection.callClosed();
  }

  /** Picks {@code n} reads, each answered before the next: where each went. */
  private int[] picks(int n) {
    int[] picks = new int[this.pool.length];
    for (int i = 0; i < n; i++) {
      int channel = this.picker.pick(this.pool, this.now);
      picks[channel]++;
      this.pool[channel].callClosed();
    }
    return picks;
  }
}
