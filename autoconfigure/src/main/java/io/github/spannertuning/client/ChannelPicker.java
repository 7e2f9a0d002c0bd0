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
 * Chooses the channel of each single-use read and of each transaction's first call by the latency
 * it may expect there, and keeps the rest of a transaction on the channel its first call took.
 *
 * <p>A Spanner frontend serves the streams of one connection in parallel, up to its stream limit: a
 * call on a connection with a few others in flight takes about as long as one on an idle
 * connection. So latency decides, as in Prequal ("Load is not what you should balance", NSDI 2024),
 * and calls in flight set channels apart only where they say something of the wait:
 *
 * <ol>
 *   <li>A channel takes no call while it has no room (its calls in flight reached the stream limit
 *       less the stream-end guard's margin), or while it carries a call and what is known of it is
 *       in doubt: its last call failed, or its estimate has not been updated for a half-life and is
 *       being forgotten. That is how a channel left alone because it was slow, stuck or failing is
 *       tried again with one call at a time, and found again once it recovers.
 *   <li>A channel is hot while it carries half again as many calls as the pool's mean, and at least
 *       one more: an estimate that happens to be low, or a channel no answer has measured yet, does
 *       not draw every call until it is full.
 *   <li>Among the other channels, the latency each one's {@link ChannelLatency} expects decides: a
 *       call goes to the channel with the fewest calls in flight among those expected within a
 *       quarter above the least, the first one met from a random start among equals. A channel that
 *       answers slower, has calls stuck, or failed recently gets none while the others are about as
 *       fast and have room.
 *   <li>When every channel is hot, full or in doubt, the one with the fewest calls in flight takes
 *       the call, a failed one last.
 * </ol>
 *
 * <p>The channel is counted before the pick returns, and the pick is repeated if another thread
 * counted a call on it in between.
 *
 * <p>The channel is named to grpc-gcp by an affinity key in the call's context. Before the client
 * makes any call, every key the client can derive from a hint ({@code -(n-1)} to {@code n-1}) is
 * bound, key {@code i} and {@code -i} to channel {@code i}. A key in the context, unlike one in the
 * call options, is not unbound when a call is cancelled (grpc-gcp 1.9.2+ unbinds the call option's
 * key on cancel). The client's own choice (a channel hint up to 6.113, a channel reference per
 * transaction from 6.119) is taken off the calls routed here (see {@link LeastBusyRouting}).
 */
final class ChannelPicker {

  /** Rescans when another thread took the channel first, before settling for it anyway. */
  private static final int RESERVE_ATTEMPTS = 3;

  /** The expected latency of a channel that takes no call now unless every channel is like it. */
  static final long CLOSED = -1;

  /** Ranks a failed channel that still carries a call after every other in the fallback pick. */
  private static final long FAILED_RANK = 1L << 32;

  private final ChannelStats[] channels;

  private final String[] keys;

  private final Rule rule;

  private ChannelPicker(ChannelStats[] channels, String[] keys, Rule rule) {
    this.channels = channels;
    this.keys = keys;
    this.rule = rule;
  }

  /**
   * The constants of the pick.
   *
   * @param room the calls in flight a channel may carry before it counts as full: the stream limit
   *     less the stream-end guard's margin
   * @param hotShift how far above the pool's mean calls in flight a channel counts as hot, as a
   *     right shift of the mean: 1 is half again
   * @param bandShift how far above the least expected latency a channel still counts as about as
   *     fast, as a right shift: 1 is half again
   */
  record Rule(int room, int hotShift, int bandShift) {

    /**
     * Hot at half again the mean, a band of a quarter: chosen from the routing benchmark's
     * concurrency sweep (docs/benchmarking.md). The band is wide enough that the noise of estimates
     * at a few milliseconds per query does not pin traffic to the channel that happened to answer
     * fastest, and narrow enough that a connection twice as slow on the server stays out of it on a
     * client short of CPU, whose own queueing, added to every answer, brings the estimates closer.
     * Within the band the fewest calls in flight decide, and a channel left alone has the fewest: a
     * wider band lets a slower channel draw every call until it carries as many as the others.
     */
    static Rule defaults(int room) {
      return new Rule(room, 1, 2);
    }
  }

  /**
   * Binds the client's affinity keys to the channels of a new client's grpc-gcp pool, one channel
   * per key value, and returns a picker over those channels.
   *
   * @throws IllegalStateException with the reason when this client's pool cannot be set up so
   */
  static ChannelPicker install(GapicSpannerRpc rpc, int numChannels, Rule rule) {
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
    return new ChannelPicker(channels, keys, rule);
  }

