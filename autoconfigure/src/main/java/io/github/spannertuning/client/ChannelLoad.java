package io.github.spannertuning.client;

import io.github.spannertuning.experiment.ExperimentSlot;
import io.github.spannertuning.routing.Connection;
import io.github.spannertuning.routing.Imbalance;
import io.grpc.Channel;
import io.grpc.ClientInterceptor;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Calls per real sub-channel of one client's pool: what the meters and the endpoint show, and what
 * routing's picker weighs. One {@link ChannelStats} per sub-channel, registered when it carries its
 * first call; the {@link CountingInterceptor} on every sub-channel keeps the counts, the picker
 * counts its picks ({@link ChannelReservation}), and the stream-end guard counts its draining
 * streams.
 */
public final class ChannelLoad {

  /** How long a window of the imbalance figure lasts, at least. */
  static final long WINDOW_NANOS = 30_000_000_000L;

  private final Map<Channel, ChannelStats> byChannel = new ConcurrentHashMap<>();

  private final List<ChannelStats> channels = new CopyOnWriteArrayList<>();

  private final List<Consumer<ChannelStats>> listeners = new CopyOnWriteArrayList<>();

  private final ExperimentSlot experiment;

  private final ClientInterceptor interceptor;

  /**
   * @param experiment the client's experiments, told of every data-plane call while one runs; or
   *     {@code null}
   */
  ChannelLoad(ExperimentSlot experiment) {
    this.experiment = experiment;
    this.interceptor = new CountingInterceptor(this, experiment, false);
  }

  private final Imbalance imbalance = new Imbalance();

  /** The timer task that rolls the window while the client is open; guarded by this. */
  private ScheduledFuture<?> roller;

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
   *
   * <p>Reading it changes nothing: the window moves on by time alone, every 30 seconds while the
   * client is open, so a meter scrape and an endpoint call see the same window. No lock is taken.
   */
  public double imbalance() {
    return this.imbalance.of(this.channels.iterator(), ChannelStats::calls, this.poolSize);
  }

  /** The imbalance's window moves on; run by the timer every {@link #WINDOW_NANOS} while open. */
  synchronized void roll() {
    long[] counts = new long[this.channels.size()];
    for (int i = 0; i < counts.length; i++) {
      counts[i] = this.channels.get(i).calls();
    }
    this.imbalance.roll(counts);
  }

  /** The client was built: its window starts moving on by time. */
  synchronized void open() {
    if (this.roller == null) {
      this.roller = TuningTimer.every(new Roller(this), WINDOW_NANOS);
    }
  }

  /** Forgets the sub-channels of a client that was closed; a reopened client has new ones. */
  synchronized void reset() {
    if (this.roller != null) {
      this.roller.cancel(false);
      this.roller = null;
    }
    this.imbalance.reset();
    this.byChannel.clear();
    this.channels.clear();
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

  /**
   * The interceptor of a client whose rpc is being built, which traces its calls or not ({@link
   * SpannerTuningState#traced}): decided once, so that a client that does not trace pays a final
   * field's check for it per call.
   */
  ClientInterceptor interceptor(boolean traced) {
    return traced ? new CountingInterceptor(this, this.experiment, true) : this.interceptor;
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
   * Rolls a load's window, holding the load weakly: a client dropped without being closed does not
   * stay reachable from the timer, and its task ends with it.
   */
  private static final class Roller implements Runnable {

    private final WeakReference<ChannelLoad> load;

    Roller(ChannelLoad load) {
      this.load = new WeakReference<>(load);
    }

    @Override
    public void run() {
      ChannelLoad load = this.load.get();
      if (load == null) {
        // A periodic task that throws is not run again.
        throw new IllegalStateException("spanner-tuning: the client's channel load is gone");
      }
      load.roll();
    }
  }

  /**
   * One sub-channel's load, as the meters and the endpoint read it. Its calls in flight, calls and
   * latency are routing's {@link Connection}, kept by the {@link CountingInterceptor}, by {@link
   * PoolRouting} for the calls it picks, and read by routing's picker; its draining streams are
   * counted by the stream-end guard.
   */
  public static final class ChannelStats {

    private final int index;

    private final Connection connection = new Connection(System.nanoTime());

    private final AtomicInteger drainingStreams = new AtomicInteger();

    ChannelStats(int index) {
      this.index = index;
    }

    /** The sub-channel's number, from 0, in the order it carried its first call. */
    public int index() {
      return this.index;
    }

    /** Calls in flight on this sub-channel now. */
    public int activeStreams() {
      return this.connection.inFlight();
    }

    /** Calls made on this sub-channel; one routed by the picker counts from its pick. */
    public long calls() {
      return this.connection.calls();
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
     * counted as a penalty, in nanoseconds: what the picker weighs it by.
     */
    public long latencyEstimateNanos() {
      return this.connection.latency().estimateNanos();
    }

    Connection connection() {
      return this.connection;
    }

    void incrementDraining() {
      this.drainingStreams.incrementAndGet();
    }

    void decrementDraining() {
      this.drainingStreams.decrementAndGet();
    }
  }
}
