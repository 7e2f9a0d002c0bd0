package io.github.spannertuning.compat;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.MethodDescriptor;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the cancels that reach gRPC from the Spanner client, so that a test can see what the
 * stream-end guard really changed on this client line.
 */
public class CancelCounter implements ClientInterceptor {

  private final AtomicLong cancels = new AtomicLong();

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
    return new SimpleForwardingClientCall<>(next.newCall(method, options)) {
      @Override
      public void cancel(String message, Throwable cause) {
        cancels.incrementAndGet();
        super.cancel(message, cause);
      }
    };
  }

  public long cancels() {
    return this.cancels.get();
  }
}
