package io.github.spannertuning.client;

import com.google.api.gax.core.BackgroundResource;
import com.google.api.gax.grpc.GrpcTransportChannel;
import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import io.github.spannertuning.client.ChannelLoad.Routing;
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
 * Chooses the channel of single-use reads, and keeps transactions on theirs, on clients where
 * grpc-gcp's own choice falls short (google-cloud-spanner up to 6.113 with grpc-gcp 1.9).
 *
 * <p>Two things in grpc-gcp 1.9 are behind this. Its least-busy pick happens in {@code newCall}
 * but the stream is counted only in {@code start}, and ties go to the lowest channel: concurrent
 * picks all see the same idle channel. And an affinity key is bound on its first use, by a
 * lookup, a pick and a {@code bind} that replaces any binding made in between: two transactions
 * that first use the same key {@code hint % numChannels} at the same time both bind it, and the
 * one whose binding lost sends its first call to one channel and the rest to another.
 *
 * <p>So, before the client makes any call, every key the client can derive from a hint ({@code
 * -(n-1)} to {@code n-1}) is bound, key {@code i} and {@code -i} to channel {@code i}; nothing in
 * grpc-gcp 1.9 moves a bound key. Transactions then stay where the client's own hint sends them.
 * Single-use reads carry no hint; this picker chooses their channel from the in-flight and call
 * counts the {@link ChannelLoad} interceptor keeps (see {@link #pick()}), names that channel's key
 * in the call's context, and counts the call at the pick.
 */
final class ChannelPicker {

  /** Rescans when another thread took the channel first, before settling for it anyway. */
  private static final int RESERVE_ATTEMPTS = 3;

  /** How many more calls in flight than the least busy channel still count as about as busy. */
  private static final int SLACK = 2;

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
    if (pool.getNumberOfChannels() != 0) {
      throw new IllegalStateException("the grpc-gcp pool had channels before the first call");
    }
    ChannelStats[] channels = new ChannelStats[numChannels];
    String[] keys = new String[numChannels];
    Set<ChannelStats> distinct = new HashSet<>();
    for (int i = 0; i < numChannels; i++) {
      keys[i] = String.valueOf(i);
      channels[i] = landing(pool, keys[i]);
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
   * Attaches a context that sends the next call made on this thread to the least busy channel,
   * counted from now.
   */
  Routing enter() {
    int channel = pick();
    Context previous = Context.current();
    Routing routing = new Routing(this.channels[channel], previous);
    previous
        .withValues(
            GcpManagedChannel.AFFINITY_CTX_KEY, this.keys[channel], ChannelLoad.ROUTING, routing)
        .attach();
    return routing;
  }

  /** Restores the caller's context; a reservation no call took is given back. */
  void exit(Routing routing) {
    Context.current().detach(routing.previous());
    routing.releaseUnclaimed();
  }

  /**
   * Among the channels with at most {@value #SLACK} calls more in flight than the least busy one,
   * the one that has carried the fewest calls; the rest of a tie is broken by where the scan
   * starts, at random. In-flight counts decide between a channel that is slow or overloaded and
   * the others; call counts decide among channels about equally busy, which keeps light traffic
   * (every channel idle at each pick) going round them all and keeps bursts even where in-flight
   * counts differ by a call or two from moment to moment (with only the in-flight counts, bursts
   * at 2 to 5 ms of server time gave busiest/mean up to 1.65 on two busy cores). The channel is
   * counted before the pick returns, and the pick is repeated if another thread counted a call on
   * it in between.
   */
  private int pick() {
    ChannelStats[] channels = this.channels;
    int n = channels.length;
    int start = ThreadLocalRandom.current().nextInt(n);
    for (int attempt = 1; ; attempt++) {
      int least = Integer.MAX_VALUE;
      for (ChannelStats channel : channels) {
        least = Math.min(least, channel.activeStreams());
      }
      int best = -1;
      int bestLoad = 0;
      long bestCalls = Long.MAX_VALUE;
      for (int k = 0; k < n; k++) {
        int i = (start + k < n) ? start + k : start + k - n;
        int load = channels[i].activeStreams();
        long calls = channels[i].calls();
        if (load <= least + SLACK && calls < bestCalls) {
          best = i;
          bestLoad = load;
          bestCalls = calls;
        }
      }
      if (best < 0) {
        best = start;
        bestLoad = channels[start].activeStreams();
      }
      if (channels[best].tryReserve(bestLoad)) {
        return best;
      }
      if (attempt == RESERVE_ATTEMPTS) {
        channels[best].reserve();
        return best;
      }
    }
  }

  /**
   * Where grpc-gcp sends a call with this affinity key, binding the key on the way if it is new.
   * The call is created, never started.
   */
  private static ChannelStats landing(GcpManagedChannel pool, String key) {
    Context previous = Context.current();
    Routing probe = new Routing(null, previous);
    previous.withValue(ChannelLoad.ROUTING, probe).attach();
    try {
      pool.newCall(
          SpannerGrpc.getExecuteStreamingSqlMethod(),
          CallOptions.DEFAULT.withOption(GcpManagedChannel.AFFINITY_KEY, key));
    } finally {
      Context.current().detach(previous);
    }
    return probe.landed();
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
  private static GcpManagedChannel pool(GapicSpannerRpc rpc) {
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
