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
import io.github.spannertuning.pool.ChannelLoad;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/**
 * The set-up of the guard's tests, one callback order at a time: a recording consumer and call in
 * place of the client's, and a client state whose guard is on or native as the test class needs.
 */
abstract class GuardedStreamTests {

  static final PartialResultSet ROW =
      PartialResultSet.newBuilder().setResumeToken(ByteString.copyFromUtf8("1")).build();

  static final PartialResultSet LAST_ROW = ROW.toBuilder().setLast(true).build();

  final RecordingConsumer consumer = new RecordingConsumer();

  final RecordingCall call = new RecordingCall();

  /** The guard's state on the client the test class studies: on, or native from 6.125. */
  abstract FeatureState guard();

  SpannerTuningState state(Duration drainTimeout) {
    return state(drainTimeout, SpannerTuning.DEFAULT_MAX_CONCURRENT_STREAMS);
  }

  SpannerTuningState state(Duration drainTimeout, int maxConcurrentStreams) {
    return state(
        SpannerTuning.newBuilder()
            .streamEndGuardDrainTimeout(drainTimeout)
            .streamEndGuardMaxConcurrentStreams(maxConcurrentStreams));
  }

  SpannerTuningState state(SpannerTuning.Builder builder) {
    SpannerTuningState state = TestStates.withGuard(builder.build(), guard());
    assertThat(state.isActive(Feature.STREAM_END_GUARD)).isTrue();
    return state;
  }

  /** A stream on its call, its sub-channel not known. */
  GuardedStream start(SpannerTuningState state) {
    GuardedStream stream = new GuardedStream(this.consumer, state);
    stream.attach(this.call);
    return stream;
  }

  /** A stream whose first call was made on {@code channel}. */
  GuardedStream startOn(SpannerTuningState state, ChannelLoad.ChannelStats channel) {
    GuardedStream stream = new GuardedStream(this.consumer, state);
    assertThat(stream.linkTransport()).isTrue();
    stream.onChannel(channel);
    stream.attach(this.call);
    return stream;
  }

  /** As {@link #startOn}, the call counted in flight on the channel. */
  GuardedStream countedOn(SpannerTuningState state, ChannelLoad.ChannelStats channel) {
    channel.connection().countCall(System.nanoTime());
    return startOn(state, channel);
  }

  static SpannerException cancelled() {
    return SpannerExceptionFactory.newSpannerException(ErrorCode.CANCELLED, "cancelled");
  }

  static final class RecordingConsumer implements ResultStreamConsumer {

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

  static final class RecordingCall implements StreamingCall {

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
