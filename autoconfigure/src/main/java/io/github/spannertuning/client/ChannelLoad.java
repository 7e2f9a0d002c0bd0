package io.github.spannertuning.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Calls per real sub-channel of one client's pool. Its interceptor sits on every sub-channel,
 * below grpc-gcp or gax's pool, and tells sub-channels apart by the channel it is handed: the same
 * interceptor instance serves all of grpc-gcp's channels, so a per-instance count would not do.
 * The cost per call is a map lookup, two context lookups, two atomic increments, one decrement, two
 * clock reads (one for a call {@link ChannelPicker} routed, which is timed from its pick) and the
 * wrappers.
 *
 * <p>The same calls feed each sub-channel's {@link ChannelLatency}. It also tells the stream-end
 * guard which sub-channel a guarded stream's gRPC call is on, and when that call has closed with
 * OK.
 */
public final class ChannelLoad {

  /**
   * The channel a {@link ChannelPicker} reserved for the call about to be made on this thread. The
   * interceptor runs inside grpc-gcp's {@code newCall}, on the thread that picked.
   */
  static final Context.Key<Routing> ROUTING = Context.key("spanner-tuning-routing");

  /** How long a window of the imbalance figure lasts, at least. */
  static final long WINDOW_NANOS = 30_000_000_000L;

  private final Map<Channel, ChannelStats> byChannel = new ConcurrentHashMap<>();

  private final List<ChannelStats> channels = new CopyOnWriteArrayList<>();

  private final List<Consumer<ChannelStats>> listeners = new CopyOnWriteArrayList<>();

  private final ClientInterceptor interceptor = new CountingInterceptor();

  private long[] windowStart = new long[0];

  private long[] windowNext = new long[0];

  private long windowNextNanos = System.nanoTime();

  private volatile int poolSize;

  /** The sub-channels that have carried a call, in the order they were first used. */
  public List<ChannelStats> channels() {
    return List.copyOf(this.channels);
  }

  /**
   * The busiest sub-channel's calls over the mean per channel of the pool, over the last 30 to 60
   * seconds: 1.0 is even, the pool size when every call went to one channel. The mean is taken over
   * the whole pool, idle channels included, so a pool that uses one channel of eight reads 8.0, not
   * 1.0. NaN when no call was made in that window.
   */
  public synchronized double imbalance() {
    long now = System.nanoTime();
    long[] counts = counts();
    if (now - this.windowNextNanos >= 0) {
      this.windowStart = this.windowNext;
      this.windowNext = counts;
      this.windowNextNanos = now + WINDOW_NANOS;
    }
    long max = 0;
    long sum = 0;
    for (int i = 0; i < counts.length; i++) {
      long delta = counts[i] - ((i < this.windowStart.length) ? this.windowStart[i] : 0);
      max = Math.max(max, delta);
      sum += delta;
    }
    int channels = Math.max(this.poolSize, counts.length);
    return (sum == 0) ? Double.NaN : max / ((double) sum / channels);
  }

  /** Forgets the sub-channels of a client that was closed; a reopened client has new ones. */
  synchronized void reset() {
    this.byChannel.clear();
    this.channels.clear();
    this.windowStart = new long[0];
    this.windowNext = new long[0];
  }

  /**
   * The number of channels the pool was built with; the imbalance's mean is taken over at least
   * this many. grpc-gcp's dynamic pool may grow past it: then the channels seen count.
   */
  void poolSize(int poolSize) {
    this.poolSize = poolSize;
  }

  /** Called once for each sub-channel, when it carries its first call. */
  public void onNewChannel(Consumer<ChannelStats> listener) {
    this.listeners.add(listener);
    this.channels.forEach(listener);
  }

  ClientInterceptor interceptor() {
    return this.interceptor;
  }

  private long[] counts() {
    List<ChannelStats> snapshot = this.channels;
    long[] counts = new long[snapshot.size()];
    for (int i = 0; i < counts.length; i++) {
      counts[i] = snapshot.get(i).calls();
    }
    return counts;
  }

