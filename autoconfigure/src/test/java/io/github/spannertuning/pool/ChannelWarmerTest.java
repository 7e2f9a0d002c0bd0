package io.github.spannertuning.pool;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.api.core.ApiFutures;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.routing.ChannelWarmth.State;
import io.github.spannertuning.routing.ConnectionRefresh;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@link ChannelWarmer} over channels whose connectivity the test drives and a primer that counts
 * its calls: which channel is primed, and when. The decisions themselves are {@code
 * ChannelWarmthTest}'s; this is the hook that carries them out for every channel it watches.
 */
class ChannelWarmerTest {

  private final AtomicLong clock = new AtomicLong(1_000);

  private final ChannelWarmer warmer = new ChannelWarmer(this.clock::get, ConnectionRefresh.off());

  private final List<ChannelStats> primed = new ArrayList<>();

  private void sessionKnown() {
    this.warmer.sessionKnown(
        (channel) -> {
          this.primed.add(channel);
          return ApiFutures.immediateFuture(null);
        });
  }

  /** The channels of the start connect, and are primed once the first session is known. */
  @Test
  void channelsOfTheStartArePrimedOnceASessionIsKnown() {
    ChannelStats first = new ChannelStats(0);
    TestChannel channel = new TestChannel();
    this.warmer.watch(first, channel, false);
    assertThat(channel.connectRequested).as("asked to connect when watched").isTrue();
    channel.become(ConnectivityState.READY);
    assertThat(this.primed).as("no session yet").isEmpty();
    assertThat(first.warmth().state()).isEqualTo(State.CONNECTED);

    sessionKnown();

    assertPrimedOnceAndWarm(first);
  }

  /**
   * A channel a dynamic pool adds after the first session (grpc-gcp 1.12's pool, which does not
   * prime the channels it adds) is primed as soon as it connects, and then takes reads: it is not
   * left connected and cold, which routing would keep away from while any warm channel has room.
   */
  @Test
  void aChannelAddedAfterTheSessionIsKnownIsPrimedOnceItConnects() {
    ChannelStats added = new ChannelStats(4);
    TestChannel channel = addedAfterTheSession(added, ConnectivityState.IDLE, false);
    assertThat(this.primed).as("not connected yet").isEmpty();

    channel.become(ConnectivityState.CONNECTING);
    channel.become(ConnectivityState.READY);

    assertPrimedOnceAndWarm(added);
  }

  /** Added already connected, after the session: primed at once, once. */
  @Test
  void aConnectedChannelAddedAfterTheSessionIsKnownIsPrimedAtOnce() {
    ChannelStats added = new ChannelStats(5);
    addedAfterTheSession(added, ConnectivityState.READY, false);

    assertPrimedOnceAndWarm(added);
  }

  /** A channel the pool primed itself before it added it (grpc-gcp 1.20) is not primed again. */
  @Test
  void aChannelThePoolPrimedIsWarmOnceConnectedWithNoCallOfOurs() {
    ChannelStats added = new ChannelStats(6);
    addedAfterTheSession(added, ConnectivityState.IDLE, true).become(ConnectivityState.READY);

    assertThat(this.primed).isEmpty();
    assertThat(added.warmth().isWarm()).isTrue();
  }

  /** A session is known, then the pool adds a channel in {@code state}, watched from then. */
  private TestChannel addedAfterTheSession(
      ChannelStats added, ConnectivityState state, boolean primedByPool) {
    sessionKnown();
    TestChannel channel = new TestChannel();
    channel.state = state;
    this.warmer.watch(added, channel, primedByPool);
    return channel;
  }

  /** The channel was primed once, no other was, and it takes reads. */
  private void assertPrimedOnceAndWarm(ChannelStats channel) {
    assertThat(this.primed).containsExactly(channel);
    assertThat(channel.warmth().state()).isEqualTo(State.WARM);
    assertThat(channel.connection().isCold()).isFalse();
  }

  /** A channel whose connectivity the test sets, calling back as grpc-java's does. */
  private static final class TestChannel extends ManagedChannel {

    ConnectivityState state = ConnectivityState.IDLE;

    boolean connectRequested;

    private final List<Runnable> callbacks = new ArrayList<>();

    void become(ConnectivityState next) {
      this.state = next;
      List<Runnable> due = new ArrayList<>(this.callbacks);
      this.callbacks.clear();
      due.forEach(Runnable::run);
    }

    @Override
    public ConnectivityState getState(boolean requestConnection) {
      this.connectRequested |= requestConnection;
      return this.state;
    }

    @Override
    public void notifyWhenStateChanged(ConnectivityState source, Runnable callback) {
      if (source != this.state) {
        callback.run();
      } else {
        this.callbacks.add(callback);
      }
    }

    @Override
    public ManagedChannel shutdown() {
      return this;
    }

    @Override
    public boolean isShutdown() {
      return false;
    }

    @Override
    public boolean isTerminated() {
      return false;
    }

    @Override
    public ManagedChannel shutdownNow() {
      return this;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return true;
    }

    @Override
    public <RequestT, ResponseT> ClientCall<RequestT, ResponseT> newCall(
        MethodDescriptor<RequestT, ResponseT> method, CallOptions options) {
      throw new UnsupportedOperationException("no call goes through a warmer's channel here");
    }

    @Override
    public String authority() {
      return "test";
    }
  }
}
