package io.github.spannertuning.pool;

import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.grpc.Context;
import java.util.Map;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * One pick of routing's picker, open while the call it was made for is being created on this
 * thread: the channel counted for the call, the options to make the call with, and the context that
 * hands the reservation to the {@link CountingInterceptor} of the sub-channel the call really lands
 * on. The picker counts the call on its channel before the call exists, so that concurrent picks
 * see each other; the interceptor takes that count over (moving it if grpc-gcp sent the call
 * elsewhere), and {@link #close()} gives it back if no call took it.
 *
 * <pre>{@code
 * try (ChannelReservation reservation = routing.reserve(options, stream)) {
 *   return client.executeQuery(request, consumer, reservation.options(), ...);
 * }
 * }</pre>
 *
 * <p>Claimed by the first call made under it, so a call made later in the same context is counted
 * normally. A probe ({@code reserved} {@code null}) counts nothing and only learns where a call
 * would land.
 */
public final class ChannelReservation implements AutoCloseable {

  /**
   * The reservation for the call about to be made on this thread. The interceptor runs inside
   * grpc-gcp's {@code newCall}, on the thread that picked.
   */
  public static final Context.Key<ChannelReservation> KEY = Context.key("spanner-tuning-routing");

  private static final AtomicIntegerFieldUpdater<ChannelReservation> CLAIMED =
      AtomicIntegerFieldUpdater.newUpdater(ChannelReservation.class, "claimed");

  private final ChannelStats reserved;

  private final StreamLink stream;

  private final long pickedAtNanos;

  private final Map<Option, ?> options;

  private final String route;

  private Context attached;

  private Context previous;

  /** 1 once a call, or the caller giving the reservation back, has taken this pick. */
  private volatile int claimed;

  private volatile ChannelStats landed;

  ChannelReservation(
      ChannelStats reserved,
      StreamLink stream,
      long pickedAtNanos,
      Map<Option, ?> options,
      String route) {
    this.reserved = reserved;
    this.stream = stream;
    this.pickedAtNanos = pickedAtNanos;
    this.options = options;
    this.route = route;
  }

  /** A probe: learns where a call made under it lands, and counts nothing. */
  static ChannelReservation probe() {
    return new ChannelReservation(null, null, 0, null, null);
  }

  /**
   * Attaches this reservation to the current thread's context, with grpc-gcp's affinity key {@code
   * key} unless {@code null}.
   */
  ChannelReservation attach(String key) {
    Context previous = Context.current();
    Context next =
        (key != null)
            ? previous.withValues(GcpManagedChannel.AFFINITY_CTX_KEY, key, KEY, this)
            : previous.withValue(KEY, this);
    this.previous = next.attach();
    this.attached = next;
    return this;
  }

  /** The channel counted at the pick; {@code null} for a probe. */
  public ChannelStats reserved() {
    return this.reserved;
  }

  /** The options to make the call with. */
  public Map<Option, ?> options() {
    return this.options;
  }

  /**
   * How the channel was chosen, as a span names it: {@link
   * io.github.spannertuning.trace.Traces#LATENCY} or {@link
   * io.github.spannertuning.trace.Traces#TRANSACTION}.
   */
  public String route() {
    return this.route;
  }

  /** The guarded stream the call is the first attempt of, or {@code null}. */
  public StreamLink stream() {
    return this.stream;
  }

  /** When the pick was made, from which the call is timed. */
  long pickedAtNanos() {
    return this.pickedAtNanos;
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

  /**
   * Restores the caller's context; the count is given back if no call claimed it (the client failed
   * before its call).
   */
  @Override
  public void close() {
    this.attached.detach(this.previous);
    if (this.reserved != null && CLAIMED.compareAndSet(this, 0, 1)) {
      this.reserved.connection().uncountCall();
    }
  }
}
