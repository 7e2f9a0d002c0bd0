package io.github.spannertuning.pool;

import com.google.api.gax.core.BackgroundResource;
import com.google.api.gax.grpc.GrpcTransportChannel;
import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.spanner.v1.TransactionSelector;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.reflect.ClientReflection;
import io.github.spannertuning.routing.ChannelPicker;
import io.github.spannertuning.routing.Connection;
import io.github.spannertuning.routing.ConnectionRefresh;
import io.github.spannertuning.routing.TransactionTable;
import io.github.spannertuning.trace.Traces;
import io.grpc.Channel;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * Sends each call routing chooses a channel for to that channel of the client's grpc-gcp pool: the
 * wiring around routing's {@link ChannelPicker}, which makes the choice. The rpc asks for a
 * reservation, makes its call with the reservation's options while the reservation is open, and
 * closes it; nothing here calls the rpc back.
 *
 * <p>How the call is sent to the channel picked depends on the pool:
 *
 * <ul>
 *   <li>A fixed pool ({@link FixedChannels}): every affinity key the client can derive from a hint
 *       is bound before the client's first call, one channel per key, and the reservation's context
 *       names the key of the channel picked; the client's own choice is taken off the call ({@link
 *       #withoutChannelHint}).
 *   <li>grpc-gcp's dynamic pool ({@link DynamicChannels}), whose channels come and go: the call
 *       carries a grpc-gcp channel reference set to the channel picked, the client's own where it
 *       has one that no call has used yet. grpc-gcp follows it while the channel lives, and where
 *       the pool has removed the channel meanwhile its own rule decides, as for any call.
 * </ul>
 *
 * <p>A transaction's first call is picked like a single-use read and recorded in the {@link
 * TransactionTable}; its later calls follow it while its channel takes calls. Where the dynamic
 * pool has removed that channel, a later call is left to the pool, which sends it by the
 * transaction's channel reference: on to the draining channel while it is open (grpc-gcp 1.20), or
 * to the channel it picks in its place (grpc-gcp 1.12).
 */
public final class PoolRouting {

  /** {@code CHANNEL_ID_AFFINITY}, or {@code null} in clients before 6.119, which lack it. */
  static final Option CHANNEL_REFERENCE = channelReferenceOption();

  /** The options by which the client chooses a call's channel, those of this client version. */
  private static final Option[] CHANNEL_OPTIONS =
      (CHANNEL_REFERENCE != null)
          ? new Option[] {Option.CHANNEL_HINT, CHANNEL_REFERENCE}
          : new Option[] {Option.CHANNEL_HINT};

  private static final Map<Option, ?> NO_OPTIONS = Map.of();

  private final Channels channels;

  private final ChannelPicker picker;

  private final TransactionTable transactions = new TransactionTable();

  /** The channels' warmth, where it is watched; else {@code null}. */
  private volatile ChannelWarmer warmer;

  /** The route of a priming call ({@link #reservePriming}): untimed, not an application call. */
  public static final String PRIMING = "priming";

  /** {@code System::nanoTime}, or a test's clock. */
  private final LongSupplier clock;

  PoolRouting(Channels channels, ChannelPicker.Rule rule, LongSupplier clock) {
    this.channels = channels;
    this.picker = new ChannelPicker(rule);
    this.clock = clock;
  }

  /**
   * Routing over a new client's grpc-gcp pool: a fixed one is bound one key per channel; a dynamic
   * one is followed as its channels come and go, and a channel is full at the pool's calls per
   * channel past which it grows, so that routing makes it grow at the load where its own pick
   * would, but where a channel about as fast as the fastest goes past it rather than a slower one
   * take the call.
   *
   * @param load the client's channel load, which counts the pool's channels
   * @param rule the picker's rule on a fixed pool
   * @throws IllegalStateException with the reason when this client's pool cannot be set up so
   */
  public static PoolRouting install(
      GapicSpannerRpc rpc, SpannerOptions options, ChannelLoad load, ChannelPicker.Rule rule) {
    GcpManagedChannel pool = pool(rpc);
    if (!dynamic(options)) {
      return new PoolRouting(
          FixedChannels.install(pool, options.getNumChannels()), rule, System::nanoTime);
    }
    if (CHANNEL_REFERENCE == null) {
      throw new IllegalStateException(DYNAMIC_POOL_WITHOUT_REFERENCES);
    }
    DynamicChannels channels = DynamicChannels.install(pool, load);
    int growsPast = DynamicChannels.callsPerChannelBeforeGrowth(options);
    return new PoolRouting(channels, dynamicRule(rule, growsPast), System::nanoTime);
  }

