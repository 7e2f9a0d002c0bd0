package io.github.spannertuning.client;

import com.google.api.gax.core.BackgroundResource;
import com.google.api.gax.grpc.GrpcTransportChannel;
import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.spanner.v1.SpannerGrpc;
import com.google.spanner.v1.TransactionSelector;
import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import io.github.spannertuning.routing.ChannelPicker;
import io.github.spannertuning.routing.Connection;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.Context;
import java.lang.reflect.Method;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Sends each call routing chooses a channel for to that channel of the client's grpc-gcp pool: the
 * wiring around routing's {@link ChannelPicker}, which makes the choice.
 *
 * <p>The channel is named to grpc-gcp by an affinity key in the call's context. Before the client
 * makes any call, every key the client can derive from a hint ({@code -(n-1)} to {@code n-1}) is
 * bound, key {@code i} and {@code -i} to channel {@code i}. A key in the context, unlike one in the
 * call options, is not unbound when a call is cancelled (grpc-gcp 1.9.2+ unbinds the call option's
 * key on cancel).
 *
 * <p>The client's own choice is taken off the calls routed here ({@link #withoutChannelHint}).
 * google-cloud-spanner up to 6.113 gives a single-use read a random hint that it turns into an
 * affinity key {@code hint % numChannels}, shared with read/write and read-only transactions:
 * single-use reads then pile onto the few channels those keys were first bound to. 6.119 and later
 * give each one a channel reference of its own ({@code CHANNEL_ID_AFFINITY}), which grpc-gcp sends
 * to its least busy channel. A single-use read needs no stickiness, so either is dropped.
 */
final class PoolRouting {

  /** {@code CHANNEL_ID_AFFINITY}, or {@code null} in clients before 6.119, which lack it. */
  private static final Option CHANNEL_REFERENCE = channelReferenceOption();

  /** The options by which the client chooses a call's channel, those of this client version. */
  private static final Option[] CHANNEL_OPTIONS =
      (CHANNEL_REFERENCE != null)
          ? new Option[] {Option.CHANNEL_HINT, CHANNEL_REFERENCE}
          : new Option[] {Option.CHANNEL_HINT};

  private static final Map<Option, ?> NO_OPTIONS = Map.of();

  private final ChannelStats[] channels;

  private final String[] keys;

  private final ChannelPicker picker;

  private PoolRouting(ChannelStats[] channels, String[] keys, ChannelPicker.Rule rule) {
    this.channels = channels;
    this.keys = keys;
    Connection[] connections = new Connection[channels.length];
    for (int i = 0; i < channels.length; i++) {
      connections[i] = channels[i].connection();
    }
    this.picker = new ChannelPicker(connections, rule);
  }

  /**
   * Binds the client's affinity keys to the channels of a new client's grpc-gcp pool, one channel
   * per key value, and returns a picker over those channels.
   *
   * @throws IllegalStateException with the reason when this client's pool cannot be set up so
   */
  static PoolRouting install(GapicSpannerRpc rpc, int numChannels, ChannelPicker.Rule rule) {
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
    return new PoolRouting(channels, keys, rule);
  }

  /**
   * A picker over channels already counted by a {@link ChannelLoad}, channel {@code i} named by the
   * affinity key {@code "i"}; for measuring the pick on its own.
   */
  static PoolRouting over(List<ChannelStats> channels, ChannelPicker.Rule rule) {
    String[] keys = new String[channels.size()];
    for (int i = 0; i < keys.length; i++) {
      keys[i] = String.valueOf(i);
    }
    return new PoolRouting(channels.toArray(new ChannelStats[0]), keys, rule);
  }

  /**
   * Attaches a context that sends the next call made on this thread to the channel picked for it,
   * counted from now: grpc-gcp's affinity key for that channel, the reservation for the {@link
   * CountingInterceptor} that sees the call made, which also carries the stream-end guard's stream
   * if there is one, so that a guarded, routed stream attaches one context of two values.
   */
  ChannelReservation enter(GuardedStream stream) {
    long now = System.nanoTime();
    return attach(this.picker.pick(now), stream, now);
  }

