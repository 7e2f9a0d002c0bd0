package io.github.spannertuning.client;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.spanner.v1.PartialResultSet;

/**
 * Sits between a streaming call and the client's consumer of it, and drops a cancel of a stream
 * whose end the consumer has already been told of.
 *
 * <p>The client cancels every stream it closes before reading its end-of-stream marker: a point
 * select that reads one row and closes cancels a call whose trailers have usually arrived. That
 * cancel is not free: gax builds about six {@code CancellationException}s, grpc-gcp may unbind the
 * call's affinity key, and Netty queues a task to reset a stream that is gone. Skipping it at this
 * level removes all of that. A cancel of a stream that has not finished always goes through.
 */
final class GuardedStream implements ResultStreamConsumer, StreamingCall {

  private final ResultStreamConsumer consumer;

  private final SpannerTuningState state;

  private volatile boolean finished;

  private StreamingCall call;

  GuardedStream(ResultStreamConsumer consumer, SpannerTuningState state) {
    this.consumer = consumer;
    this.state = state;
  }

  StreamingCall attach(StreamingCall call) {
    this.call = call;
    return this;
  }

  @Override
  public void onPartialResultSet(PartialResultSet results) {
    this.consumer.onPartialResultSet(results);
  }

  @Override
  public void onCompleted() {
    this.finished = true;
    this.consumer.onCompleted();
  }

  @Override
  public void onError(SpannerException e) {
    this.finished = true;
    this.consumer.onError(e);
  }

  @Override
  public boolean cancelQueryWhenClientIsClosed() {
    return this.consumer.cancelQueryWhenClientIsClosed();
  }

  @Override
  public ApiCallContext getCallContext() {
    return this.call.getCallContext();
  }

  @Override
  public void request(int numMessages) {
    this.call.request(numMessages);
  }

  @Override
  public void cancel(String message) {
    if (this.finished && this.state.isActive(Feature.STREAM_END_GUARD)) {
      this.state.streamEndGuardSkipped();
      return;
    }
    this.call.cancel(message);
  }
}