  /**
   * The rule on a dynamic pool that adds a channel past {@code growsPast} calls per channel: a
   * channel is full at that many, and only one about as fast as the fastest goes past it, up to the
   * room of a fixed pool's channel (its ceiling).
   */
  static ChannelPicker.Rule dynamicRule(ChannelPicker.Rule rule, int growsPast) {
    return rule.withRoomAtMost(growsPast);
  }

  /** Why routing cannot follow a dynamic pool on a client before 6.119. */
  static final String DYNAMIC_POOL_WITHOUT_REFERENCES =
      "the client's dynamic channel pool is on (enableDynamicChannelPool()), and this client"
          + " version names each call's channel by an affinity key that the pool binds and unbinds"
          + " as its channels come and go; routing follows a dynamic pool by grpc-gcp's channel"
          + " reference per call, which google-cloud-spanner 6.119 and later give; the client's"
          + " pool and its own least-busy pick are left as they are";

  /** Whether the client's options turn grpc-gcp's dynamic pool on. */
  public static boolean dynamic(SpannerOptions options) {
    try {
      return options.isGrpcGcpExtensionEnabled() && options.isDynamicChannelPoolEnabled();
    } catch (LinkageError ex) {
      // A client from before the dynamic pool.
      return false;
    }
  }

  /**
   * A picker over channels already counted by a {@link ChannelLoad}, channel {@code i} named by the
   * affinity key {@code "i"}; for measuring the pick on its own.
   */
  public static PoolRouting over(List<ChannelStats> channels, ChannelPicker.Rule rule) {
    return new PoolRouting(FixedChannels.over(channels), rule, System::nanoTime);
  }

  /**
   * Reserves the channel a call made now may expect to answer first, counted on it from now: for a
   * single-use read, a read/write transaction of one call, or a hedge-free read.
   *
   * @param options the client's options of the call; the reservation's {@link
   *     ChannelReservation#options()} are the ones to make it with
   * @param stream the stream-end guard's stream the call is the first attempt of, or {@code null}
   * @return the reservation; {@code null} to leave the call to the client, when a dynamic pool has
   *     no channel that takes calls (it is being shut down)
   */
  public ChannelReservation reserve(Map<Option, ?> options, StreamLink stream) {
    long now = this.clock.getAsLong();
    Snapshot pool = this.channels.current();
    if (pool.connections.length == 0) {
      return null;
    }
    int index = pick(pool, -1, now);
    return this.channels.reserve(pool, index, options, Naming.OWN, stream, now, Traces.LATENCY);
  }

  /**
   * Reserves {@code channel} for the call that primes its connection: not counted in flight and not
   * timed, so that the connection's set-up does not enter its estimate; {@code null} when the pool
   * no longer has the channel.
   */
  public ChannelReservation reservePriming(ChannelStats channel) {
    Snapshot pool = this.channels.current();
    for (int i = 0; i < pool.channels.length; i++) {
      if (pool.channels[i] == channel) {
        // Reserving nothing, as a probe does: the call is neither counted nor timed.
        return new ChannelReservation(
                null, null, 0, this.channels.options(pool, i, NO_OPTIONS, Naming.FRESH), PRIMING)
            .attach(this.channels.key(pool, i));
      }
    }
    return null;
  }

  /**
   * Watches the warmth of the pool's channels from now ({@link ChannelWarmer}): each channel
   * connects at once, is primed once a session is known, and again after each reconnect; routing
   * sends no read to a cold channel while a warm one has room. A dynamic pool's channels are
   * watched from when routing first sees them; those the pool primes itself as it adds them (grpc-
   * gcp 1.20) are left to it.
   *
   * @param refresh how connections are refreshed before the server retires them
   * @return the warmer
   */
  public ChannelWarmer watchWarmth(SpannerOptions options, ConnectionRefresh refresh) {
    ChannelWarmer warmer = ChannelWarmer.create(refresh);
    if (this.channels instanceof FixedChannels fixed) {
      fixed.watch(warmer);
    } else if (this.channels instanceof DynamicChannels dynamic) {
      dynamic.watch(warmer, DynamicChannels.primesTheChannelsItAdds(options));
    } else {
      return null;
    }
    this.warmer = warmer;
    return warmer;
  }

