package io.github.spannertuning.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
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
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Calls per real sub-channel of one client's pool. Its interceptor sits on every sub-channel,
 * below grpc-gcp or gax's pool, and tells sub-channels apart by the channel it is handed: the same
 * interceptor instance serves all of grpc-gcp's channels, so a per-instance count would not do.
 * The cost per call is a map lookup, two atomic increments, one decrement and the wrappers.
 */
public final class ChannelLoad {

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

    private final int index;

    private final AtomicInteger activeStreams = new AtomicInteger();

    private final AtomicLong calls = new AtomicLong();

    ChannelStats(int index) {
      this.index = index;
    }

    /** The sub-channel's number, from 0, in the order it carried its first call. */
    public int index() {
      return this.index;
    }

    /** Calls in flight on this sub-channel now. */
    public int activeStreams() {
      return this.activeStreams.get();
    }

    /** Calls started on this sub-channel. */
    public long calls() {
      return this.calls.get();
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
      return new SimpleForwardingClientCall<>(next.newCall(method, callOptions)) {
        @Override
        public void start(Listener<RespT> listener, Metadata headers) {
          stats.calls.incrementAndGet();
          stats.activeStreams.incrementAndGet();
          super.start(
              new SimpleForwardingClientCallListener<>(listener) {
                @Override
                public void onClose(Status status, Metadata trailers) {
                  stats.activeStreams.decrementAndGet();
                  super.onClose(status, trailers);
                }
              },
              headers);
        }
      };
    }
  }
}
