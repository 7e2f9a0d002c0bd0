package io.github.spannertuning.client;

import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * Counts every data-plane call on the real sub-channel it is made on, into its {@link ChannelLoad}.
 * It sits on every sub-channel, below grpc-gcp or gax's pool, and tells sub-channels apart by the
 * channel it is handed: the same interceptor instance serves all of grpc-gcp's channels, so a
 * per-instance count would not do.
 *
 * <p>Two other pieces hand it what they know through the call's context: {@link ChannelPicker} the
 * {@link ChannelReservation} the call was counted under at its pick, and {@link GuardedStream} the
 * stream whose first call this is, which learns its sub-channel here and hears of an OK close
 * before gax tells its consumer.
 *
 * <p>The cost per call is a map lookup, two context lookups, two atomic increments, one decrement,
 * two clock reads (one for a call {@link ChannelPicker} routed, which is timed from its pick) and
 * the wrappers.
 */
final class CountingInterceptor implements ClientInterceptor {

  /**
   * The only service counted. The client hands the same interceptors to its instance-admin and
   * database-admin channels as to its data pool; their calls pass uncounted, so channels and
   * imbalance describe only the pool that carries queries, reads and transactions. The check costs
   * a field read ({@code MethodDescriptor.getServiceName()}) and a compare that the admin and
   * long-running-operation service names fail at once on their length.
   */
  private static final String DATA_SERVICE = "google.spanner.v1.Spanner";

  private final ChannelLoad load;

  CountingInterceptor(ChannelLoad load) {
    this.load = load;
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    if (!DATA_SERVICE.equals(method.getServiceName())) {
      return next.newCall(method, callOptions);
    }
    ChannelStats stats = this.load.stats(next);
    ChannelReservation reservation = ChannelReservation.KEY.get();
    if (reservation != null && reservation.claim(stats)) {
      return (reservation.reserved() != null)
          ? new CountedCall<>(
              next.newCall(method, callOptions),
              stats,
              reservation.reserved(),
              reservation.pickedAtNanos(),
              GuardedStream.link(reservation.stream(), stats))
          : next.newCall(method, callOptions);
    }
    return new CountedCall<>(
        next.newCall(method, callOptions), stats, null, 0, GuardedStream.linkStarting(stats));
  }

  /**
   * A data-plane call, counted in flight on its channel from its pick (a call {@link ChannelPicker}
   * routed) or its start (any other) to its close, and timed from then to its first response for
   * the channel's latency estimate. Should grpc-gcp have sent a picked call elsewhere than its
   * pick, the count moves to the channel it really went to.
   */
  private static final class CountedCall<ReqT, RespT>
      extends SimpleForwardingClientCall<ReqT, RespT> {

    @SuppressWarnings("rawtypes")
    private static final AtomicIntegerFieldUpdater<CountedCall> COUNTED =
        AtomicIntegerFieldUpdater.newUpdater(CountedCall.class, "counted");

    private final ChannelStats stats;

    private final GuardedStream stream;

    /** 1 while this call holds an in-flight count, on {@link #countedOn}. */
    private volatile int counted;

    private volatile ChannelStats countedOn;

    private long startNanos;

    /**
     * @param reserved the channel counted at the pick, or {@code null} for a call that was not
     *     picked and is counted when it starts
     * @param stream the guarded stream this call is the first attempt of, or {@code null}
     */
    CountedCall(
        ClientCall<ReqT, RespT> call,
        ChannelStats stats,
        ChannelStats reserved,
        long pickedAtNanos,
        GuardedStream stream) {
      super(call);
      this.stats = stats;
      this.stream = stream;
      this.counted = (reserved != null) ? 1 : 0;
      this.countedOn = (reserved != null) ? reserved : stats;
      this.startNanos = pickedAtNanos;
    }

    @Override
    public void start(Listener<RespT> listener, Metadata headers) {
      if (this.counted == 0) {
        this.startNanos = System.nanoTime();
        this.stats.countCall(this.startNanos);
        this.counted = 1;
      } else if (this.countedOn != this.stats) {
        ChannelStats reserved = this.countedOn;
        this.stats.countCall(this.startNanos);
        this.countedOn = this.stats;
        reserved.uncountCall();
      }
      super.start(new CountedListener(listener), headers);
    }

    @Override
    public void cancel(String message, Throwable cause) {
      // A call cancelled before it starts never sees onClose.
      uncount();
      super.cancel(message, cause);
    }

    private void uncount() {
      if (COUNTED.compareAndSet(this, 1, 0)) {
        this.countedOn.callClosed();
      }
    }

    /** gRPC calls a listener's methods one at a time, so its own state needs no fence. */
    private final class CountedListener extends SimpleForwardingClientCallListener<RespT> {

      private boolean answered;

      CountedListener(Listener<RespT> delegate) {
        super(delegate);
      }

      @Override
      public void onMessage(RespT message) {
        if (!this.answered) {
          this.answered = true;
          CountedCall.this.stats.latency().answered(CountedCall.this.startNanos, System.nanoTime());
        }
        super.onMessage(message);
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        // Before the listeners above: gax tells the stream's consumer of the end a hop later, and
        // a close of the stream in between must not cancel a call that has ended. Before the call
        // leaves the in-flight count, too: a draining stream is always one of the calls in flight,
        // which is what bounds the draining streams of a connection.
        GuardedStream stream = CountedCall.this.stream;
        if (stream != null && status.isOk()) {
          stream.transportClosedOk();
        }
        uncount();
        if (!this.answered || !status.isOk()) {
          CountedCall.this
              .stats
              .latency()
              .closed(
                  status.getCode(), CountedCall.this.startNanos, System.nanoTime(), this.answered);
        }
        super.onClose(status, trailers);
      }
    }
  }
}
