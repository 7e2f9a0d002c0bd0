package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.testing.GuardLine;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The guard where the client sends no cancel after {@code last} itself (google-cloud-spanner
 * 6.125+: the state is native, and the close never reaches the guard): it acts when the consumer is
 * handed the message marked {@code last}. Callback orders one at a time, as {@link
 * GuardedStreamTest} does for the guard that acts at the close; the state is set up native,
 * whatever line this runs on.
 */
class GuardedStreamAtLastTest extends GuardedStreamTests {

  @Override
  FeatureState guard() {
    return FeatureStates.streamEndGuard(true, null, true);
  }

  @Test
  void aFinishedStreamOnAFullConnectionIsCancelledAtOnceAfterTheConsumerHasItsLastMessage() {
    // 10 streams per connection, a tenth kept free: a finished stream drains while at most 9
    // calls, its own included, are in flight on its channel.
    SpannerTuningState state = state(Duration.ofSeconds(5), 10);
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    for (int i = 0; i < 9; i++) {
      finishedAtLast(state, channel);
    }
    assertThat(this.call.cancels).as("9 in flight: each drains").isEmpty();
    assertThat(channel.drainingStreams()).isEqualTo(9);

    GuardedStream tenth = finishedAtLast(state, channel);
    assertThat(this.call.cancels).hasSize(1);
    assertThat(this.call.cancels.get(0)).contains("no stream slot to spare");
    assertThat(state.streamEndGuardCancelledAtLimitCount()).isEqualTo(1);
    assertThat(channel.drainingStreams()).isEqualTo(9);
    // The client reads its last message, asks for one more and closes: nothing more reaches the
    // cancelled call, and gax's report of the cancel does not reach the consumer.
    tenth.request(1);
    tenth.cancel("closed");
    tenth.onError(cancelled());
    assertThat(this.call.requests).isEmpty();
    assertThat(this.call.cancels).hasSize(1);
    assertThat(this.consumer.events).endsWith("row last").doesNotContain("error CANCELLED");
    assertThat(state.streamEndGuardSkippedCount()).isZero();
  }

  @Test
  void pastTheConnectionsResetBudgetAFinishedStreamDrainsAsItDoesStock() {
    // 2 streams per connection, none kept free (the margin is a tenth, rounded down): a finished
    // stream is released while more than 2 are in flight; 3 releases per window at most.
    SpannerTuningState state =
        state(
            SpannerTuning.newBuilder()
                .streamEndGuardMaxConcurrentStreams(2)
                .streamEndGuardReleaseBudget(3, Duration.ofHours(1)));
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    channel.connection().countCall(System.nanoTime());
    channel.connection().countCall(System.nanoTime());
    for (int i = 0; i < 5; i++) {
      finishedAtLast(state, channel);
    }
    assertThat(this.call.cancels).as("released within the budget").hasSize(3);
    assertThat(state.streamEndGuardCancelledAtLimitCount()).isEqualTo(3);
    assertThat(channel.drainingStreams()).as("past it, drained").isEqualTo(2);
    ChannelLoad.ChannelStats other = new ChannelLoad.ChannelStats(1);
    other.connection().countCall(System.nanoTime());
    other.connection().countCall(System.nanoTime());
    finishedAtLast(state, other);
    assertThat(this.call.cancels).as("each connection has its own budget").hasSize(4);
  }

  @Test
  void withSlotsToSpareAFinishedStreamDrainsAndItsTrailersEndTheDrain() {
    SpannerTuningState state = state(Duration.ofSeconds(5), 10);
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    GuardedStream stream = countedOn(state, channel);
    stream.onPartialResultSet(ROW);
    stream.request(1);
    stream.onPartialResultSet(LAST_ROW);
    assertThat(this.consumer.events).containsExactly("row", "row last");
    assertThat(channel.drainingStreams()).isEqualTo(1);
    assertThat(this.call.requests).containsExactly(1);

    stream.request(1);
    stream.transportClosedOk();
    stream.onCompleted();
    assertThat(this.call.requests).as("none after last").containsExactly(1);
    assertThat(this.call.cancels).isEmpty();
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardDrainedCount()).isEqualTo(1);
    assertThat(state.streamEndGuardSkippedCount())
        .as("the client sent no cancel to skip: the skip is its own")
        .isZero();
  }

  @Test
  void aFinishedStreamWhoseTrailersNeverComeIsCancelledAfterTheDrainTimeout() throws Exception {
    SpannerTuningState state = state(Duration.ofMillis(100), 10);
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    GuardedStream stream = countedOn(state, channel);
    long finishedAt = System.nanoTime();
    stream.onPartialResultSet(LAST_ROW);
    assertThat(this.call.cancelled.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(System.nanoTime() - finishedAt)
        .isGreaterThanOrEqualTo(Duration.ofMillis(100).toNanos());
    assertThat(this.call.cancelThreads).containsExactly("spanner-tuning-timer");
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardDrainTimeoutCount()).isEqualTo(1);
    assertThat(state.streamEndGuardDrainedCount()).isZero();
    stream.onError(cancelled());
    assertThat(this.consumer.events).containsExactly("row last");
  }

  @Test
  void switchedOffTheGuardLeavesAFinishedStreamToTheClient() {
    SpannerTuningState state = state(Duration.ofSeconds(5), 10);
    state.setEnabled(Feature.STREAM_END_GUARD, false);
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(FeatureState.Status.OFF);
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    for (int i = 0; i < 10; i++) {
      finishedAtLast(state, channel);
    }
    assertThat(this.call.cancels).isEmpty();
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardCancelledAtLimitCount()).isZero();

    state.setEnabled(Feature.STREAM_END_GUARD, true);
    assertThat(state.feature(Feature.STREAM_END_GUARD).status())
        .as("back on, the guard is as this client line makes it")
        .isEqualTo(GuardLine.expected());
  }

  /** A stream counted in flight on the channel that delivers its last message. */
  private GuardedStream finishedAtLast(SpannerTuningState state, ChannelLoad.ChannelStats channel) {
    GuardedStream stream = countedOn(state, channel);
    stream.onPartialResultSet(LAST_ROW);
    return stream;
  }
}
