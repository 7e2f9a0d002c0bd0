package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.routing.ChannelWarmth.Action;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Which channel's connection is refreshed before the server retires it, and when: a fake pool of
 * four channels, a clock the test sets, the jitter each connection draws fed by the test, and the
 * connection events the test feeds (up, primed, lost). No timer, no timing. What the refresh does
 * end to end (a tuned client on a server that retires connections) is measured by {@code WarmUpIT}.
 */
class ConnectionRefreshTest {

  private static final ChannelPicker.Rule RULE = ChannelPicker.Rule.defaults(90);

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private final long now = System.nanoTime();

  private final Connection[] pool = new Connection[4];

  private final List<ChannelWarmth> warmth = new ArrayList<>();

  /** Jitter draws of 0: each connection is due exactly at the age. */
  private ConnectionRefresh refresh = pool(ConnectionRefresh.learned(() -> 0));

  /**
   * Until the server has retired a connection, its age is taken as an hour (Google's frontends):
   * channels a client connected together at its start are refreshed one at a time from 45 minutes,
   * not retired together at the hour.
   */
  @Test
  void learnedBeforeAnyRetirementTheAgeIsAnHour() {
    connectAll(0);
    assertThat(this.refresh.afterMillis()).isEqualTo(45 * 60_000);
    assertThat(this.refresh.next(this.warmth, 45 * 60_000 - 1)).isNull();
    ChannelWarmth first = this.refresh.next(this.warmth, 45 * 60_000);
    assertThat(first).isNotNull();
    first.refresh();
    assertThat(this.refresh.next(this.warmth, 45 * 60_000)).as("one at a time").isNull();
    assertThat(this.refresh.checkEveryMillis()).as("learning: a check a second").isEqualTo(1_000);
  }

  /**
   * The server retired channel 0's connection after 3 s: each connection is due at three quarters
   * of it (2,250 ms) after it connected. Channel 0 is cold until primed again, so nothing else is
   * refreshed meanwhile; then the others, earliest first, one at a time.
   */
  @Test
  void learnedTheAgeFromARetirementThenOneChannelAtATimeEarliestFirst() {
    connect(0, 0);
    connect(1, 100);
    connect(2, 200);
    connect(3, 300);
    ChannelWarmth retired = this.warmth.get(0);
    assertThat(retired.notReady(true, 3_000)).isEqualTo(Action.CONNECT);
    assertThat(this.refresh.learnedMillis()).isEqualTo(3_000);
    assertThat(this.refresh.afterMillis()).isEqualTo(2_250);
    assertThat(this.refresh.checkEveryMillis()).as("a twentieth of the age").isEqualTo(112);

    assertThat(this.refresh.next(this.warmth, 3_000))
        .as("channel 1 is due (2,350 ms) but channel 0 is cold: it waits")
        .isNull();
    warm(0, 3_100);
    ChannelWarmth first = this.refresh.next(this.warmth, 3_100);
    assertThat(first).isSameAs(this.warmth.get(1));
    assertThat(first.refresh()).isEqualTo(Action.REFRESH);
    assertThat(this.pool[1].isCold()).as("refreshed: cold until primed").isTrue();
    assertThat(this.refresh.next(this.warmth, 3_100)).as("one at a time").isNull();

    assertThat(first.notReady(true, 3_101))
        .as("its connection let go: connect again")
        .isEqualTo(Action.CONNECT);
    assertThat(this.refresh.learnedMillis())
        .as("a connection the refresh ended teaches nothing")
        .isEqualTo(3_000);
    warm(1, 3_200);
    assertThat(this.refresh.next(this.warmth, 3_200)).isSameAs(this.warmth.get(2));
  }

  /** The longest age the server retired a connection at is learned; breaks under 1 s are not. */
  @Test
  void theLongestRetirementIsLearnedAndABreakTeachesNothing() {
    connectAll(0);
    this.warmth.get(0).notReady(false, 400);
    assertThat(this.refresh.learnedMillis()).as("a break at 400 ms").isEqualTo(-1);
    this.warmth.get(1).notReady(true, 3_300);
    this.warmth.get(2).notReady(true, 2_800);
    assertThat(this.refresh.learnedMillis()).isEqualTo(3_300);
  }

