package io.github.spannertuning.client;

import com.google.api.gax.core.BackgroundResource;
import com.google.api.gax.grpc.GrpcTransportChannel;
import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.Context;
import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Chooses the channel of each single-use read by the latency it may expect there, and keeps
 * transactions on theirs.
 *
 * <p>A single-use read needs no stickiness. This picker weighs each channel of the pool by the
 * calls it has in flight plus this one, times the latency its {@link ChannelLatency} expects, and
 * sends the read to a channel within half again of the lowest such cost, the first one met from a
 * random start: channels about equally good share the traffic, and a channel that answers slower,
 * has calls stuck, or failed recently gets less, in proportion. The channel is counted before the
 * pick returns, and the pick is repeated if another thread counted a call on it in between.
 *
 * <p>The channel is named to grpc-gcp by an affinity key in the call's context. Before the client
 * makes any call, every key the client can derive from a hint ({@code -(n-1)} to {@code n-1}) is
 * bound, key {@code i} and {@code -i} to channel {@code i}. On google-cloud-spanner up to 6.113
 * (grpc-gcp 1.9) transactions carry such keys and so stay where the client's own hint sends them:
 * grpc-gcp 1.9 picks the least busy channel in {@code newCall} but counts the stream only in {@code
 * start}, with ties to the lowest channel, and binds a key by a lookup, a pick and a {@code bind}
 * that replaces any binding made in between, so two transactions first using one key at once could
 * otherwise split across two channels. From 6.119 transactions carry a channel reference of their
 * own instead, which grpc-gcp resolves to its least busy channel; single-use reads are taken off
 * that path (see {@link LeastBusyRouting}) and come here.
 */
final class ChannelPicker {

  /** Rescans when another thread took the channel first, before settling for it anyway. */
  private static final int RESERVE_ATTEMPTS = 3;

  /**
   * How far above the lowest cost a channel still counts as about as good, as a right shift: a
   * half. Wide enough that the noise of latency estimates at a few milliseconds per query, on a
   * client short of CPU, does not pin light traffic to the channel that happened to answer fastest;
   * narrow enough that a channel twice as slow, or with twice the calls in flight, is set apart.
   */
  private static final int BAND_SHIFT = 1;

  /**
   * The cost of a suspect channel that already carries a call: above any real cost, low enough that
   * the band above the least cost cannot overflow when every channel is suspect.
   */
  static final long SUSPECT_COST = Long.MAX_VALUE / 4;

  private final ChannelStats[] channels;

  private final String[] keys;

  private ChannelPicker(ChannelStats[] channels, String[] keys) {
    this.channels = channels;
    this.keys = keys;
  }

  /**
   * Binds the client's affinity keys to the channels of a new client's grpc-gcp pool, one channel
   * per key value, and returns a picker over those channels.
   *
   * @throws IllegalStateException with the reason when this client's pool cannot be set up so
   */
  static ChannelPicker install(GapicSpannerRpc rpc, int numChannels, ChannelLoad load) {
    GcpManagedChannel pool = pool(rpc);
    int built = pool.getNumberOfChannels();
    if (built != 0) {
      // grpc-gcp 1.12 with google-cloud-spanner 6.119 builds the whole pool at once.
      if (built != numChannels) {
        throw new IllegalStateException(
            "the grpc-gcp pool has " + built + " channels, not " + numChannels);
      }
      bindKeysToChannels(pool, numChannels);
    }
    ChannelStats[] channels = new ChannelStats[numChannels];
    String[] keys = new String[numChannels];
    Set<ChannelStats> distinct = new HashSet<>();
    Method getChannelRef;
    Method getChannel;
    try {
      getChannelRef = ClientReflection.method(ClientReflection.GET_CHANNEL_REF);
      getChannel = ClientReflection.method(ClientReflection.CHANNEL_REF_GET_CHANNEL);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot reach grpc-gcp's channels: " + ex, ex);
    }
    for (int i = 0; i < numChannels; i++) {
      keys[i] = String.valueOf(i);
      channels[i] = landing(pool, keys[i], getChannelRef, getChannel);
      if (channels[i] == null) {
        throw new IllegalStateException("its channels are not counted");
      }
      distinct.add(channels[i]);
    }
    if (distinct.size() != numChannels) {
      throw new IllegalStateException(
          "grpc-gcp put " + numChannels + " new keys on " + distinct.size() + " channels");
    }
    bindNegativeKeys(pool, numChannels);
    return new ChannelPicker(channels, keys);
  }