  /**
   * As {@link #enter}, for a call that must go to {@code channel}, one of this picker's: a later
   * call of a transaction whose first call was routed there.
   */
  ChannelReservation enterOn(Connection channel, GuardedStream stream) {
    long now = System.nanoTime();
    channel.countCall(now);
    ChannelStats[] channels = this.channels;
    int index = 0;
    while (channels[index].connection() != channel) {
      index++;
    }
    return attach(index, stream, now);
  }

  /**
   * As {@link #enter}, for a hedge of a call that went to {@code first}: the best channel but that
   * one, which a pool of one has no other than.
   */
  ChannelReservation enterExcept(ChannelStats first, GuardedStream stream) {
    long now = System.nanoTime();
    return attach(this.picker.pickExcept(indexOf(first), now), stream, now);
  }

  /** The channel for a call made now, counted on it; for measuring the pick on its own. */
  int pick(long now) {
    return this.picker.pick(now);
  }

  private int indexOf(ChannelStats channel) {
    ChannelStats[] channels = this.channels;
    for (int i = 0; i < channels.length; i++) {
      if (channels[i] == channel) {
        return i;
      }
    }
    return -1;
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

  /**
   * Whether a request runs in a single-use read-only transaction. Strong single-use reads may carry
   * no transaction selector at all.
   */
  static boolean isSingleUse(boolean hasTransaction, TransactionSelector selector) {
    return !hasTransaction || (selector.hasSingleUse() && selector.getSingleUse().hasReadOnly());
  }

  /**
   * The options without the client's channel choice. A single-use read's options usually hold
   * nothing else, and then no copy is made.
   */
  static Map<Option, ?> withoutChannelHint(Map<Option, ?> options) {
    if (options == null) {
      return null;
    }
    int channelOptions = 0;
    for (Option option : CHANNEL_OPTIONS) {
      if (options.containsKey(option)) {
        channelOptions++;
      }
    }
    if (channelOptions == 0) {
      return options;
    }
    if (channelOptions == options.size()) {
      return NO_OPTIONS;
    }
    Map<Option, Object> copy = new EnumMap<>(Option.class);
    copy.putAll(options);
    for (Option option : CHANNEL_OPTIONS) {
      copy.remove(option);
    }
    return copy;
  }

  /** Whether this client version chooses channels by a reference per call (6.119 and later). */
  static boolean hasChannelReferences() {
    return CHANNEL_REFERENCE != null;
  }

  /** The session hints of clients up to 6.113 run from 0 to this, exclusive. */
  static final long SESSION_HINTS = 256;

  /**
   * The object that names the transaction a call belongs to, or {@code null} if none does:
   * routing's {@link io.github.spannertuning.routing.TransactionTable} key. The client gives every
   * call of one transaction the same object in its options: a channel hint ({@code Long}) up to
   * google-cloud-spanner 6.113, a grpc-gcp {@code ChannelAffinityRef} from 6.119 while grpc-gcp is
   * on.
   *
   * <p>Up to 6.113, a transaction on a pooled (not multiplexed) session carries its session's hint
   * instead, one of a fixed set ({@code 0} to {@value #SESSION_HINTS}, shared by every session with
   * that hint and never collected): such a call names no transaction and is left to the client,
   * which keeps the session on its channel. A transaction's own hint is a random {@code long} from
   * {@code 0} to {@code Long.MAX_VALUE}, below {@value #SESSION_HINTS} about once in 10^16.
   */
  static Object transactionOf(Map<Option, ?> options) {
    if (options == null) {
      return null;
    }
    Object reference = (CHANNEL_REFERENCE != null) ? options.get(CHANNEL_REFERENCE) : null;
    if (reference != null) {
      return reference;
    }
    Object hint = options.get(Option.CHANNEL_HINT);
    return (hint instanceof Long value && value >= SESSION_HINTS) ? hint : null;
  }

  private static Option channelReferenceOption() {
    for (Option option : Option.values()) {
      // Not referenced by name: the constant is missing in clients before 6.119.
      if (option.name().equals("CHANNEL_ID_AFFINITY")) {
        return option;
      }
    }
    return null;
  }
}
