package io.github.spannertuning.client;

import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import io.grpc.Context;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * One pick of routing's picker: the channel counted for the call about to be made, handed to the
 * {@link CountingInterceptor} of the sub-channel the call really lands on through {@link #KEY}. The
 * picker counts the call on its channel before the call exists, so that concurrent picks see each
 * other; the interceptor takes that count over (moving it if grpc-gcp sent the call elsewhere), and
 * the picker gives it back if no call took it.
 *
 * <p>Claimed by the first call made under it, so a call made later in the same context is counted
 * normally. A probe ({@code reserved} {@code null}) counts nothing and only learns where a call
 * would land.
 */
final class ChannelReservation {

  /**
   * The reservation for the call about to be made on this thread. The interceptor runs inside
   * grpc-gcp's {@code newCall}, on the thread that picked.
   */
  static final Context.Key<ChannelReservation> KEY = Context.key("spanner-tuning-routing");

  private static final AtomicIntegerFieldUpdater<ChannelReservation> CLAIMED =
      AtomicIntegerFieldUpdater.newUpdater(ChannelReservation.class, "claimed");

  private final ChannelStats reserved;

  private final GuardedStream stream;

  private final Context previous;

  private final long pickedAtNanos;

  /** 1 once a call, or the caller giving the reservation back, has taken this pick. */
  private volatile int claimed;

  private volatile ChannelStats landed;

  ChannelReservation(
      ChannelStats reserved, GuardedStream stream, Context previous, long pickedAtNanos) {
    this.reserved = reserved;
    this.stream = stream;
    this.previous = previous;
    this.pickedAtNanos = pickedAtNanos;
  }

  /** The channel counted at the pick; {@code null} for a probe. */
  ChannelStats reserved() {
    return this.reserved;
  }

  /** The guarded stream the call is the first attempt of, or {@code null}. */
  GuardedStream stream() {
    return this.stream;
  }

  /** When the pick was made, from which the call is timed. */
  long pickedAtNanos() {
    return this.pickedAtNanos;
  }

  /** The context to restore once the call is made. */
  Context previous() {
    return this.previous;
  }

  /** The sub-channel the claiming call was created on. */
  ChannelStats landed() {
    return this.landed;
  }

  /**
   * Takes this pick for the call being created on {@code stats}; false if a call took it already.
   */
  boolean claim(ChannelStats stats) {
    if (CLAIMED.compareAndSet(this, 0, 1)) {
      this.landed = stats;
      return true;
    }
    return false;
  }

  /** Gives the reservation back if no call claimed it (the client failed before its call). */
  void releaseUnclaimed() {
    if (this.reserved != null && CLAIMED.compareAndSet(this, 0, 1)) {
      this.reserved.connection().uncountCall();
    }
  }
}
