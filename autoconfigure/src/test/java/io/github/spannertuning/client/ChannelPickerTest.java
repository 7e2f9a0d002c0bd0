package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The picker's choice among the channels of a pool, on a clock the test sets and latencies it
 * feeds: which channels a read may go to, counted pick by pick. What this decides end to end (a
 * slowed, stalled or recovered connection under load) is measured by the benchmark's degraded,
 * stalled and recovered workloads.
 */
class ChannelPickerTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final int CHANNELS = 8;

  private static final int PICKS = 1000;

  private final long now = System.nanoTime();

  private final List<ChannelStats> channels = new ArrayList<>();

  ChannelPickerTest() {
    for (int i = 0; i < CHANNELS; i++) {
      ChannelStats channel = new ChannelStats(i);
      answer(channel, 3 * MS);
      this.channels.add(channel);
    }
  }

  @Test
  void aChannelExpectedToTakeMoreThanHalfAgainTheLeastGetsNoRead() {
    answer(this.channels.get(3), 5 * MS);
    int[] picks = pickOneAtATime();
    assertThat(picks[3]).as("reads to the channel answering in 5 ms, the others in 3").isZero();
    for (int i = 0; i < CHANNELS; i++) {
      if (i != 3) {
        assertThat(picks[i]).as("reads to channel %d of %d", i, PICKS).isPositive();
      }
    }
  }

  @Test
  void aChannelWithinHalfAgainOfTheLeastSharesTheReads() {
    answer(this.channels.get(3), 4 * MS);
    int[] picks = pickOneAtATime();
    for (int i = 0; i < CHANNELS; i++) {
      assertThat(picks[i])
          .as("reads to channel %d of %d, channel 3 answering in 4 ms", i, PICKS)
          .isPositive();
    }
  }

  @Test
  void callsInFlightCountAgainstTheirChannel() {
    ChannelStats busy = this.channels.get(5);
    busy.countCall(this.now);
    int[] picks = pickOneAtATime();
    assertThat(picks[5]).as("reads to the channel with a call in flight").isZero();
  }

  @Test
  void concurrentReadsOnEqualChannelsSpreadWithinTheBand() {
    ChannelPicker picker = ChannelPicker.over(this.channels);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 3 * CHANNELS; i++) {
      picks[picker.pick(this.now)]++;
      // A channel is picked only while its calls in flight, this one included, are within half
      // again of the least busy channel's plus one.
      int least = Arrays.stream(picks).min().getAsInt();
      assertThat(Arrays.stream(picks).max().getAsInt())
          .as("calls in flight per channel after %d picks: %s", i + 1, Arrays.toString(picks))
          .isLessThanOrEqualTo((3 * (least + 1)) / 2);
    }
    assertThat(picks)
        .as("24 reads in flight at once on 8 equal channels: %s", Arrays.toString(picks))
        .containsAnyOf(2, 3, 4)
        .doesNotContain(0, 1);
  }

  @Test
  void aChannelWhoseCallFailedCarriesOneCallAtATime() {
    ChannelStats failed = this.channels.get(6);
    failed.latency().closed(Status.Code.DEADLINE_EXCEEDED, this.now - 1000 * MS, this.now, false);
    ChannelPicker picker = ChannelPicker.over(this.channels);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 4 * CHANNELS; i++) {
      picks[picker.pick(this.now)]++;
    }
    assertThat(picks[6])
        .as("reads in flight on the channel whose last call failed")
        .isLessThanOrEqualTo(1);
  }

  @Test
  void aChannelSilentWithACallInFlightGetsNoRead() {
    ChannelStats silent = new ChannelStats(2);
    // It answered in 3 ms like the others until 300 ms ago; its call since then has had no answer.
    answer(silent, 3 * MS, this.now - 300 * MS);
    silent.countCall(this.now - 300 * MS);
    this.channels.set(2, silent);
    // Every other channel has a call in flight too, answered as usual: only the silence differs.
    for (ChannelStats channel : this.channels) {
      if (channel != silent) {
        channel.countCall(this.now);
      }
    }
    int[] picks = pickOneAtATime();
    assertThat(picks[2])
        .as("reads to the channel silent for 300 ms with a call in flight")
        .isZero();
  }

  /** Picks one read at a time, each done before the next: nothing is in flight but what is set. */
  private int[] pickOneAtATime() {
    ChannelPicker picker = ChannelPicker.over(this.channels);
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < PICKS; i++) {
      int channel = picker.pick(this.now);
      picks[channel]++;
      this.channels.get(channel).uncountCall();
    }
    return picks;
  }

  /** Enough answers of this latency, just before the test's clock, to set the estimate to it. */
  private void answer(ChannelStats channel, long latencyNanos) {
    answer(channel, latencyNanos, this.now);
  }

  private static void answer(ChannelStats channel, long latencyNanos, long lastAt) {
    long at = lastAt - 100 * MS;
    for (int i = 0; i < 100; i++) {
      at += MS;
      channel.latency().answered(at - latencyNanos, at);
    }
  }
}