  private ChannelStats stats(Channel channel) {
    ChannelStats stats = this.byChannel.get(channel);
    return (stats != null) ? stats : this.byChannel.computeIfAbsent(channel, this::register);
  }

  private synchronized ChannelStats register(Channel channel) {
    ChannelStats stats = new ChannelStats(this.channels.size());
    this.channels.add(stats);
    this.listeners.forEach((listener) -> listener.accept(stats));
    return stats;
  }

  /** One sub-channel's load. */
  public static final class ChannelStats {

    /**
     * The cost of a suspect channel that already carries a call: above any real cost, low enough
     * that the picker's band above the least cost cannot overflow when every channel is suspect.
     */
    static final long SUSPECT_COST = Long.MAX_VALUE / 4;

    private final int index;

    private final AtomicInteger activeStreams = new AtomicInteger();

    private final AtomicLong calls = new AtomicLong();

    private final ChannelLatency latency;

    private final AtomicInteger drainingStreams = new AtomicInteger();

    ChannelStats(int index) {
      this.index = index;
      this.latency = new ChannelLatency(System.nanoTime());
    }

    /** The sub-channel's number, from 0, in the order it carried its first call. */
    public int index() {
      return this.index;
    }

    /** Calls in flight on this sub-channel now. */
    public int activeStreams() {
      return this.activeStreams.get();
    }

    /** Calls made on this sub-channel; one routed by {@link ChannelPicker} counts from its pick. */
    public long calls() {
      return this.calls.get();
    }

    /**
     * Streams closed at their {@code last} message that wait on this sub-channel for their
     * trailers, without a cancel. Each still holds one of the connection's stream slots, and is
     * also counted in {@link #activeStreams()}.
     */
    public int drainingStreams() {
      return this.drainingStreams.get();
    }

    /**
     * Counts one more draining stream, unless {@code max} are draining already. A compare and set,
     * not a read then an increment, so that concurrent closes cannot pass the cap together.
     */
    boolean tryIncrementDraining(int max) {
      while (true) {
        int current = this.drainingStreams.get();
        if (current >= max) {
          return false;
        }
        if (this.drainingStreams.compareAndSet(current, current + 1)) {
          return true;
        }
      }
    }

    void decrementDraining() {
      this.drainingStreams.decrementAndGet();
    }

    /**
     * The time-decayed average of this sub-channel's time to first response, with failed calls
     * counted as a penalty, in nanoseconds: what {@link ChannelPicker} weighs it by.
     */
    public long latencyEstimateNanos() {
      return this.latency.estimateNanos();
    }

    ChannelLatency latency() {
      return this.latency;
    }

    /**
     * What a call sent here now may expect to wait, counting the calls ahead of it: the calls in
     * flight plus this one, times the latency the channel is expected to have; {@link
     * #SUSPECT_COST} while a suspect channel's one call is outstanding.
     */
    long cost(long nowNanos) {
      int outstanding = this.activeStreams.get();
      if (outstanding > 0 && this.latency.suspect()) {
        return SUSPECT_COST;
      }
      return (outstanding + 1L) * this.latency.expectedNanos(nowNanos, outstanding);
    }

    /**
     * Counts a call that is about to be made, as made and in flight, if the in-flight count is
     * still {@code expected}. Counting at the pick rather than when the call starts is what keeps
     * concurrent picks apart.
     */
    boolean tryReserve(int expected, long nowNanos) {
      if (this.activeStreams.compareAndSet(expected, expected + 1)) {
        this.calls.incrementAndGet();
        if (expected == 0) {
          this.latency.firstOutstanding(nowNanos);
        }
        return true;
      }
      return false;
    }

    void reserve(long nowNanos) {
      if (this.activeStreams.incrementAndGet() == 1) {
        this.latency.firstOutstanding(nowNanos);
      }
      this.calls.incrementAndGet();
    }

    /** Takes back a reservation whose call was made elsewhere or not at all. */
    void unreserve() {
      this.activeStreams.decrementAndGet();
      this.calls.decrementAndGet();
    }
  }

  /**
   * One pick: the channel counted for it ({@code null} for a probe, which only asks where a call
   * would land), and the channel the call was really created on. Claimed by the first call made
   * under it, so a call made later in the same context is counted normally.
   */
  static final class Routing {

