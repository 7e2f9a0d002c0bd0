package io.github.spannertuning.pool;

import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.pool.PoolRouting.Naming;
import io.github.spannertuning.pool.PoolRouting.Snapshot;
import io.github.spannertuning.reflect.ClientReflection;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import java.lang.reflect.Method;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The channels of a fixed grpc-gcp pool, each named by an affinity key in the call's context.
 * Before the client makes any call, every key the client can derive from a hint ({@code -(n-1)} to
 * {@code n-1}) is bound, key {@code i} and {@code -i} to channel {@code i}. A key in the context,
 * unlike one in the call options, is not unbound when a call is cancelled (grpc-gcp 1.9.2+ unbinds
 * the call option's key on cancel).
 *
 * <p>The client's own choice is taken off the calls routed here ({@link
 * PoolRouting#withoutChannelHint}). google-cloud-spanner up to 6.113 gives a single-use read a
 * random hint that it turns into an affinity key {@code hint % numChannels}, shared with read/write
 * and read-only transactions: single-use reads then pile onto the few channels those keys were
 * first bound to. 6.119 and later give each one a channel reference of its own ({@code
 * CHANNEL_ID_AFFINITY}), which grpc-gcp sends to its least busy channel. A single-use read needs no
 * stickiness, so either is dropped.
 */
final class FixedChannels extends PoolRouting.Channels {

  private final Snapshot pool;

  private final String[] keys;

  /**
   * grpc-gcp's channel {@code i}, or {@code null} for channels counted without one ({@link #over}).
   */
  private final ManagedChannel[] managed;

  private FixedChannels(ChannelStats[] channels, ManagedChannel[] managed) {
    this.pool = new Snapshot(channels);
    this.managed = managed;
    this.keys = new String[channels.length];
    for (int i = 0; i < channels.length; i++) {
      this.keys[i] = String.valueOf(i);
    }
  }

  /**
   * Binds the client's affinity keys to the channels of a new client's grpc-gcp pool, one channel
   * per key value.
   *
   * @throws IllegalStateException with the reason when this client's pool cannot be set up so
   */
  static FixedChannels install(GcpManagedChannel pool, int numChannels) {
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
    ManagedChannel[] managed = new ManagedChannel[numChannels];
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
      String key = String.valueOf(i);
      Object ref;
      try {
        ref = getChannelRef.invoke(pool, key);
      } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
        throw new IllegalStateException(
            "cannot reach grpc-gcp's channel for key " + key + ": " + ex, ex);
      }
      channels[i] = landing(ref, getChannel);
      managed[i] = managedChannel(ref, getChannel);
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
    return new FixedChannels(channels, managed);
  }

  /** Watches each channel's warmth from now. */
  void watch(ChannelWarmer warmer) {
    if (this.managed == null) {
      throw new IllegalStateException("the channels were counted without grpc-gcp's");
    }
    for (int i = 0; i < this.managed.length; i++) {
      warmer.watch(this.pool.channels[i], this.managed[i], false);
    }
  }

  private static ManagedChannel managedChannel(Object channelRef, Method getChannel) {
    try {
      return (ManagedChannel) getChannel.invoke(channelRef);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot reach a grpc-gcp channel: " + ex, ex);
    }
  }

  /** Channels already counted, channel {@code i} named by the key {@code "i"}. */
  static FixedChannels over(List<ChannelStats> channels) {
    return new FixedChannels(channels.toArray(new ChannelStats[0]), null);
  }

  @Override
  Snapshot current() {
    return this.pool;
  }

  @Override
  boolean unused(Map<Option, ?> options) {
    return true;
  }

  @Override
  Map<Option, ?> options(Snapshot pool, int index, Map<Option, ?> options, Naming naming) {
    return PoolRouting.withoutChannelHint(options);
  }

  @Override
  String key(Snapshot pool, int index) {
    return this.keys[index];
  }

  /**
   * The counted sub-channel of a grpc-gcp channel reference. A probe call is created on that
   * sub-channel itself, below grpc-gcp, so that its counting interceptor names the channel. No
   * grpc-gcp call is made: from grpc-gcp 1.15 a call reserves pool load when it is created and
   * holds it until started or cancelled, and a cancel unbinds its key (1.9.2+) or, on a call never
   * started, drives the channel's count below zero (before 1.15). The raw probe is never started,
   * so it holds no stream.
   *
   * @return the sub-channel's stats, or {@code null} when its calls are not counted
   */
  static ChannelStats landing(Object channelRef, Method getChannel) {
    Channel channel;
    try {
      channel = (Channel) getChannel.invoke(channelRef);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot reach a grpc-gcp channel: " + ex, ex);
    }
    ChannelReservation probe = ChannelReservation.probe();
    Context previous = Context.current().withValue(ChannelReservation.KEY, probe).attach();
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
      List<?> refs = (List<?>) PoolRouting.read(ClientReflection.CHANNEL_REFS, pool);
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
}