  /**
   * A picker over channels already counted by a {@link ChannelLoad}, channel {@code i} named by the
   * affinity key {@code "i"}; for measuring the pick on its own.
   */
  static ChannelPicker over(List<ChannelStats> channels, Rule rule) {
    String[] keys = new String[channels.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = String.valueOf(i);
    }
    return new ChannelPicker(channels.toArray(new ChannelStats[0]), keys, rule);
  }

  /**
   * Attaches a context that sends the next call made on this thread to the channel picked for it,
   * counted from now: grpc-gcp's affinity key for that channel, the reservation for the {@link
   * CountingInterceptor} that sees the call made, which also carries the stream-end guard's stream
   * if there is one, so that a guarded, routed stream attaches one context of two values.
   */
  ChannelReservation enter(GuardedStream stream) {
    long now = System.nanoTime();
    return attach(pick(now), stream, now);
  }

  /**
   * As {@link #enter}, for a call that must go to {@code channel}, one of this picker's: a later
   * call of a transaction whose first call was routed there.
   */
  ChannelReservation enterOn(ChannelStats channel, GuardedStream stream) {
    long now = System.nanoTime();
    ChannelStats[] channels = this.channels;
    int index = 0;
    while (channels[index] != channel) {
      index++;
    }
    channel.countCall(now);
    return attach(index, stream, now);
  }

  private ChannelReservation attach(int channel, GuardedStream stream, long now) {
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
   * What a call sent to {@code channel} now may expect to take: the latency its estimate expects;
   * {@link #CLOSED} while the channel has no room, or carries a call while what is known of it is
   * in doubt.
   */
  static long expected(ChannelStats channel, long nowNanos, Rule rule) {
    int inFlight = channel.activeStreams();
    if (inFlight >= rule.room()) {
      return CLOSED;
    }
    ChannelLatency latency = channel.latency();
    if (inFlight > 0 && (latency.suspect() || latency.unverified(nowNanos))) {
      return CLOSED;
    }
    return latency.expectedNanos(nowNanos, inFlight);
  }

  /**
   * Whether a channel with {@code inFlight} calls is hot in a pool of {@code n} channels carrying
   * {@code total}: above the mean by more than the rule's share of it, and by more than one.
   */
  private static boolean hot(int inFlight, int n, long total, Rule rule) {
    return (long) n * inFlight > total + Math.max(n, total >> rule.hotShift());
  }

  /** The channel for a call made at {@code now}, counted on it before this returns. */
  int pick(long now) {
    ChannelStats[] channels = this.channels;
    Rule rule = this.rule;
    int n = channels.length;
    for (int attempt = 1; ; attempt++) {
      long total = 0;
      for (ChannelStats channel : channels) {
        total += channel.activeStreams();
      }
      long least = Long.MAX_VALUE;
      for (ChannelStats channel : channels) {
        long expected = expected(channel, now, rule);
        if (expected != CLOSED
            && expected < least
            && !hot(channel.activeStreams(), n, total, rule)) {
          least = expected;
        }
      }
      int start = ThreadLocalRandom.current().nextInt(n);
      int best = -1;
      int bestInFlight = Integer.MAX_VALUE;
      if (least != Long.MAX_VALUE) {
        long good = least + (least >> rule.bandShift());
        for (int k = 0; k < n; k++) {
          int i = (start + k < n) ? start + k : start + k - n;
          long expected = expected(channels[i], now, rule);
          int inFlight = channels[i].activeStreams();
          if (expected != CLOSED
              && expected <= good
              && inFlight < bestInFlight
              && !hot(inFlight, n, total, rule)) {
            best = i;
            bestInFlight = inFlight;
          }
        }
      }
      if (best < 0) {
        long bestRank = Long.MAX_VALUE;
        for (int k = 0; k < n; k++) {
          int i = (start + k < n) ? start + k : start + k - n;
          int inFlight = channels[i].activeStreams();
          long rank =
              (inFlight > 0 && channels[i].latency().suspect()) ? FAILED_RANK + inFlight : inFlight;
          if (rank < bestRank) {
            best = i;
            bestRank = rank;
            bestInFlight = inFlight;
          }
        }
      }
      if (channels[best].tryCountCall(bestInFlight, now)) {
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