  /**
   * Channels connected together draw their jitter: each is due up to a tenth of the age early, so
   * they do not refresh together.
   */
  @Test
  void channelsConnectedTogetherAreDueAtTimesTheirJitterSpreads() {
    double[] draws = {0, 1, 0.5, 0.25, 0};
    int[] draw = {0};
    this.refresh = pool(ConnectionRefresh.after(Duration.ofSeconds(10), () -> draws[draw[0]++]));
    connectAll(0);
    assertThat(this.refresh.next(this.warmth, 8_999)).isNull();
    assertThat(this.refresh.next(this.warmth, 9_000)).isSameAs(this.warmth.get(1));
    this.warmth.get(1).refresh();
    warm(1, 9_100);
    assertThat(this.refresh.next(this.warmth, 9_400)).isNull();
    assertThat(this.refresh.next(this.warmth, 9_500)).isSameAs(this.warmth.get(2));
  }

  @Test
  void aPoolOfOneChannelIsNeverRefreshedNorIsOneWhenRefreshIsOff() {
    ConnectionRefresh fixed = ConnectionRefresh.after(Duration.ofSeconds(1), () -> 0);
    ChannelWarmth only = new ChannelWarmth(new Connection(this.now), false, fixed);
    only.sessionKnown();
    only.ready(0);
    only.primed(0);
    assertThat(fixed.next(List.of(only), 60_000)).as("no other channel to take the reads").isNull();

    this.refresh = pool(ConnectionRefresh.off());
    connectAll(0);
    this.warmth.get(0).notReady(true, 3_000);
    warm(0, 3_100);
    assertThat(this.refresh.next(this.warmth, 3_600_000)).isNull();
    assertThat(this.refresh.checkEveryMillis()).isEqualTo(-1);
  }

  /**
   * While a refreshed channel reconnects, routing sends it no read and the three others take them
   * all; primed again, it takes its share.
   */
  @Test
  void aRefreshedChannelTakesNoReadUntilItsNewConnectionIsPrimed() {
    ChannelPicker picker = new ChannelPicker(RULE);
    this.refresh = pool(ConnectionRefresh.after(Duration.ofSeconds(2), () -> 0));
    connectAll(0);
    for (Connection connection : this.pool) {
      connection.countCall(this.now);
      connection.latency().answered(this.now, this.now + 5 * MS);
      connection.callClosed();
    }
    ChannelWarmth due = this.refresh.next(this.warmth, 2_000);
    assertThat(due).isSameAs(this.warmth.get(0));
    due.refresh();
    assertThat(picks(picker, 400)[0]).isZero();
    due.notReady(true, 2_001);
    due.ready(2_100);
    assertThat(picks(picker, 400)[0]).as("connected, not primed").isZero();
    due.primed(2_150);
    assertThat(picks(picker, 400)[0]).isPositive();
  }

  private ConnectionRefresh pool(ConnectionRefresh refresh) {
    this.warmth.clear();
    for (int i = 0; i < this.pool.length; i++) {
      this.pool[i] = new Connection(this.now);
      this.warmth.add(new ChannelWarmth(this.pool[i], false, refresh));
    }
    return refresh;
  }

  private void connectAll(long atMillis) {
    for (int i = 0; i < this.pool.length; i++) {
      connect(i, atMillis);
    }
  }

  private void connect(int channel, long atMillis) {
    ChannelWarmth warmth = this.warmth.get(channel);
    warmth.sessionKnown();
    warm(channel, atMillis);
  }

  private void warm(int channel, long atMillis) {
    ChannelWarmth warmth = this.warmth.get(channel);
    warmth.ready(atMillis);
    warmth.primed(atMillis);
  }

  private int[] picks(ChannelPicker picker, int n) {
    int[] picks = new int[this.pool.length];
    for (int i = 0; i < n; i++) {
      int channel = picker.pick(this.pool, this.now);
      picks[channel]++;
      this.pool[channel].callClosed();
    }
    return picks;
  }
}
