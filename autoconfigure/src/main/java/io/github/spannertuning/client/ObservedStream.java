package io.github.spannertuning.client;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.spanner.v1.PartialResultSet;
import java.util.function.Supplier;

/**
 * A streaming query or read as one operation: timed from the call to its message marked {@code
 * last}, its end, its error or its cancel, whichever comes first. An error the client resumes the
 * stream after ({@link ResumedStreams#mayResume}) leaves the operation open for the stream's next
 * attempt, which the client makes with the same request id.
 */
final class ObservedStream implements ResultStreamConsumer, StreamingCall {

  private final ResultStreamConsumer consumer;

  private final CallObserver.Call operation;

  private final Object requestId;

  private final ResumedStreams resumed;

  private volatile StreamingCall call;

  ObservedStream(
      ResultStreamConsumer consumer,
      CallObserver.Call operation,
      Object requestId,
      ResumedStreams resumed) {
    this.consumer = consumer;
    this.operation = operation;
    this.requestId = requestId;
    this.resumed = resumed;
  }

  /** Makes the stream's call; returns this stream, the call the client is handed. */
  StreamingCall start(Supplier<StreamingCall> start) {
    try {
      this.call = start.get();
    } catch (RuntimeException ex) {
      this.operation.stop(OperationEnd.errorType(ex));
      throw ex;
    }
    return this;
  }

  @Override
  public void onPartialResultSet(PartialResultSet results) {
    if (results.getLast()) {
      // The rows are all there: the application stops waiting here, whenever the trailers come.
      this.operation.stop(CallObserver.NO_ERROR);
    }
    this.consumer.onPartialResultSet(results);
  }

  @Override
  public void onCompleted() {
    this.operation.stop(CallObserver.NO_ERROR);
    this.consumer.onCompleted();
  }

  @Override
  public void onError(SpannerException error) {
    ErrorCode code = error.getErrorCode();
    if (this.requestId == null
        || !ResumedStreams.mayResume(code)
        || !this.resumed.park(this.requestId, this.operation, code.name())) {
      this.operation.stop(code.name());
    }
    this.consumer.onError(error);
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
    if (!this.resumed.endParked(this.requestId)) {
      this.operation.stop("CANCELLED");
    }
    this.call.cancel(message);
  }
}