  /**
   * A picker over channels already counted by a {@link ChannelLoad}, channel {@code i} named by the
   * affinity key {@code "i"}; for measuring the pick on its own.
   */
  static ChannelPicker over(List<ChannelStats> channels) {
    String[] keys = new String[channels.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = String.valueOf(i);
    }
    return new ChannelPicker(channels.toArray(new ChannelStats[0]), keys);
  }

  /**
   * Attaches a context that sends the next call made on this thread to the channel picked for it,
   * counted from now: grpc-gcp's affinity key for that channel, the reservation for the {@link
   * CountingInterceptor} that sees the call made, which also carries the stream-end guard's stream
   * if there is one, so that a guarded, routed stream attaches one context of two values.
   */
  ChannelReservation enter(GuardedStream stream) {
    long now = System.nanoTime();
    int channel = pick(now);
    Context previous = Context.current();
    ChannelReservation reservation =
        new ChannelReservation(this.channels[channel], stream, previous, now);
    Context next =
        previous.withValues(
            GcpManagedChannel.AFFINITY_CTX_KEY,
            this.keys[channel],
            ChannelReservation.KEY,
            reservation);
    next.attach();
    return reservation;
  }

  /** Restores the caller's context; a reservation no call took is given back. */
  void exit(ChannelReservation reservation) {
    Context.current().detach(reservation.previous());
    reservation.releaseUnclaimed();
  }

  /**
   * What a call sent to {@code channel} now may expect to wait, counting the calls ahead of it: the
   * calls in flight plus this one, times the latency the channel is expected to have; {@link
   * #SUSPECT_COST} while a suspect channel's one call is outstanding.
   */
  static long cost(ChannelStats channel, long nowNanos) {
    int outstanding = channel.activeStreams();
    ChannelLatency latency = channel.latency();
    if (outstanding > 0 && latency.suspect()) {
      return SUSPECT_COST;
    }
    return (outstanding + 1L) * latency.expectedNanos(nowNanos, outstanding);
  }

  /** The channel for a call made at {@code now}, counted on it before this returns. */
  int pick(long now) {
    ChannelStats[] channels = this.channels;
    int n = channels.length;
    for (int attempt = 1; ; attempt++) {
      long least = Long.MAX_VALUE;
      for (ChannelStats channel : channels) {
        least = Math.min(least, cost(channel, now));
      }
      long good = least + (least >> BAND_SHIFT);
      int start = ThreadLocalRandom.current().nextInt(n);
      int best = start;
      for (int k = 0; k < n; k++) {
        int i = (start + k < n) ? start + k : start + k - n;
        if (cost(channels[i], now) <= good) {
          best = i;
          break;
        }
      }
      if (channels[best].tryCountCall(channels[best].activeStreams(), now)) {
        return best;
      }
      if (attempt == RESERVE_ATTEMPTS) {
        channels[best].countCall(now);
        return best;
      }
    }
  }