  /** The channels' warmth, or {@code null} where it is not watched. */
  public ChannelWarmer warmer() {
    return this.warmer;
  }

  /**
   * The picker's channel for a call made now, but {@code excluded} ({@code -1} for none), counted
   * on it. Where warmth is watched, a channel picked whose connection went a moment ago, before its
   * state callback said so, is cold from now and the call is picked again; a call that still lands
   * on a cold channel (no warm one has room) is counted as such.
   */
  private int pick(Snapshot pool, int excluded, long now) {
    int index = this.picker.pickExcept(pool.connections, excluded, now);
    ChannelWarmer warmer = this.warmer;
    if (warmer != null) {
      if (warmer.lostConnection(pool.channels[index])) {
        pool.connections[index].uncountCall();
        index = this.picker.pickExcept(pool.connections, excluded, now);
      }
      if (pool.connections[index].isCold()) {
        warmer.coldRead();
      }
    }
    return index;
  }

  /**
   * As {@link #reserve}, for the first call of a transaction, whose later calls then follow it; or
   * {@code null} to leave the call to the client, when the pool has already sent another call of
   * this transaction somewhere.
   *
   * @param transaction what names the transaction in the client's options ({@link #transactionOf})
   */
  public ChannelReservation reserveFirst(
      Object transaction, Map<Option, ?> options, StreamLink stream) {
    if (!this.channels.unused(options)) {
      return null;
    }
    ChannelReservation reservation = reserve(options, stream);
    if (reservation != null) {
      this.transactions.bind(transaction, reservation.reserved().connection());
    }
    return reservation;
  }

  /**
   * Reserves the channel of a transaction's first routed call for a later call of it, counted there
   * from now; or {@code null} when its first call was not routed, or the dynamic pool no longer
   * gives that channel new calls: the call is then left where the client's options send it.
   */
  public ChannelReservation reserveFollowing(
      Object transaction, Map<Option, ?> options, StreamLink stream) {
    Connection connection = this.transactions.connectionOf(transaction);
    if (connection == null) {
      return null;
    }
    Snapshot pool = this.channels.current();
    int index = pool.indexOf(connection);
    if (index < 0) {
      return null;
    }
    long now = this.clock.getAsLong();
    connection.countCall(now);
    return this.channels.reserve(
        pool, index, options, Naming.FOLLOW, stream, now, Traces.TRANSACTION);
  }

  /**
   * As {@link #reserve}, for a hedge of a read whose first attempt went to {@code first}: the best
   * channel but that one, which a pool of one has no other than. The hedge names its channel on its
   * own, so that the read's or its transaction's channel stays as it is. {@code null} as {@link
   * #reserve} returns it.
   */
  public ChannelReservation reserveExcept(
      ChannelStats first, Map<Option, ?> options, StreamLink stream) {
    long now = this.clock.getAsLong();
    Snapshot pool = this.channels.current();
    if (pool.connections.length == 0) {
      return null;
    }
    int excluded = (first != null) ? pool.indexOf(first.connection()) : -1;
    int index = pick(pool, excluded, now);
    return this.channels.reserve(pool, index, options, Naming.FRESH, stream, now, Traces.LATENCY);
  }

  /** Records that a transaction is read-only, so that its reads may be hedged. */
  public void markReadOnly(Object transaction) {
    this.transactions.markReadOnly(transaction);
  }

  /** Whether the transaction was recorded as read-only. */
  public boolean isReadOnly(Object transaction) {
    return this.transactions.isReadOnly(transaction);
  }

  /** The transactions routed now, for the soak checks. */
  public TransactionTable transactions() {
    return this.transactions;
  }

  /** Whether the pool's channels come and go (grpc-gcp's dynamic pool). */
  public boolean isDynamic() {
    return this.channels instanceof DynamicChannels;
  }

  /** The channel for a call made now, counted on it; for measuring the pick on its own. */
  public int pick(long now) {
    return this.picker.pick(this.channels.current().connections, now);
  }

