package io.github.spannertuning.client;

import com.google.api.core.ApiFutureCallback;
import com.google.api.gax.rpc.ApiException;
import com.google.cloud.spanner.SpannerException;
import io.grpc.Status;
import java.util.concurrent.CancellationException;

/** Ends an asynchronous call's operation when its future completes. */
final class OperationEnd<T> implements ApiFutureCallback<T> {

  private final CallObserver.Call operation;

  OperationEnd(CallObserver.Call operation) {
    this.operation = operation;
  }

  @Override
  public void onSuccess(T result) {
    this.operation.stop(CallObserver.NO_ERROR);
  }

  @Override
  public void onFailure(Throwable error) {
    this.operation.stop(errorType(error));
  }

  /** The name of the gRPC status code an exception of the client or gax carries. */
  static String errorType(Throwable error) {
    if (error instanceof SpannerException spanner) {
      return spanner.getErrorCode().name();
    }
    if (error instanceof ApiException api) {
      return api.getStatusCode().getCode().name();
    }
    if (error instanceof CancellationException) {
      return Status.Code.CANCELLED.name();
    }
    return Status.fromThrowable(error).getCode().name();
  }
}
