package io.github.spannertuning.pool;

import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.grpc.GcpManagedChannelOptions.GcpChannelPoolOptions;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import io.github.spannertuning.pool.ChannelLoad.ChannelState;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.pool.PoolRouting.Naming;
import io.github.spannertuning.pool.PoolRouting.Snapshot;
import io.github.spannertuning.reflect.ClientReflection;
import io.github.spannertuning.routing.ChannelPicker;
import io.github.spannertuning.routing.Connection;
import io.grpc.ManagedChannel;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * The channels of grpc-gcp's dynamic pool as routing follows them. The pool adds channels under
 * load (from grpc-gcp 1.20, once its primer has primed them) and removes channels when idle; a
 * removed channel takes no new call from grpc-gcp, drains the calls it has, and is then closed.
 *
 * <p>Each pick first checks that the pool's list of channels is the one last seen: the same size
 * and the same channels, a read of each (ten at most, with Spanner's defaults), no lock and no
 * allocation. When it changed, the channels are followed again under a lock: one the pool added is
 * counted (its sub-channel is found as a fixed pool's is) and joins with the pool's median estimate
 * ({@link ChannelPicker#admit}); one it removed is {@link ChannelState#DRAINING} until grpc-gcp
 * closes it, then {@link ChannelState#REMOVED} and forgotten. The endpoint, the meters and the
 * imbalance window look again as they read.
 *
 * <p>A call is sent to the channel picked by a grpc-gcp {@code ChannelAffinityRef} set to that
 * channel's id: the client's own reference of a single-use read or a transaction while no call has
 * used it, so that every later call of the transaction follows the same channel through grpc-gcp
 * itself; a fresh one for a hedge, or a retry whose reference is in use. grpc-gcp sends a call to
 * the channel its reference names while that channel is open, and otherwise picks one itself.
 */
final class DynamicChannels extends PoolRouting.Channels {

  private final Pool pool;

  private final List<?> channelRefs;

  private final ChannelLoad load;

  private final LongSupplier clock;

  /** Every channel of the pool not yet closed, active or draining, by its grpc-gcp reference. */
  private final Map<Object, Member> members = new IdentityHashMap<>();

  private volatile Seen snapshot;

  private DynamicChannels(Pool pool, ChannelLoad load, LongSupplier clock) {
    this.pool = pool;
    this.channelRefs = pool.channels();
    this.load = load;
    this.clock = clock;
  }

  /** A dynamic pool as it is followed: grpc-gcp's, or a test's. */
  interface Pool {

    /** The pool's live list of the references of the channels that take new calls. */
    List<?> channels();

    /** The stats of a channel's sub-channel, counted from now on; {@code null} if not counted. */
    ChannelStats counted(Object channel);

    /** The channel's id, as a grpc-gcp channel reference names it. */
    int id(Object channel);

    /** Whether the pool has closed the channel. */
    boolean closed(Object channel);

    /** The channel itself, whose connection a {@link ChannelWarmer} watches. */
    default ManagedChannel managed(Object channel) {
      throw new UnsupportedOperationException("this pool's channels cannot be watched");
    }
  }

  /** The channels' warmth, once watched ({@link #watch}); else {@code null}. */
  private ChannelWarmer warmer;

  /** Whether the pool primes the channels it adds itself (grpc-gcp 1.20's channel primer). */
  private boolean poolPrimes;

  /**
   * Watches the warmth of the pool's channels from now, and of each channel it adds: its connection
   * and reconnects. A channel the pool adds and primes itself ({@code poolPrimes}) is warm once it
   * is connected; its later reconnects are primed as any channel's.
   */
  synchronized void watch(ChannelWarmer warmer, boolean poolPrimes) {
    this.warmer = warmer;
    this.poolPrimes = poolPrimes;
    for (Member member : this.members.values()) {
      warmer.watch(member.stats, this.pool.managed(member.ref), false);
    }
  }

  /**
   * Follows a new client's dynamic pool; its channels of now are counted in {@code load}.
   *
   * @throws IllegalStateException with the reason when the pool cannot be followed
   */
  static DynamicChannels install(GcpManagedChannel pool, ChannelLoad load) {
    Pool followed;
    try {
      followed = new GrpcGcpPool(pool);
      state(newReference());
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      throw new IllegalStateException("cannot follow grpc-gcp's dynamic pool: " + ex, ex);
    }
    return follow(followed, load, System::nanoTime);
  }

  /**
   * Follows a dynamic pool whose channels of now are counted in {@code load}.
   *
   * @throws IllegalStateException when it has no channel whose calls are counted
   */
  static DynamicChannels follow(Pool pool, ChannelLoad load, LongSupplier clock) {
    DynamicChannels channels = new DynamicChannels(pool, load, clock);
    channels.refresh();
    if (channels.snapshot.channels.length == 0) {
      throw new IllegalStateException(
          "the dynamic pool has no channel, or its calls are not counted");
    }
    load.follow(channels);
    return channels;
  }

  /** Whether the pool primes each channel it adds before the channel takes calls. */
  static boolean primesTheChannelsItAdds(SpannerOptions options) {
    GcpChannelPoolOptions pool = options.getGcpChannelPoolOptions();
    if (pool == null) {
      return false;
    }
    try {
      // grpc-gcp 1.20 (google-cloud-spanner 6.125 and later); not by name, for the older lines.
      return ClientReflection.method(ClientReflection.POOL_OPTIONS_CHANNEL_PRIMER).invoke(pool)
          != null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      return false;
    }
  }

  /**
   * The calls in flight per channel past which the dynamic pool adds a channel: routing's room on
   * it ({@link PoolRouting#dynamicRule}).
   */
  static int callsPerChannelBeforeGrowth(SpannerOptions options) {
    GcpChannelPoolOptions pool = options.getGcpChannelPoolOptions();
    int max = (pool != null) ? pool.getMaxRpcPerChannel() : 0;
    return (max > 0) ? max : Integer.MAX_VALUE;
  }

  /** The channels that take new calls now. */
  int size() {
    return this.channelRefs.size();
  }

  @Override
  Snapshot current() {
    Seen seen = this.snapshot;
    List<?> live = this.channelRefs;
    Object[] refs = seen.refs;
    try {
      if (live.size() == refs.length) {
        int i = 0;
        while (i < refs.length && live.get(i) == refs[i]) {
          i++;
        }
        if (i == refs.length) {
          return seen;
        }
      }
    } catch (IndexOutOfBoundsException ex) {
      // The pool shrank while it was read.
    }
    return refresh();
  }

  /** Follows the pool's channels as they are now. */
  synchronized Seen refresh() {
    Object[] live = this.channelRefs.toArray();
    Seen seen = this.snapshot;
    long now = this.clock.getAsLong();
    List<Member> active = new ArrayList<>(live.length);
    Map<Object, Member> current = new IdentityHashMap<>();
    for (Object ref : live) {
      Member member = this.members.get(ref);
      if (member == null) {
        member = join(ref, (seen != null) ? seen.connections : null, now);
        if (member == null) {
          continue;
        }
        this.members.put(ref, member);
        if (this.warmer != null) {
          this.warmer.watch(member.stats, this.pool.managed(ref), this.poolPrimes);
        }
      }
      member.stats.state(ChannelState.ACTIVE);
      active.add(member);
      current.put(ref, member);
    }
    for (Iterator<Member> it = this.members.values().iterator(); it.hasNext(); ) {
      Member member = it.next();
      if (current.containsKey(member.ref)) {
        continue;
      }
      if (this.pool.closed(member.ref)) {
        member.stats.state(ChannelState.REMOVED);
        it.remove();
        this.load.removed(member.stats);
      } else {
        member.stats.state(ChannelState.DRAINING);
      }
    }
    Seen next = new Seen(active);
    if (seen == null || !next.sameAs(seen)) {
      this.snapshot = next;
      return next;
    }
    return seen;
  }

  /**
   * Counts a channel the pool has: its sub-channel is found; one that joins a pool in use starts
   * from the median of the others' estimates. {@code null} when its calls are not counted.
   */
  private Member join(Object ref, Connection[] others, long now) {
    ChannelStats stats = this.pool.counted(ref);
    if (stats == null) {
      return null;
    }
    if (others != null) {
      ChannelPicker.admit(stats.connection(), others, now);
    }
    return new Member(ref, this.pool.id(ref), stats);
  }

  @Override
  boolean unused(Map<Option, ?> options) {
    Object reference = (options != null) ? options.get(PoolRouting.CHANNEL_REFERENCE) : null;
    return reference == null || state(reference).get() == 0;
  }

  @Override
  Map<Option, ?> options(Snapshot pool, int index, Map<Option, ?> options, Naming naming) {
    if (naming == Naming.FOLLOW) {
      return options;
    }
    int state = ((Seen) pool).states[index];
    if (naming == Naming.OWN && options != null) {
      Object own = options.get(PoolRouting.CHANNEL_REFERENCE);
      if (own != null && state(own).compareAndSet(0, state)) {
        return options;
      }
    }
    Object fresh = newReference();
    state(fresh).set(state);
    Map<Option, Object> copy = new EnumMap<>(Option.class);
    if (options != null) {
      copy.putAll(options);
    }
    copy.remove(Option.CHANNEL_HINT);
    copy.put(PoolRouting.CHANNEL_REFERENCE, fresh);
    return copy;
  }

  @Override
  String key(Snapshot pool, int index) {
    return null;
  }

  /** grpc-gcp's {@code ChannelAffinityRef} state; {@code null} on a grpc-gcp without it. */
  private static final Field REFERENCE_STATE =
      (Field) reflect(ClientReflection.AFFINITY_REF_STATE, true);

  /** grpc-gcp's {@code ChannelAffinityRef()}; {@code null} on a grpc-gcp without it. */
  private static final Constructor<?> NEW_REFERENCE =
      (Constructor<?>) reflect(ClientReflection.AFFINITY_REF_CONSTRUCTOR, false);

  /**
   * The state of a grpc-gcp channel reference: {@code 0} for none, else the channel's id plus one.
   */
  static AtomicInteger state(Object reference) {
    try {
      return (AtomicInteger) REFERENCE_STATE.get(reference);
    } catch (IllegalAccessException | RuntimeException ex) {
      throw new IllegalStateException("cannot read a grpc-gcp channel reference: " + ex, ex);
    }
  }

  /** A new grpc-gcp channel reference, naming no channel yet. */
  static Object newReference() {
    try {
      return NEW_REFERENCE.newInstance();
    } catch (ReflectiveOperationException | RuntimeException ex) {
      throw new IllegalStateException("cannot make a grpc-gcp channel reference: " + ex, ex);
    }
  }

  /**
   * The field or constructor of a member, or {@code null} where this grpc-gcp lacks it (before
   * 1.12): {@link #install} then fails, with the reason, before either is used.
   */
  private static Object reflect(ClientReflection.Member member, boolean field) {
    try {
      return field ? ClientReflection.field(member) : ClientReflection.constructor(member);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      return null;
    }
  }

  /** A channel of the pool not yet closed. */
  private record Member(Object ref, int id, ChannelStats stats) {}

  /** grpc-gcp's dynamic pool, read through the members {@link ClientReflection} lists. */
  private static final class GrpcGcpPool implements Pool {

    private final List<?> channelRefs;

    private final Method getChannel;

    private final Method getId;

    GrpcGcpPool(GcpManagedChannel pool) throws ReflectiveOperationException {
      this.channelRefs = (List<?>) PoolRouting.read(ClientReflection.CHANNEL_REFS, pool);
      this.getChannel = ClientReflection.method(ClientReflection.CHANNEL_REF_GET_CHANNEL);
      this.getId = ClientReflection.method(ClientReflection.CHANNEL_REF_GET_ID);
    }

    @Override
    public List<?> channels() {
      return this.channelRefs;
    }

    @Override
    public ChannelStats counted(Object channel) {
      return FixedChannels.landing(channel, this.getChannel);
    }

    @Override
    public int id(Object channel) {
      return (Integer) invoke(this.getId, channel);
    }

    @Override
    public boolean closed(Object channel) {
      return managed(channel).isShutdown();
    }

    @Override
    public ManagedChannel managed(Object channel) {
      return (ManagedChannel) invoke(this.getChannel, channel);
    }

    private static Object invoke(Method method, Object channel) {
      try {
        return method.invoke(channel);
      } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
        throw new IllegalStateException("cannot read a grpc-gcp channel: " + ex, ex);
      }
    }
  }

  /** The pool's channels that take new calls at one moment, with their grpc-gcp references. */
  static final class Seen extends Snapshot {

    final Object[] refs;

    /**
     * The state of a reference that names each channel, as grpc-gcp encodes it: its id plus one.
     */
    final int[] states;

    Seen(List<Member> active) {
      super(active.stream().map(Member::stats).toArray(ChannelStats[]::new));
      this.refs = new Object[active.size()];
      this.states = new int[active.size()];
      for (int i = 0; i < this.refs.length; i++) {
        this.refs[i] = active.get(i).ref();
        this.states[i] = (active.get(i).id() + 1) & Integer.MAX_VALUE;
      }
    }

    boolean sameAs(Seen other) {
      if (other.refs.length != this.refs.length) {
        return false;
      }
      for (int i = 0; i < this.refs.length; i++) {
        if (other.refs[i] != this.refs[i]) {
          return false;
        }
      }
      return true;
    }
  }
}