  /** How a reservation's call names its channel to grpc-gcp on a dynamic pool. */
  enum Naming {

    /** By the client's channel reference if no call has used it yet, else by a fresh one. */
    OWN,

    /** As the client's options name it: a later call of a transaction whose reference is set. */
    FOLLOW,

    /** By a fresh channel reference, the client's left as it is: a hedge. */
    FRESH
  }

  /** The pool's channels that take new calls at one moment, by index, as the picker sees them. */
  static class Snapshot {

    final ChannelStats[] channels;

    final Connection[] connections;

    Snapshot(ChannelStats[] channels) {
      this.channels = channels;
      this.connections = new Connection[channels.length];
      for (int i = 0; i < channels.length; i++) {
        this.connections[i] = channels[i].connection();
      }
    }

    /** The index of this connection here, or {@code -1} when it does not take new calls now. */
    int indexOf(Connection connection) {
      Connection[] connections = this.connections;
      for (int i = 0; i < connections.length; i++) {
        if (connections[i] == connection) {
          return i;
        }
      }
      return -1;
    }
  }

  /** A pool's channels, and how a call is sent to one of them. */
  abstract static class Channels {

    /** The channels that take new calls now. */
    abstract Snapshot current();

    /**
     * Whether the client's options of a transaction's first call name no channel yet, so that
     * routing may choose one.
     */
    abstract boolean unused(Map<Option, ?> options);

    /**
     * The options a call to {@code pool}'s channel {@code index} is made with, from the client's:
     * on a fixed pool without the client's channel choice, on a dynamic one naming the channel.
     */
    abstract Map<Option, ?> options(
        Snapshot pool, int index, Map<Option, ?> options, Naming naming);

    /** The affinity key to attach for the call, or {@code null} for none. */
    abstract String key(Snapshot pool, int index);

    /**
     * Reserves {@code pool}'s channel {@code index}, on which the call was counted at {@code now},
     * and attaches its context to this thread.
     */
    final ChannelReservation reserve(
        Snapshot pool,
        int index,
        Map<Option, ?> options,
        Naming naming,
        StreamLink stream,
        long now,
        String route) {
      return new ChannelReservation(
              pool.channels[index], stream, now, options(pool, index, options, naming), route)
          .attach(key(pool, index));
    }
  }

  /** The grpc-gcp pool behind the client's data stub (not the admin or partitioned DML ones). */
  public static GcpManagedChannel pool(GapicSpannerRpc rpc) {
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

  static Object read(ClientReflection.Member member, Object target)
      throws ReflectiveOperationException {
    return ClientReflection.field(member).get(target);
  }

  /**
   * Whether a request runs in a single-use read-only transaction. Strong single-use reads may carry
   * no transaction selector at all.
   */
  public static boolean isSingleUse(boolean hasTransaction, TransactionSelector selector) {
    return !hasTransaction || (selector.hasSingleUse() && selector.getSingleUse().hasReadOnly());
  }

  /**
   * The options without the client's channel choice. A single-use read's options usually hold
   * nothing else, and then no copy is made.
   */
  public static Map<Option, ?> withoutChannelHint(Map<Option, ?> options) {
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
  public static boolean hasChannelReferences() {
    return CHANNEL_REFERENCE != null;
  }

  /** The session hints of clients up to 6.113 run from 0 to this, exclusive. */
  static final long SESSION_HINTS = 256;

  /**
   * The object that names the transaction a call belongs to, or {@code null} if none does:
   * routing's {@link TransactionTable} key. The client gives every call of one transaction the same
   * object in its options: a channel hint ({@code Long}) up to google-cloud-spanner 6.113, a
   * grpc-gcp {@code ChannelAffinityRef} from 6.119 while grpc-gcp is on.
   *
   * <p>Up to 6.113, a transaction on a pooled (not multiplexed) session carries its session's hint
   * instead, one of a fixed set ({@code 0} to {@value #SESSION_HINTS}, shared by every session with
   * that hint and never collected): such a call names no transaction and is left to the client,
   * which keeps the session on its channel. A transaction's own hint is a random {@code long} from
   * {@code 0} to {@code Long.MAX_VALUE}, below {@value #SESSION_HINTS} about once in 10^16.
   */
  public static Object transactionOf(Map<Option, ?> options) {
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
