package io.github.spannertuning.client;

import io.grpc.Channel;
import io.grpc.ClientInterceptor;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Calls per real sub-channel of one client's pool: what the meters and the endpoint show, and
 * what {@link ChannelPicker} weighs. One {@link ChannelStats} per sub-channel, registered when it
 * carries its first call; the {@link CountingInterceptor} on every sub-channel keeps the counts,
 * the picker counts its picks ({@link ChannelReservation}), and the stream-end guard counts its
 * draining streams.
 */
public final class ChannelLoad {

  /** How long a window of the imbalance figure lasts, at least. */
  static final long WINDOW_NANOS = 30_000_000_000L;

  private final Map<Channel, ChannelStats> byChannel = new ConcurrentHashMap<>();

  private final List<ChannelStats> channels = new CopyOnWriteArrayList<>();

  private final List<Consumer<ChannelStats>> listeners = new CopyOnWriteArrayList<>();

  private final ClientInterceptor interceptor = new CountingInterceptor(this);

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

  /** The sub-channel's stats, registered on its first call. */
  ChannelStats stats(Channel channel) {
    ChannelStats stats = this.byChannel.get(channel);
    return (stats != null) ? stats : this.byChannel.computeIfAbsent(channel, this::register);
  }

  private synchronized ChannelStats register(Channel channel) {
    ChannelStats stats = new ChannelStats(this.channels.size());
    this.channels.add(stats);
    this.listeners.forEach((listener) -> listener.accept(stats));
    return stats;
  }

  /**
   * One sub-channel's load. Its counts are written by the {@link CountingInterceptor}, by {@link
   * ChannelPicker} for the calls it picks, and by the stream-end guard for its draining streams.
   */
  public static final class ChannelStats {

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
     * Counts a call that is about to be made, as made and in flight, if the in-flight count is
     * still {@code expected}: how {@link ChannelPicker} keeps concurrent picks apart.
     */
    boolean tryCountCall(int expected, long nowNanos) {
      if (this.activeStreams.compareAndSet(expected, expected + 1)) {
        this.calls.incrementAndGet();
        if (expected == 0) {
          this.latency.firstOutstanding(nowNanos);
        }
        return true;
      }
      return false;
    }

    /** Counts a call as made and in flight. */
    void countCall(long nowNanos) {
      if (this.activeStreams.incrementAndGet() == 1) {
        this.latency.firstOutstanding(nowNanos);
      }
      this.calls.incrementAndGet();
    }

    /** Takes back a call counted here that was made elsewhere or not at all. */
    void uncountCall() {
      this.activeStreams.decrementAndGet();
      this.calls.decrementAndGet();
    }

    /** A call counted here is no longer in flight. */
    void callClosed() {
      this.activeStreams.decrementAndGet();
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
  }
}
