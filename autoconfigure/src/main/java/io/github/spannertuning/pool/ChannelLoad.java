package io.github.spannertuning.pool;

import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.experiment.ExperimentSlot;
import io.github.spannertuning.routing.ChannelWarmth;
import io.github.spannertuning.routing.Connection;
import io.github.spannertuning.routing.Imbalance;
import io.github.spannertuning.routing.PoolLevel;
import io.github.spannertuning.routing.StatementCosts;
import io.grpc.Channel;
import io.grpc.ClientInterceptor;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Collections;
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
 * first call, or when routing finds it in the pool; the {@link CountingInterceptor} on every
 * sub-channel keeps the counts, the picker counts its picks ({@link ChannelReservation}), and the
 * stream-end guard counts its draining streams.
 *
 * <p>On grpc-gcp's dynamic pool, channels come and go: each one's {@link ChannelStats#state()} says
 * whether it takes new calls or drains the calls it has before the pool closes it, and a closed one
 * leaves {@link #channels()} (its listeners are told: {@link #onChannelRemoved}).
 */
public final class ChannelLoad {

  /** How long a window of the imbalance figure lasts, at least. */
  static final long WINDOW_NANOS = 30_000_000_000L;

  private final Map<Channel, ChannelStats> byChannel = new ConcurrentHashMap<>();

  private final List<ChannelStats> channels = new CopyOnWriteArrayList<>();

  private final List<Consumer<ChannelStats>> listeners = new CopyOnWriteArrayList<>();

  private final List<Consumer<ChannelStats>> removalListeners = new CopyOnWriteArrayList<>();

  private final ExperimentSlot experiment;

  private final ClientInterceptor interceptor;

  /** What each kind of call costs on any connection, taken off its channel's estimate. */
  private final StatementCosts costs = new StatementCosts();

  /** What the pool's connections answer in together, which moves each one's estimate. */
  private final PoolLevel level = new PoolLevel();

  /**
   * @param experiment the client's experiments, told of every data-plane call while one runs; or
   *     {@code null}
   */
  public ChannelLoad(ExperimentSlot experiment) {
    this.experiment = experiment;
    this.interceptor = new CountingInterceptor(this, experiment, false, null);
  }

  private final Imbalance imbalance = new Imbalance();

  /** The timer task that rolls the window while the client is open; guarded by this. */
  private ScheduledFuture<?> roller;

  private volatile int poolSize;

  /** The dynamic pool's channels as routing follows them; {@code null} on a fixed pool. */
  private volatile DynamicChannels dynamic;

  /** The index of the next sub-channel registered; guarded by this. */
  private int nextIndex;

  /**
   * The pool's sub-channels in the order they were first used or found: on a fixed pool those that
   * have carried a call; on a dynamic pool those it has now, taking calls or draining.
   */
  public List<ChannelStats> channels() {
    DynamicChannels dynamic = this.dynamic;
    if (dynamic != null) {
      dynamic.refresh();
    }
    List<ChannelStats> live = new ArrayList<>(this.channels.size());
    for (ChannelStats stats : this.channels) {
      if (stats.state() != ChannelState.REMOVED) {
        live.add(stats);
      }
    }
    return Collections.unmodifiableList(live);
  }

  /**
   * The channels the pool has now that take new calls: its size, fixed when it was built, or on a
   * dynamic pool as it grows and shrinks.
   */
  public int poolSize() {
    DynamicChannels dynamic = this.dynamic;
    return (dynamic != null) ? dynamic.size() : this.poolSize;
  }

  /** Whether the pool's channels come and go with its load (grpc-gcp's dynamic pool). */
  public boolean isDynamic() {
    return this.dynamic != null;
  }

  /** Routing follows this dynamic pool's channels. */
  void follow(DynamicChannels dynamic) {
    this.dynamic = dynamic;
  }

  /** A dynamic pool closed this channel: it leaves the list, and its listeners are told. */
  void removed(ChannelStats stats) {
    this.byChannel.values().remove(stats);
    this.removalListeners.forEach((listener) -> listener.accept(stats));
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
    return this.imbalance.of(this.channels.iterator(), ChannelStats::calls, poolSize());
  }

  /** The imbalance's window moves on; run by the timer every {@link #WINDOW_NANOS} while open. */
  synchronized void roll() {
    if (this.channels.removeIf((stats) -> stats.state() == ChannelState.REMOVED)) {
      // The window pairs counts by position: it starts again over the channels left.
      this.imbalance.reset();
    }
    long[] counts = new long[this.channels.size()];
    for (int i = 0; i < counts.length; i++) {
      counts[i] = this.channels.get(i).calls();
    }
    this.imbalance.roll(counts);
  }

  /** The client was built: its window starts moving on by time. */
  public synchronized void open() {
    if (this.roller == null) {
      this.roller = TuningTimer.every(new Roller(this), WINDOW_NANOS);
    }
  }

  /** Forgets the sub-channels of a client that was closed; a reopened client has new ones. */
  public synchronized void reset() {
    if (this.roller != null) {
      this.roller.cancel(false);
      this.roller = null;
    }
    this.imbalance.reset();
    this.byChannel.clear();
    this.channels.clear();
    this.nextIndex = 0;
    this.dynamic = null;
  }

  /**
   * The number of channels the pool was built with; the imbalance's mean is taken over at least
   * this many. On a dynamic pool routing follows, its size now counts instead.
   */
  public void poolSize(int poolSize) {
    this.poolSize = poolSize;
  }

  /** Called once for each sub-channel, when it carries its first call or joins the pool. */
  public void onNewChannel(Consumer<ChannelStats> listener) {
    this.listeners.add(listener);
    this.channels.forEach(listener);
  }

  /** Called once for each sub-channel a dynamic pool closed, which leaves {@link #channels()}. */
  public void onChannelRemoved(Consumer<ChannelStats> listener) {
    this.removalListeners.add(listener);
  }

  /** What each kind of call costs on any connection ({@link StatementCosts}). */
  StatementCosts costs() {
    return this.costs;
  }

  public ClientInterceptor interceptor() {
    return this.interceptor;
  }

  /**
   * The interceptor of a client whose rpc is being built, which traces its calls or not (as the
   * client's tuning state decided when the rpc was built): decided once, so that a client that does
   * not trace pays a final field's check for it per call.
   */
  public ClientInterceptor interceptor(boolean traced) {
    return interceptor(traced, null);
  }

  /**
   * As {@link #interceptor(boolean)}, telling {@code observer} of each attempt, where the
   * application observes the client's calls; {@code null} where it does not, and then a call pays a
   * final field's check for it.
   */
  public ClientInterceptor interceptor(boolean traced, CallObserver observer) {
    return (traced || observer != null)
        ? new CountingInterceptor(this, this.experiment, traced, observer)
        : this.interceptor;
  }

  /** The sub-channel's stats, registered on its first call. */
  ChannelStats stats(Channel channel) {
    ChannelStats stats = this.byChannel.get(channel);
    return (stats != null) ? stats : this.byChannel.computeIfAbsent(channel, this::register);
  }

  private synchronized ChannelStats register(Channel channel) {
    ChannelStats stats = new ChannelStats(this.nextIndex++, this.level);
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

  /** Where a channel of the pool is in its life. */
  public enum ChannelState {

    /** It takes new calls. */
    ACTIVE("active"),

    /**
     * A dynamic pool removed it: it takes no new call and is closed once the calls it has end. A
     * transaction bound to it may still follow it there, as the pool decides.
     */
    DRAINING("draining"),

    /** A dynamic pool closed it. */
    REMOVED("removed");

    private final String id;

    ChannelState(String id) {
      this.id = id;
    }

    /** As the endpoint and the meters name it. */
    public String id() {
      return this.id;
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

    private final Connection connection;

    private final AtomicInteger drainingStreams = new AtomicInteger();

    private volatile ChannelState state = ChannelState.ACTIVE;

    /**
     * The channel's connection as a {@link ChannelWarmer} watches it; {@code null} if it does not.
     */
    volatile ChannelWarmer.Watched watched;

    /** The channel's warmth, or {@code null} where it is not watched. */
    public ChannelWarmth warmth() {
      ChannelWarmer.Watched watched = this.watched;
      return (watched != null) ? watched.warmth() : null;
    }

    /** A channel on its own, whose estimate no pool's level moves. */
    public ChannelStats(int index) {
      this(index, null);
    }

    ChannelStats(int index, PoolLevel level) {
      this.index = index;
      this.connection = new Connection(System.nanoTime(), level);
    }

    /** Whether it takes new calls, drains, or was closed by a dynamic pool. */
    public ChannelState state() {
      return this.state;
    }

    void state(ChannelState state) {
      this.state = state;
    }

    /**
     * The sub-channel's number, from 0, in the order it carried its first call or joined the pool;
     * a dynamic pool's new channel never takes the number of one it removed.
     */
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

    /** The channel as routing's picker weighs it. */
    public Connection connection() {
      return this.connection;
    }

    /** A stream on this channel starts draining: closed at {@code last}, waiting for trailers. */
    public void incrementDraining() {
      this.drainingStreams.incrementAndGet();
    }

    public void decrementDraining() {
      this.drainingStreams.decrementAndGet();
    }
  }
}