    private final ChannelStats reserved;

    private final Context previous;

    private static final AtomicIntegerFieldUpdater<Routing> CLAIMED =
        AtomicIntegerFieldUpdater.newUpdater(Routing.class, "claimed");

    private final long pickedAtNanos;

    /** 1 once a call, or the caller giving the reservation back, has taken this pick. */
    private volatile int claimed;

    private volatile ChannelStats landed;

    Routing(ChannelStats reserved, Context previous, long pickedAtNanos) {
      this.reserved = reserved;
      this.previous = previous;
      this.pickedAtNanos = pickedAtNanos;
    }

    /** The context to restore once the call is made. */
    Context previous() {
      return this.previous;
    }

    ChannelStats landed() {
      return this.landed;
    }

    /** Gives the reservation back if no call claimed it (the client failed before its call). */
    void releaseUnclaimed() {
      if (this.reserved != null && CLAIMED.compareAndSet(this, 0, 1)) {
        this.reserved.unreserve();
      }
    }

    private boolean claim(ChannelStats stats) {
      if (CLAIMED.compareAndSet(this, 0, 1)) {
        this.landed = stats;
        return true;
      }
      return false;
    }
  }

  private final class CountingInterceptor implements ClientInterceptor {

    /**
     * The only service counted. The client hands the same interceptors to its instance-admin and
     * database-admin channels as to its data pool; their calls pass uncounted, so channels and
     * imbalance describe only the pool that carries queries, reads and transactions. The check costs
     * a field read ({@code MethodDescriptor.getServiceName()}) and a compare that the admin and
     * long-running-operation service names fail at once on their length.
     */
    private static final String DATA_SERVICE = "google.spanner.v1.Spanner";

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
        MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
      if (!DATA_SERVICE.equals(method.getServiceName())) {
        return next.newCall(method, callOptions);
      }
      ChannelStats stats = stats(next);
      Routing routing = ROUTING.get();
      if (routing != null && routing.claim(stats)) {
        return (routing.reserved != null)
            ? new CountedCall<>(
                next.newCall(method, callOptions),
                stats,
                routing.reserved,
                routing.pickedAtNanos,
                guardedStream(stats))
            : next.newCall(method, callOptions);
      }
      return new CountedCall<>(
          next.newCall(method, callOptions), stats, null, 0, guardedStream(stats));
    }
  }

  /**
   * The guarded stream this call is the first attempt of, if it is one; it learns the sub-channel
   * its call holds a stream slot on.
   */
  private static GuardedStream guardedStream(ChannelStats stats) {
    GuardedStream starting = GuardedStream.STARTING.get();
    if (starting != null && starting.linkTransport()) {
      starting.onChannel(stats);
      return starting;
    }
    return null;
  }

  /**
   * Runs before the listeners above: gax tells the stream's consumer of the end a hop later, and a
   * close of the stream in between must not cancel a call that has ended.
   */
  private static void reportEnd(GuardedStream stream, Status status) {
    if (stream != null && status.isOk()) {
      stream.transportClosedOk();
    }
  }

  /**
   * A data-plane call, counted in flight on its channel from its pick (a call {@link
   * ChannelPicker} routed) or its start (any other) to its close, and timed from then to its first
   * response for the channel's latency estimate. Should grpc-gcp have sent a picked call elsewhere
   * than its pick, the count moves to the channel it really went to.
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
        this.stats.reserve(this.startNanos);
        this.counted = 1;
      } else if (this.countedOn != this.stats) {
        ChannelStats reserved = this.countedOn;
        this.stats.reserve(this.startNanos);
        this.countedOn = this.stats;
        reserved.unreserve();
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
        this.countedOn.activeStreams.decrementAndGet();
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
        uncount();
        if (!this.answered || !status.isOk()) {
          CountedCall.this.stats
              .latency()
              .closed(status.getCode(), CountedCall.this.startNanos, System.nanoTime(), this.answered);
        }
        reportEnd(CountedCall.this.stream, status);
        super.onClose(status, trailers);
      }
    }
  }
}
