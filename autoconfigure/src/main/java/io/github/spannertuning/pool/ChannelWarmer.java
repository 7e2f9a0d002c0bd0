package io.github.spannertuning.pool;

import com.google.api.core.ApiFuture;
import com.google.api.core.ApiFutureCallback;
import com.google.api.core.ApiFutures;
import com.google.common.util.concurrent.MoreExecutors;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.routing.ChannelWarmth;
import io.github.spannertuning.routing.ChannelWarmth.Action;
import io.github.spannertuning.routing.ConnectionRefresh;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Keeps the channels of a client's pool warm: each channel connects as soon as the client is built
 * and again as soon as its connection goes (a GOAWAY, a break), not when the next read needs it,
 * and is primed with one cheap call on each new connection before routing sends it reads. The hook
 * into the client: grpc-java's connectivity callbacks of each channel, and the priming call the rpc
 * makes; each channel's {@link ChannelWarmth} decides.
 *
 * <p>Priming needs a session: the first one the client creates ({@link #sessionKnown}). Until then
 * channels connect, and are primed once it is known.
 *
 * <p>Connections are refreshed before the server retires them as {@link ConnectionRefresh} decides,
 * on one timer thread all clients share: a refreshed channel is cold at once, its connection let go
 * with grpc-java's {@link ManagedChannel#enterIdle} (its calls in flight finish there), and it
 * connects again and is primed.
 */
public final class ChannelWarmer {

  /** Sends the priming call on one channel. */
  @FunctionalInterface
  public interface Primer {

    /** The priming call, sent on {@code channel}; its future ends when it answers or fails. */
    ApiFuture<?> prime(ChannelStats channel);
  }

  /** The refresh timer all clients share: a daemon thread, idle between checks. */
  private static final ScheduledExecutorService REFRESH_TIMER = refreshTimer();

  private final List<Watched> channels = new CopyOnWriteArrayList<>();

  private final LongSupplier clockMillis;

  private final ConnectionRefresh refresh;

  private volatile ScheduledFuture<?> refreshCheck;

  private final AtomicLong coldReads = new AtomicLong();

  private final long startedMillis;

  private volatile Primer primer;

  private volatile boolean closed;

  /** When every channel was first warm, or {@code -1} until then. */
  private volatile long warmAtMillis = -1;

  ChannelWarmer(LongSupplier clockMillis, ConnectionRefresh refresh) {
    this.clockMillis = clockMillis;
    this.refresh = refresh;
    this.startedMillis = clockMillis.getAsLong();
  }

  /** A warmer on the system clock, refreshing connections as {@code refresh} decides. */
  public static ChannelWarmer create(ConnectionRefresh refresh) {
    ChannelWarmer warmer = new ChannelWarmer(System::currentTimeMillis, refresh);
    warmer.scheduleRefreshCheck();
    return warmer;
  }

  private static ScheduledExecutorService refreshTimer() {
    ScheduledThreadPoolExecutor timer =
        new ScheduledThreadPoolExecutor(
            1,
            task -> {
              Thread thread = new Thread(task, "spanner-tuning-refresh");
              thread.setDaemon(true);
              return thread;
            });
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }

  private void scheduleRefreshCheck() {
    long every = this.refresh.checkEveryMillis();
    if (every < 0 || this.closed) {
      return;
    }
    this.refreshCheck =
        REFRESH_TIMER.schedule(
            () -> {
              try {
                refreshDue();
              } catch (RuntimeException ex) {
                // A refresh is an optimisation: the next check tries again.
              }
              scheduleRefreshCheck();
            },
            every,
            TimeUnit.MILLISECONDS);
  }

  /**
   * Refreshes the channel whose connection is due now, if any ({@link ConnectionRefresh#next}). The
   * refresh timer calls it; tests call it on their clock.
   */
  void refreshDue() {
    if (this.closed) {
      return;
    }
    List<ChannelWarmth> warmth = warmth();
    ChannelWarmth due = this.refresh.next(warmth, this.clockMillis.getAsLong());
    if (due == null) {
      return;
    }
    for (Watched watched : this.channels) {
      if (watched.warmth == due) {
        act(watched, due.refresh());
        return;
      }
    }
  }

  /** How connections are refreshed before the server retires them. */
  public ConnectionRefresh refresh() {
    return this.refresh;
  }

  /** Connections refreshed before the server retired them, over every channel's life. */
  public long refreshed() {
    long total = 0;
    for (Watched watched : this.channels) {
      total += watched.warmth.refreshCount();
    }
    return total;
  }

  /**
   * Watches a channel of the pool from now: it connects at once.
   *
   * @param primed whether the pool primed the channel itself before it added it: it is warm as soon
   *     as it is connected
   */
  public void watch(ChannelStats stats, ManagedChannel channel, boolean primed) {
    Watched watched =
        new Watched(stats, channel, new ChannelWarmth(stats.connection(), primed, this.refresh));
    this.channels.add(watched);
    stats.watched = watched;
    // A channel a dynamic pool adds after the first session: primed once it connects, as the
    // channels of the start were. Added to the list first, so that a session that becomes known
    // meanwhile is told to it by sessionKnown as well; telling it twice primes it once.
    if (this.primer != null) {
      watched.warmth.sessionKnown();
    }
    observe(watched, channel.getState(true));
  }

  /**
   * Whether the channel routing just picked has lost the connection it was warm on, which its state
   * callback has not told yet: a GOAWAY the channel has acted on a moment ago. It is cold from now,
   * and connects again. One volatile read of the channel's state.
   */
  boolean lostConnection(ChannelStats stats) {
    Watched watched = stats.watched;
    if (watched == null || stats.connection().isCold()) {
      return false;
    }
    ConnectivityState state = watched.channel.getState(false);
    if (state == ConnectivityState.READY || state == ConnectivityState.SHUTDOWN) {
      return false;
    }
    act(
        watched,
        watched.warmth.notReady(state == ConnectivityState.IDLE, this.clockMillis.getAsLong()));
    return true;
  }

  /**
   * A session to prime with is known: every connected channel that is not warm is primed now, and
   * any that connects later once it is up. Only the first call counts.
   */
  public void sessionKnown(Primer primer) {
    synchronized (this) {
      if (this.primer != null) {
        return;
      }
      this.primer = primer;
    }
    for (Watched watched : this.channels) {
      act(watched, watched.warmth.sessionKnown());
    }
  }

  /** Whether a session to prime with is known. */
  public boolean hasSession() {
    return this.primer != null;
  }

  /** Stops watching: the client is closing. */
  public void close() {
    this.closed = true;
    ScheduledFuture<?> check = this.refreshCheck;
    if (check != null) {
      check.cancel(false);
    }
    synchronized (this) {
      notifyAll();
    }
  }

  /**
   * Waits until every channel is warm, at most {@code timeout}.
   *
   * @return whether every channel is warm
   */
  public boolean awaitWarm(Duration timeout) throws InterruptedException {
    return await(this::allWarm, timeout);
  }

  /**
   * Waits until at least one channel is warm, at most {@code timeout}: the read warm-up starts on
   * it while the others are still being primed.
   *
   * @return whether one is warm
   */
  public boolean awaitAnyWarm(Duration timeout) throws InterruptedException {
    return await(this::anyWarm, timeout);
  }

  /** Waits until {@code warm} holds (told by each change of warmth), at most {@code timeout}. */
  private boolean await(BooleanSupplier warm, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (this) {
      while (!warm.getAsBoolean() && !this.closed) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return false;
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
    }
    return warm.getAsBoolean();
  }

  private boolean anyWarm() {
    for (Watched watched : this.channels) {
      if (watched.warmth.isWarm()) {
        return true;
      }
    }
    return false;
  }

  /** Whether every channel watched is warm now. */
  public boolean allWarm() {
    for (Watched watched : this.channels) {
      if (!watched.warmth.isWarm()) {
        return false;
      }
    }
    return !this.channels.isEmpty();
  }

  /** Each channel's warmth, in the order they were watched. */
  public List<ChannelWarmth> warmth() {
    List<ChannelWarmth> list = new ArrayList<>(this.channels.size());
    for (Watched watched : this.channels) {
      list.add(watched.warmth);
    }
    return list;
  }

  /** The warmth of one channel, or {@code null} when it is not watched. */
  public ChannelWarmth warmthOf(ChannelStats stats) {
    for (Watched watched : this.channels) {
      if (watched.stats == stats) {
        return watched.warmth;
      }
    }
    return null;
  }

  /** Priming calls that answered, over every channel's life. */
  public long primed() {
    long total = 0;
    for (Watched watched : this.channels) {
      total += watched.warmth.primedCount();
    }
    return total;
  }

  /** How long the first warm-up took, from the client's start until every channel was warm. */
  public Duration warmUpTime() {
    long at = this.warmAtMillis;
    return (at < 0) ? null : Duration.ofMillis(at - this.startedMillis);
  }

  /** Reads routing sent to a cold channel, because no warm one had room. */
  public long coldReads() {
    return this.coldReads.get();
  }

  /** Counts a read sent to a cold channel. */
  void coldRead() {
    this.coldReads.incrementAndGet();
  }

  private void observe(Watched watched, ConnectivityState state) {
    if (this.closed) {
      return;
    }
    if (state == ConnectivityState.SHUTDOWN) {
      // The pool closed the channel (a dynamic pool's removal, or the client's close).
      this.channels.remove(watched);
      changed();
      return;
    }
    Action action =
        (state == ConnectivityState.READY)
            ? watched.warmth.ready(this.clockMillis.getAsLong())
            : watched.warmth.notReady(
                state == ConnectivityState.IDLE, this.clockMillis.getAsLong());
    watched.channel.notifyWhenStateChanged(
        state, () -> observe(watched, watched.channel.getState(false)));
    act(watched, action);
  }

  private void act(Watched watched, Action action) {
    if (this.closed) {
      return;
    }
    switch (action) {
      case CONNECT -> watched.channel.getState(true);
      case PRIME -> prime(watched);
      case REFRESH -> letGo(watched);
      default -> {}
    }
  }

  /**
   * Lets a refreshed channel's connection go: grpc-java's channel goes idle, its calls in flight
   * finishing on the old connection, and its state callback connects it again. Where the channel
   * stays ready (a channel that does not go idle on request), it is primed again on the connection
   * it has, and counted as connected from now.
   */
  private void letGo(Watched watched) {
    watched.channel.enterIdle();
    if (watched.channel.getState(false) == ConnectivityState.READY) {
      act(watched, watched.warmth.ready(this.clockMillis.getAsLong()));
    }
  }

  private void prime(Watched watched) {
    ApiFuture<?> call;
    try {
      call = this.primer.prime(watched.stats);
    } catch (RuntimeException ex) {
      primeFailed(watched);
      return;
    }
    ApiFutures.addCallback(
        call,
        new ApiFutureCallback<Object>() {
          @Override
          public void onSuccess(Object result) {
            watched.warmth.primed(ChannelWarmer.this.clockMillis.getAsLong());
            changed();
          }

          @Override
          public void onFailure(Throwable failure) {
            primeFailed(watched);
          }
        },
        MoreExecutors.directExecutor());
  }

  private void primeFailed(Watched watched) {
    act(watched, watched.warmth.primeFailed(this.clockMillis.getAsLong()));
    changed();
  }

  private void changed() {
    if (this.warmAtMillis < 0 && allWarm()) {
      this.warmAtMillis = this.clockMillis.getAsLong();
    }
    synchronized (this) {
      notifyAll();
    }
  }

  /** A channel watched: its stats, grpc-java's channel and its warmth. */
  record Watched(ChannelStats stats, ManagedChannel channel, ChannelWarmth warmth) {}
}
