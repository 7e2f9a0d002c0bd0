package io.github.spannertuning.client;

import com.google.spanner.v1.PartialResultSet;
import io.github.spannertuning.pool.ChannelReservation;
import io.github.spannertuning.pool.StreamLink;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts, below grpc-gcp, the {@link ClientCall#cancel} calls reaching gRPC, the streams whose
 * message marked {@code last} reached the client, and (for a caller that says when it begins to
 * close) cancels of calls whose listener had been told the call closed before that.
 *
 * <p>A close is the closing thread's own: the call it checks is the last stream that thread
 * started, as the client starts a stream's first call on the thread that reads it. The last stream
 * of any thread would be another thread's, whose close may have begun, and cancelled an open call,
 * before its trailers came: that cancel can reach gRPC after them, and would count as a cancel of a
 * call that had closed before its close.
 */
final class CancelCounter implements ClientInterceptor {

  private final AtomicInteger cancels = new AtomicInteger();

  private final AtomicInteger lastReceived = new AtomicInteger();

  private final AtomicInteger endedBeforeClose = new AtomicInteger();

  private final AtomicInteger cancelsOfEnded = new AtomicInteger();

  private final AtomicInteger cancelsAfterClose = new AtomicInteger();

  private final AtomicInteger guardedStarts = new AtomicInteger();

  private final ThreadLocal<CountingCall<?, ?>> lastStream = new ThreadLocal<>();

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    CountingCall<ReqT, RespT> call = new CountingCall<>(next.newCall(method, callOptions));
    String name = method.getBareMethodName();
    if (name.equals("ExecuteStreamingSql") || name.equals("StreamingRead")) {
      this.lastStream.set(call);
      // What the counting interceptor reads to link the call to its guarded stream: the stream in
      // the context, or, for a routed stream, in the picker's reservation.
      ChannelReservation reservation = ChannelReservation.KEY.get();
      if (StreamLink.STARTING.get() != null
          || (reservation != null && reservation.stream() != null)) {
        this.guardedStarts.incrementAndGet();
      }
    }
    return call;
  }

  int cancels() {
    return this.cancels.get();
  }

  int lastReceived() {
    return this.lastReceived.get();
  }

  int endedBeforeClose() {
    return this.endedBeforeClose.get();
  }

  int cancelsOfEnded() {
    return this.cancelsOfEnded.get();
  }

  int guardedStarts() {
    return this.guardedStarts.get();
  }

  void reset() {
    this.cancels.set(0);
    this.lastReceived.set(0);
    this.endedBeforeClose.set(0);
    this.cancelsOfEnded.set(0);
    this.cancelsAfterClose.set(0);
    this.guardedStarts.set(0);
  }

  /** The calling thread is about to close the last stream it started. */
  void closing() {
    CountingCall<?, ?> call = this.lastStream.get();
    if (call != null && call.closed.getCount() == 0) {
      call.endedBeforeClose = true;
      this.endedBeforeClose.incrementAndGet();
    }
  }

  /** Cancels that reached a call after its listener here was told it closed, whoever decided. */
  int cancelsAfterClose() {
    return this.cancelsAfterClose.get();
  }

  private final class CountingCall<ReqT, RespT> extends SimpleForwardingClientCall<ReqT, RespT> {

    private final CountDownLatch closed = new CountDownLatch(1);

    private volatile boolean endedBeforeClose;

    CountingCall(ClientCall<ReqT, RespT> delegate) {
      super(delegate);
    }

    @Override
    public void start(Listener<RespT> responseListener, Metadata headers) {
      super.start(
          new SimpleForwardingClientCallListener<>(responseListener) {
            @Override
            public void onMessage(RespT message) {
              if (message instanceof PartialResultSet results && results.getLast()) {
                lastReceived.incrementAndGet();
              }
              super.onMessage(message);
            }

            @Override
            public void onClose(Status status, Metadata trailers) {
              super.onClose(status, trailers);
              CountingCall.this.closed.countDown();
            }
          },
          headers);
    }

    @Override
    public void cancel(String message, Throwable cause) {
      cancels.incrementAndGet();
      if (this.closed.getCount() == 0) {
        cancelsAfterClose.incrementAndGet();
      }
      if (this.endedBeforeClose) {
        cancelsOfEnded.incrementAndGet();
      }
      super.cancel(message, cause);
    }
  }
}
