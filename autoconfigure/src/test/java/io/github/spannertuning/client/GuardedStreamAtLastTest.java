package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerExceptionFactory;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.protobuf.ByteString;
import com.google.spanner.v1.PartialResultSet;
import io.github.spannertuning.testing.GuardLine;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The guard where the client sends no cancel after {@code last} itself (google-cloud-spanner
 * 6.125+: the state is native, and the close never reaches the guard): it acts when the consumer is
 * handed the message marked {@code last}. Callback orders one at a time, as {@link
 * GuardedStreamTest} does for the guard that acts at the close; the state is set up native,
 * whatever line this runs on.
 */
class GuardedStreamAtLastTest {

  private static final PartialResultSet ROW =
      PartialResultSet.newBuilder().setResumeToken(ByteString.copyFromUtf8("1")).build();

  private static final PartialResultSet LAST_ROW = ROW.toBuilder().setLast(true).build();

  private final RecordingConsumer consumer = new RecordingConsumer();

  private final RecordingCall call = new RecordingCall();

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
    GuardedStream stream = started(state, channel);
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
    GuardedStream stream = started(state, channel);
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
    GuardedStream stream = started(state, channel);
    stream.onPartialResultSet(LAST_ROW);
    return stream;
  }

  private GuardedStream started(SpannerTuningState state, ChannelLoad.ChannelStats channel) {
    channel.connection().countCall(System.nanoTime());
    GuardedStream stream = new GuardedStream(this.consumer, state);
    assertThat(stream.linkTransport()).isTrue();
    stream.onChannel(channel);
    stream.attach(this.call);
    return stream;
  }

  /** A client whose guard is native: it drops its call at last, spanner-tuning adds the rest. */
  private static SpannerTuningState state(Duration drainTimeout, int maxConcurrentStreams) {
    return state(
        SpannerTuning.newBuilder()
            .streamEndGuardDrainTimeout(drainTimeout)
            .streamEndGuardMaxConcurrentStreams(maxConcurrentStreams));
  }

  private static SpannerTuningState state(SpannerTuning.Builder builder) {
    SpannerTuning tuning = builder.build();
    SpannerTuningState state =
        TestStates.withGuard(tuning, FeatureStates.streamEndGuard(true, null, true));
    assertThat(state.isActive(Feature.STREAM_END_GUARD)).isTrue();
    assertThat(state.guardFinishesAtLast()).isTrue();
    return state;
  }

  private static SpannerException cancelled() {
    return SpannerExceptionFactory.newSpannerException(ErrorCode.CANCELLED, "cancelled");
  }

  private static final class RecordingConsumer implements ResultStreamConsumer {

    final List<String> events = new CopyOnWriteArrayList<>();

    @Override
    public void onPartialResultSet(PartialResultSet results) {
      this.events.add(results.getLast() ? "row last" : "row");
    }

    @Override
    public void onCompleted() {
      this.events.add("completed");
    }

    @Override
    public void onError(SpannerException e) {
      this.events.add("error " + e.getErrorCode());
    }

    @Override
    public boolean cancelQueryWhenClientIsClosed() {
      return false;
    }
  }

  private static final class RecordingCall implements StreamingCall {

    final List<String> cancels = new CopyOnWriteArrayList<>();

    final List<String> cancelThreads = new CopyOnWriteArrayList<>();

    final List<Integer> requests = new CopyOnWriteArrayList<>();

    final CountDownLatch cancelled = new CountDownLatch(1);

    @Override
    public ApiCallContext getCallContext() {
      return null;
    }

    @Override
    public void request(int numMessages) {
      this.requests.add(numMessages);
    }

    @Override
    public void cancel(String message) {
      this.cancels.add(message);
      this.cancelThreads.add(Thread.currentThread().getName());
      this.cancelled.countDown();
    }
  }
}