  /**
   * Where grpc-gcp sends a call with this affinity key, binding the key on the way if it is new.
   * grpc-gcp's own {@code getChannelRef(key)} makes the choice and the binding, as its {@code
   * newCall} does; the probe call is then created on that sub-channel itself, below grpc-gcp, so
   * that its counting interceptor names the channel. No grpc-gcp call is made: from grpc-gcp 1.15 a
   * call reserves pool load when it is created and holds it until started or cancelled, and a
   * cancel unbinds its key (1.9.2+) or, on a call never started, drives the channel's count below
   * zero (before 1.15). The raw probe is never started, so it holds no stream.
   */
  private static ChannelStats landing(
      GcpManagedChannel pool, String key, Method getChannelRef, Method getChannel) {
    Channel channel;
    try {
      channel = (Channel) getChannel.invoke(getChannelRef.invoke(pool, key));
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException(
          "cannot reach grpc-gcp's channel for key " + key + ": " + ex, ex);
    }
    Context previous = Context.current();
    ChannelReservation probe = new ChannelReservation(null, null, previous, 0);
    previous.withValue(ChannelReservation.KEY, probe).attach();
    try {
      channel.newCall(SpannerGrpc.getExecuteStreamingSqlMethod(), CallOptions.DEFAULT);
    } finally {
      Context.current().detach(previous);
    }
    return probe.landed();
  }

  /**
   * Binds key {@code i} to the pool's channel {@code i}, in a pool whose channels exist before its
   * first call: a new key would go wherever grpc-gcp's power-of-two pick sends it.
   */
  private static void bindKeysToChannels(GcpManagedChannel pool, int numChannels) {
    try {
      Method bind = ClientReflection.method(ClientReflection.BIND);
      List<?> refs = (List<?>) read(ClientReflection.CHANNEL_REFS, pool);
      for (int i = 0; i < numChannels; i++) {
        bind.invoke(pool, refs.get(i), List.of(String.valueOf(i)));
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot bind grpc-gcp affinity keys: " + ex, ex);
    }
  }

  /**
   * {@code hint % numChannels} is negative for the half of the client's random hints whose low 32
   * bits are. grpc-gcp has no public way to bind a key to a given channel, and once the pool is
   * full a new key goes to the least busy one, so these are bound through its protected methods.
   */
  private static void bindNegativeKeys(GcpManagedChannel pool, int numChannels) {
    try {
      Method getChannelRef = ClientReflection.method(ClientReflection.GET_CHANNEL_REF);
      Method bind = ClientReflection.method(ClientReflection.BIND);
      for (int i = 1; i < numChannels; i++) {
        Object ref = getChannelRef.invoke(pool, String.valueOf(i));
        bind.invoke(pool, ref, List.of(String.valueOf(-i)));
        if (getChannelRef.invoke(pool, String.valueOf(-i)) != ref) {
          throw new IllegalStateException("grpc-gcp did not keep the binding of key " + -i);
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot bind grpc-gcp affinity keys: " + ex, ex);
    }
  }

  /** The grpc-gcp pool behind the client's data stub (not the admin or partitioned DML ones). */
  static GcpManagedChannel pool(GapicSpannerRpc rpc) {
    try {
      Object stub = read(ClientReflection.RPC_SPANNER_STUB, rpc);
      Object resources = read(ClientReflection.STUB_BACKGROUND_RESOURCES, stub);
      @SuppressWarnings("unchecked")
      List<BackgroundResource> list =
          (List<BackgroundResource>) read(ClientReflection.AGGREGATION_RESOURCES, resources);
      for (BackgroundResource resource : list) {
        if (resource instanceof GrpcTransportChannel transport) {
          Channel channel = transport.getChannel();
          if (channel instanceof GcpManagedChannel gcp) {
            return gcp;
          }
          // gax wraps the channel in its own pool (of one, with grpc-gcp).
          AtomicReference<?> entries =
              (AtomicReference<?>) read(ClientReflection.CHANNEL_POOL_ENTRIES, channel);
          List<?> entryList = (List<?>) entries.get();
          if (entryList.size() == 1) {
            Object entry = entryList.get(0);
            if (read(ClientReflection.CHANNEL_POOL_ENTRY_CHANNEL, entry)
                instanceof GcpManagedChannel gcp) {
              return gcp;
            }
          }
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot find the client's grpc-gcp pool: " + ex, ex);
    }
    throw new IllegalStateException("cannot find the client's grpc-gcp pool");
  }

  private static Object read(ClientReflection.Member member, Object target)
      throws ReflectiveOperationException {
    return ClientReflection.field(member).get(target);
  }
}
