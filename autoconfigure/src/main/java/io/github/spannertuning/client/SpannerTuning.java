package io.github.spannertuning.client;

import com.google.api.gax.rpc.NoHeaderProvider;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.routing.ChannelPicker;
import io.github.spannertuning.routing.ConnectionRefresh;
import io.github.spannertuning.routing.HedgeBudget;
import io.github.spannertuning.routing.HedgeDelay;
import io.github.spannertuning.trace.Traces;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import java.util.logging.Logger;

/**
 * Tunes a Spanner client before it is built. The one entry point for applications without Spring:
 *
 * <pre>{@code
 * SpannerOptions.Builder builder = SpannerOptions.newBuilder().setProjectId("my-project");
 * SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
 * Spanner spanner = builder.build().getService();
 * }</pre>
 *
 * <p>What it does depends on the client on the classpath: it fills in what that client lacks and
 * reports as {@link FeatureState.Status#NATIVE native} what it already does. Where a hook is
 * missing it logs one warning, leaves that feature off and reports it as {@link
 * FeatureState.Status#UNSUPPORTED unsupported}; it never stops the client from working.
 */
public final class SpannerTuning {

  /** The largest channel pool spanner-tuning will configure. */
  public static final int MAX_CHANNELS = 256;

  /** How long a stream closed at its {@code last} message waits for its trailers by default. */
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(5);

  /** Resets per connection and window for releasing finished streams where the guard is native. */
  static final int DEFAULT_RELEASE_RESETS = 100;

  static final Duration DEFAULT_RELEASE_WINDOW = Duration.ofSeconds(30);

  /**
   * The warm-up's reads through each client by default: chosen from the fresh-pod benchmark
   * (docs/benchmarks-fresh-pod.md).
   */
  public static final int DEFAULT_WARM_UP_READS = 800;

  /** The most warm-up reads a client may be given. */
  public static final int MAX_WARM_UP_READS = 100_000;

  /** The warm-up reads allowed, as an error names them. */
  public static final String WARM_UP_READS_ALLOWED =
      "0 (off) or a number of reads up to " + MAX_WARM_UP_READS;

  /** The extra calls hedging may add by default, as a share of hedgeable reads: 5 %. */
  public static final double DEFAULT_HEDGING_MAX_EXTRA = 0.05;

  /**
   * The least hedge delay by default. Below a millisecond a read's time to first response is the
   * client's own scheduling more than the server's, and a hedge sent that soon mostly races a first
   * attempt about to answer.
   */
  public static final Duration DEFAULT_HEDGING_MIN_DELAY = Duration.ofMillis(1);

  /** Concurrent streams per connection that Cloud Spanner's frontends allow. */
  public static final int DEFAULT_MAX_CONCURRENT_STREAMS = 100;

  private static final Logger logger = Logger.getLogger(SpannerTuning.class.getName());

  private static final Set<String> warned = ConcurrentHashMap.newKeySet();

  private static final SpannerTuning DEFAULTS = newBuilder().build();

  /** A copy of the builder: its fields are the settings, immutable once copied. */
  private final Builder settings;

  private final int streamEndGuardDrainMargin;

  private SpannerTuning(Builder builder) {
    this.settings = builder.copy();
    this.streamEndGuardDrainMargin =
        (builder.streamEndGuardDrainMargin != null)
            ? builder.streamEndGuardDrainMargin
            : defaultDrainMargin(builder.streamEndGuardMaxConcurrentStreams);
  }

  /**
   * Where the client skips the cancel at {@code last} itself (6.125+), a finished stream released
   * on a full connection is a reset the stock client would not send: at most this many per
   * connection and {@link #releaseWindow()}, half of grpc-java's default rapid-reset limit (200 per
   * 30 s). Past it, finished streams drain as they do stock.
   */
  int releaseResets() {
    return this.settings.releaseResets;
  }

  Duration releaseWindow() {
    return this.settings.releaseWindow;
  }

  /** The observer of each client's calls, or {@code null} for none. */
  CallObserver.Factory observations() {
    return this.settings.observations;
  }

  /** Whether each client's calls are observed. */
  public boolean isObserved() {
    return this.settings.observations != null;
  }

  /** Reads an environment variable: {@code System::getenv}, or a test's own. */
  UnaryOperator<String> environment() {
    return this.settings.environment;
  }

  /**
   * The stream slots a connection keeps free of draining streams: a tenth of the limit, rounded
   * down. Chosen from the benchmark's slow-trailers workloads (docs/benchmarking.md).
   */
  static int defaultDrainMargin(int maxConcurrentStreams) {
    return maxConcurrentStreams / 10;
  }

  /** All features on, the client's own pool size. */
  public static SpannerTuning defaults() {
    return DEFAULTS;
  }

  public static Builder newBuilder() {
    return new Builder();
  }

  public boolean isSingleUseDistribution() {
    return this.settings.singleUseDistribution;
  }

  public boolean isTransactionRouting() {
    return this.settings.transactionRouting;
  }

  public boolean isStreamEndGuard() {
    return this.settings.streamEndGuard;
  }

  public boolean isWarmUp() {
    return this.settings.warmUp;
  }

  /** The warm-up's reads through each client before it is ready; 0 where off. */
  public int warmUpReads() {
    return this.settings.warmUpReads;
  }

  /**
   * How each client refreshes its connections before the server retires them: a new {@link
   * ConnectionRefresh} per client, as it learns its server's age for itself.
   */
  public ConnectionRefresh newConnectionRefresh() {
    Duration after = this.settings.refreshAfter;
    if (after == null) {
      return ConnectionRefresh.learned();
    }
    return after.isZero() ? ConnectionRefresh.off() : ConnectionRefresh.after(after);
  }

  /** The refresh as configured: {@code learned}, {@code off}, or an ISO-8601 duration. */
  public String getRefreshAfter() {
    Duration after = this.settings.refreshAfter;
    if (after == null) {
      return "learned";
    }
    return after.isZero() ? "off" : after.toString();
  }

  public boolean isHedging() {
    return this.settings.hedging;
  }

  /** The extra calls hedging may add, as a share of hedgeable reads. */
  public double getHedgingMaxExtra() {
    return this.settings.hedgingMaxExtra;
  }

  /** The least time a read waits for its first response before it is hedged. */
  public Duration getHedgingMinDelay() {
    return this.settings.hedgingMinDelay;
  }

  /** The hedges the budget holds at most, which a spell of slow reads may spend at once. */
  int hedgingBurst() {
    return this.settings.hedgingBurst;
  }

  /** A delay every hedgeable read is hedged after, learned delays aside; {@code null} to learn. */
  Duration hedgingFixedDelay() {
    return this.settings.hedgingFixedDelay;
  }

  /**
   * The percentile of the time to first response a read waits for: half the budget from the top
   * ({@link HedgeDelay#quantileFor}), unless a benchmark variant sets another.
   */
  double hedgingQuantile() {
    return (this.settings.hedgingQuantile != null)
        ? this.settings.hedgingQuantile
        : HedgeDelay.quantileFor(this.settings.hedgingMaxExtra);
  }

  public boolean isGrpcGcpExtension() {
    return this.settings.grpcGcpExtension;
  }

  /** Whether one INFO line describes each tuned client when it is built. */
  public boolean isLogWhenBuilt() {
    return this.settings.logWhenBuilt;
  }

  /** The pool size to set, or {@code null} to keep the client's. */
  public Integer getChannels() {
    return this.settings.channels;
  }

  /**
   * How long a stream closed at its {@code last} message may wait for its trailers before the
   * stream-end guard cancels it.
   */
  public Duration getStreamEndGuardDrainTimeout() {
    return this.settings.streamEndGuardDrainTimeout;
  }

  /**
   * The concurrent streams the server allows per connection, which the stream-end guard keeps
   * draining streams within.
   */
  public int getStreamEndGuardMaxConcurrentStreams() {
    return this.settings.streamEndGuardMaxConcurrentStreams;
  }

  /**
   * The stream slots a close at {@code last} leaves free: it drains only while its connection has
   * at most the stream limit less this many calls in flight, its own included.
   */
  int streamEndGuardDrainMargin() {
    return this.streamEndGuardDrainMargin;
  }

  /**
   * The picker's rule for a connection that takes at most {@code room} calls: its defaults, or the
   * constants a benchmark variant sets to compare them.
   */
  ChannelPicker.Rule routingRule(int room) {
    return new ChannelPicker.Rule(
        room,
        this.settings.routingHotShift,
        this.settings.routingBandShift,
        ChannelPicker.Rule.defaults(room).calm());
  }

  /**
   * Tunes a builder in place, keeping everything already set on it. Applying tuning to a builder
   * that is already tuned changes nothing and returns its existing state.
   *
   * @return the state of the client that the builder will build
   */
  public SpannerTuningState applyTo(SpannerOptions.Builder builder) {
    Objects.requireNonNull(builder, "builder");
    Optional<SpannerTuningState> existing =
        stateOfFactory(
            ClientSupport.canReadRpcFactory() ? ClientSupport.rpcFactory(builder) : null);
    if (existing.isPresent()) {
      return existing.get();
    }
    Map<Feature, FeatureState> features = new EnumMap<>(Feature.class);
    boolean grpcGcpOn = applyGrpcGcp(builder, features);
    if (this.settings.channels != null) {
      builder.setNumChannels(this.settings.channels);
    }
    String rpcHookMissing = rpcHookMissing(builder);
    String routingHookMissing = routingHookMissing(rpcHookMissing);
    features.put(
        Feature.STREAM_END_GUARD,
        FeatureStates.streamEndGuard(this.settings.streamEndGuard, rpcHookMissing));
    features.put(
        Feature.SINGLE_USE_DISTRIBUTION,
        FeatureStates.singleUse(
            this.settings.singleUseDistribution, routingHookMissing, grpcGcpOn));
    features.put(
        Feature.TRANSACTION_ROUTING,
        FeatureStates.transactionRouting(
            this.settings.transactionRouting, routingHookMissing, grpcGcpOn));
    features.put(
        Feature.HEDGING,
        FeatureStates.hedging(this.settings.hedging, routingHookMissing, grpcGcpOn));
    SpannerTuningState state = new SpannerTuningState(this, features, rpcHookMissing == null);
    state.observations(observations(rpcHookMissing));
    List<String> missing = new ArrayList<>();
    features.forEach(
        (feature, featureState) -> {
          if (featureState.status() == FeatureState.Status.UNSUPPORTED) {
            missing.add(feature.id() + ": " + featureState.reason());
          }
        });
    if (ClientSupport.canReadRpcFactory() && attaches(ClientSupport.rpcFactory(builder))) {
      builder.setServiceRpcFactory(new TunedSpannerRpcFactory(state));
      if (ClientSupport.canReadInterceptorProvider()) {
        builder.setInterceptorProvider(
            new LoadCountingInterceptorProvider(ClientSupport.interceptorProvider(builder), state));
      } else {
        missing.add(
            "channel load: cannot read the interceptor provider of this client version, so"
                + " channels are not counted");
      }
    }
    if (!missing.isEmpty()) {
      warnOnce(String.join("; ", missing));
    }
    logger.fine(() -> "Spanner client tuned: " + state);
    return state;
  }

  /**
   * Returns options equal to the given ones, tuned. {@link SpannerOptions#toBuilder()} drops some
   * settings (the header provider, OpenTelemetry, leader-aware routing); they are carried over.
   * Options that are already tuned are returned as they are.
   */
  public SpannerOptions tune(SpannerOptions options) {
    Objects.requireNonNull(options, "options");
    if (stateOf(options).isPresent()) {
      return options;
    }
    SpannerOptions.Builder builder = options.toBuilder();
    builder.setHeaderProvider(options.getMergedHeaderProvider(new NoHeaderProvider()));
    OpenTelemetry openTelemetry = options.getOpenTelemetry();
    if (openTelemetry != GlobalOpenTelemetry.get()) {
      builder.setOpenTelemetry(openTelemetry);
    }
    if (options.isLeaderAwareRoutingEnabled()) {
      builder.enableLeaderAwareRouting();
    } else {
      builder.disableLeaderAwareRouting();
    }
    applyTo(builder);
    return builder.build();
  }

  /**
   * The state of a client this tuning could not reach, for example one a driver builds where its
   * hook is missing: every feature {@code unsupported} with the reason. Nothing can be switched on
   * it, and it counts nothing.
   */
  public SpannerTuningState unsupported(String reason) {
    Objects.requireNonNull(reason, "reason");
    Map<Feature, FeatureState> features = new EnumMap<>(Feature.class);
    for (Feature feature : Feature.values()) {
      features.put(feature, FeatureState.unsupported(reason));
    }
    SpannerTuningState state = new SpannerTuningState(this, features, false);
    state.observations(
        (this.settings.observations != null)
            ? FeatureState.unsupported(reason)
            : FeatureState.off(this.settings.observationsOff));
    return state;
  }

  /**
   * As {@link #unsupported(String)}, for a client built from these options: its pool is the one
   * they give it.
   */
  public SpannerTuningState unsupported(String reason, SpannerOptions builtFrom) {
    Objects.requireNonNull(builtFrom, "builtFrom");
    SpannerTuningState state = unsupported(reason);
    state.pool(
        builtFrom.isGrpcGcpExtensionEnabled(),
        builtFrom.getNumChannels(),
        PoolRouting.dynamic(builtFrom));
    return state;
  }

  /** The tuning state of a client built from these options, if they were tuned. */
  public static Optional<SpannerTuningState> stateOf(SpannerOptions options) {
    return ClientSupport.canReadRpcFactory()
        ? stateOfFactory(ClientSupport.rpcFactory(options))
        : Optional.empty();
  }

  /**
   * Whether a client built from these options runs without spanner-tuning though tuning would have
   * reached it: they carry no tuning state, yet {@link #applyTo} on their builder would have given
   * them one. So neither they nor their builder were tuned. A framework that tunes the builders and
   * options it sees finds with this the clients built from ones it never saw. False for tuned
   * options, for options that tuning saw but could not hook into (it warned then), and for {@code
   * null}.
   */
  public static boolean untunedButReachable(SpannerOptions options) {
    return options != null
        && ClientSupport.canReadRpcFactory()
        && attaches(ClientSupport.rpcFactory(options));
  }

  /**
   * Gives the client built from this builder {@code openTelemetry} to trace with, where the
   * application chose OpenTelemetry traces for the Spanner client ({@code
   * SpannerOptions.enableOpenTelemetryTraces()}) and gave this builder no OpenTelemetry, so that
   * its client would trace with {@code GlobalOpenTelemetry}. Returns whether it did. An
   * OpenTelemetry the application set is kept, and so is the builder of a client version that
   * cannot be read.
   */
  public static boolean traceWithIfUnset(
      SpannerOptions.Builder builder, OpenTelemetry openTelemetry) {
    Objects.requireNonNull(openTelemetry, "openTelemetry");
    if (!Traces.openTelemetryChosen() || !ClientSupport.hasNoOpenTelemetry(builder)) {
      return false;
    }
    builder.setOpenTelemetry(openTelemetry);
    return true;
  }

  /**
   * Whether the client's calls can be observed: operations through the client's rpc, attempts and
   * the frontend's times through its channels' interceptors.
   */
  private FeatureState observations(String rpcHookMissing) {
    if (this.settings.observations == null) {
      return FeatureState.off(this.settings.observationsOff);
    }
    if (rpcHookMissing != null) {
      return FeatureState.unsupported(rpcHookMissing);
    }
    if (!ClientSupport.canReadInterceptorProvider()) {
      return FeatureState.unsupported(
          "cannot read the interceptor provider of this client version");
    }
    if (!ClientSupport.RPC_METHODS_MATCH) {
      return FeatureState.unsupported(
          "the rpc methods of this client version differ from those spanner-tuning observes, so"
              + " operations are not timed; attempts and the frontend's times are");
    }
    return FeatureState.on();
  }

  private static Optional<SpannerTuningState> stateOfFactory(Object factory) {
    return (factory instanceof TunedSpannerRpcFactory tuned)
        ? Optional.of(tuned.state())
        : Optional.empty();
  }

  private boolean applyGrpcGcp(
      SpannerOptions.Builder builder, Map<Feature, FeatureState> features) {
    boolean readable = ClientSupport.canReadGrpcGcpSwitch();
    boolean enabled = readable && ClientSupport.isGrpcGcpEnabled(builder);
    FeatureState state = FeatureStates.grpcGcp(this.settings.grpcGcpExtension, readable, enabled);
    if (state.isApplied()) {
      builder.enableGrpcGcpExtension();
      enabled = true;
    }
    features.put(Feature.GRPC_GCP, state);
    // When the switch cannot be read, assume grpc-gcp is on; the rpc factory checks the built
    // options and corrects the single-use state.
    return enabled || !readable;
  }

  private String rpcHookMissing(SpannerOptions.Builder builder) {
    String missing = clientHookMissing();
    if (missing != null) {
      return missing;
    }
    if (!ClientSupport.canReadRpcFactory()) {
      return "cannot read the SpannerRpcFactory of this client version";
    }
    if (!ClientSupport.isDefaultRpcFactory(ClientSupport.rpcFactory(builder))) {
      return "the application set its own SpannerRpcFactory";
    }
    return null;
  }

  /** What this client version lacks for the rpc spanner-tuning installs, or {@code null}. */
  private static String clientHookMissing() {
    if (!ClientSupport.RPC_METHODS_MATCH && !ClientSupport.PLAIN_STREAM_METHODS_MATCH) {
      return "GapicSpannerRpc in this client version does not have the methods spanner-tuning"
          + " extends";
    }
    if (!ClientSupport.RPC_METHODS_MATCH && !ClientSupport.STREAMS_MARK_LAST) {
      return "google-cloud-spanner "
          + ClientVersions.detected().spanner()
          + " has no PartialResultSet.last: a stream closed on its last row cannot be told"
          + " finished before its trailers";
    }
    return null;
  }

  /**
   * Routing is set up around the streaming methods that take a request id; a client whose methods
   * take none gets the stream-end guard only.
   */
  private static String routingHookMissing(String rpcHookMissing) {
    if (!ClientSupport.RPC_METHODS_MATCH && ClientSupport.PLAIN_STREAM_METHODS_MATCH) {
      return "GapicSpannerRpc in google-cloud-spanner "
          + ClientVersions.detected().spanner()
          + " has no streaming methods that take a request id, which routing hooks into";
    }
    return rpcHookMissing;
  }

  /**
   * Whether tuning installs its rpc factory, and so its state, in place of this one: the client's
   * own default factory, on a client version with the hooks. Where the hooks are missing but the
   * client's default rpc can be created unchanged by a factory that carries the state, a client
   * whose {@code GapicSpannerRpc} does not match still shows up in the registry, the meters and the
   * endpoint, with its features unsupported.
   */
  private static boolean attaches(Object rpcFactory) {
    return ClientSupport.isDefaultRpcFactory(rpcFactory)
        && (clientHookMissing() == null || ClientSupport.HAS_OPTIONS_CONSTRUCTOR);
  }

  /**
   * One warning, once per JVM for the same reason, that routing steps aside for the client's own
   * channel choice.
   */
  static void warnRoutingAside(String reason) {
    if (warned.add(ASIDE + reason)) {
      logger.warning(
          "spanner-tuning: single-use-distribution and transaction-routing step aside for this"
              + " Spanner client: "
              + reason
              + ". Spanner traffic is not affected.");
    }
  }

  /** Whether {@link #warnRoutingAside} warned of this reason in this JVM. */
  static boolean warnedRoutingAside(String reason) {
    return warned.contains(ASIDE + reason);
  }

  private static final String ASIDE = "aside: ";

  /** One warning for a hook found missing once the client was built. */
  static void warnOnce(String what, String reason) {
    warnOnce(what + ": " + reason);
  }

  /**
   * One warning for every hook this client lacks, once per JVM for the same list, so that an
   * application that builds many clients is told once.
   */
  private static void warnOnce(String missing) {
    if (warned.add(missing)) {
      logger.warning(
          "spanner-tuning: off for this Spanner client, a hook is missing: "
              + missing
              + ". Spanner traffic is not affected.");
    }
  }

  @Override
  public String toString() {
    return "SpannerTuning{singleUseDistribution="
        + this.settings.singleUseDistribution
        + ", transactionRouting="
        + this.settings.transactionRouting
        + ", streamEndGuard="
        + this.settings.streamEndGuard
        + ", hedging="
        + this.settings.hedging
        + ", hedgingMaxExtra="
        + this.settings.hedgingMaxExtra
        + ", grpcGcpExtension="
        + this.settings.grpcGcpExtension
        + ", channels="
        + this.settings.channels
        + ", streamEndGuardDrainTimeout="
        + this.settings.streamEndGuardDrainTimeout
        + ", streamEndGuardMaxConcurrentStreams="
        + this.settings.streamEndGuardMaxConcurrentStreams
        + "}";
  }

  /** Builds a {@link SpannerTuning}; every feature is on by default. */
  public static final class Builder implements Cloneable {

    private boolean singleUseDistribution = true;

    private boolean transactionRouting = true;

    private boolean streamEndGuard = true;

    private boolean hedging = false;

    private boolean warmUp = true;

    private int warmUpReads = DEFAULT_WARM_UP_READS;

    /** {@code null}: learned from the server; zero: off. */
    private Duration refreshAfter;

    private double hedgingMaxExtra = DEFAULT_HEDGING_MAX_EXTRA;

    private Duration hedgingMinDelay = DEFAULT_HEDGING_MIN_DELAY;

    private Duration hedgingFixedDelay;

    private Double hedgingQuantile;

    private int hedgingBurst = HedgeBudget.DEFAULT_BURST;

    private boolean grpcGcpExtension = true;

    private boolean logWhenBuilt = true;

    private Integer channels;

    private Duration streamEndGuardDrainTimeout = DEFAULT_DRAIN_TIMEOUT;

    private int streamEndGuardMaxConcurrentStreams = DEFAULT_MAX_CONCURRENT_STREAMS;

    private Integer streamEndGuardDrainMargin;

    private UnaryOperator<String> environment = System::getenv;

    private int releaseResets = DEFAULT_RELEASE_RESETS;

    private Duration releaseWindow = DEFAULT_RELEASE_WINDOW;

    private int routingHotShift = ChannelPicker.Rule.defaults(1).hotShift();

    private int routingBandShift = ChannelPicker.Rule.defaults(1).bandShift();

    private CallObserver.Factory observations;

    private String observationsOff = "no observer was given";

    private Builder() {}

    /**
     * Times no call, and says why where the client's state is shown: for example that the
     * application turned its observations off.
     */
    public Builder observationsOff(String reason) {
      this.observations = null;
      this.observationsOff = Objects.requireNonNull(reason, "reason");
      return this;
    }

    /**
     * Times each client's operations and attempts, and the frontend's time of each response, with
     * this observer, for example {@code
     * io.github.spannertuning.observation.SpannerCallObservations}; {@code null} (the default) to
     * time nothing, and then no call does any work for it.
     */
    public Builder observations(CallObserver.Factory observations) {
      this.observations = observations;
      return this;
    }

    public Builder singleUseDistribution(boolean enabled) {
      this.singleUseDistribution = enabled;
      return this;
    }

    /**
     * Route each read-only and read/write transaction's first call like a single-use read, and keep
     * the transaction's later calls on its channel.
     */
    public Builder transactionRouting(boolean enabled) {
      this.transactionRouting = enabled;
      return this;
    }

    public Builder streamEndGuard(boolean enabled) {
      this.streamEndGuard = enabled;
      return this;
    }

    /**
     * Keep the pool's connections warm, on by default where routing picks channels: each channel
     * connects as soon as the client is built and again as soon as its connection goes (a GOAWAY, a
     * break), is primed with one {@code SELECT 1} on the client's first session before routing
     * sends it reads, and no read goes to a channel that is not warm while another has room. Wait
     * for it with {@link SpannerTuningState#warmUp}.
     */
    public Builder warmUp(boolean enabled) {
      this.warmUp = enabled;
      return this;
    }

    /**
     * Warm the read path as well, {@value #DEFAULT_WARM_UP_READS} reads by default: from the moment
     * a first channel is warm, {@link SpannerTuningState#warmUp} sends up to {@code reads}
     * single-use {@code SELECT 1} queries through the client's own database client, from two
     * threads per channel (at most 16), each read to its end, within its timeout. A new JVM then
     * runs the client's read path before its first burst rather than in it. They read no table, and
     * are counted apart from the application's reads. 0 turns it off; warm-up must be on.
     */
    public Builder warmUpReads(int reads) {
      if (reads < 0 || reads > MAX_WARM_UP_READS) {
        throw new IllegalArgumentException(
            "warmUpReads must be " + WARM_UP_READS_ALLOWED + ": " + reads);
      }
      this.warmUpReads = reads;
      return this;
    }

    /**
     * Refresh each channel's connection {@code after} it connected, less up to a tenth for jitter,
     * one channel at a time while the others are warm: make before break, before the server retires
     * it. Warm-up must be on. The default is {@link #refreshAfterLearned()}.
     */
    public Builder refreshAfter(Duration after) {
      if (after == null || after.isNegative() || after.toMillis() < 1) {
        throw new IllegalArgumentException("refreshAfter must be a positive duration: " + after);
      }
      this.refreshAfter = after;
      return this;
    }

    /**
     * Refresh each channel's connection at three quarters of the age after which the server retired
     * connections (the longest seen), less up to a tenth for jitter; nothing until the server has
     * retired one. The default.
     */
    public Builder refreshAfterLearned() {
      this.refreshAfter = null;
      return this;
    }

    /** Never refresh a connection before the server retires it; it is warmed again after. */
    public Builder refreshOff() {
      this.refreshAfter = Duration.ZERO;
      return this;
    }

    /**
     * Hedge single-use reads and reads of read-only transactions that have not answered by a recent
     * high percentile of their shape's time to first response; off by default.
     */
    public Builder hedging(boolean enabled) {
      this.hedging = enabled;
      return this;
    }

    /**
     * The extra calls hedging may add, as a share of hedgeable reads, from 0 to 1: 0.05 (5 %) by
     * default. Hedges stay within it whatever the server does.
     */
    public Builder hedgingMaxExtra(double maxExtra) {
      if (!(maxExtra >= 0 && maxExtra <= 1)) {
        throw new IllegalArgumentException(
            "hedging's max extra must be a share of calls from 0 to 1 (0.05 is 5 %), was "
                + maxExtra);
      }
      this.hedgingMaxExtra = maxExtra;
      return this;
    }

    /** The least time a read waits before it is hedged; not negative, 1 ms by default. */
    public Builder hedgingMinDelay(Duration minDelay) {
      Objects.requireNonNull(minDelay, "minDelay");
      if (minDelay.isNegative()) {
        throw new IllegalArgumentException(
            "hedging's min delay must not be negative, was " + minDelay);
      }
      this.hedgingMinDelay = minDelay;
      return this;
    }

    /** Hedges every hedgeable read after this delay, whatever was learned; for tests. */
    Builder hedgingFixedDelay(Duration delay) {
      this.hedgingFixedDelay = delay;
      return this;
    }

    /** The hedges the budget holds at most; for tests that hedge every read of a burst. */
    Builder hedgingBurst(int burst) {
      this.hedgingBurst = burst;
      return this;
    }

    /** The percentile of a shape's time to first response to wait for; for benchmark variants. */
    Builder hedgingQuantile(double quantile) {
      this.hedgingQuantile = quantile;
      return this;
    }

    /** Switch the grpc-gcp extension on when the client has it off. */
    public Builder grpcGcpExtension(boolean enabled) {
      this.grpcGcpExtension = enabled;
      return this;
    }

    /**
     * Whether to log one INFO line when a tuned client is built: its project, client versions, pool
     * and each feature's state. A framework that logs its own line, with a name for the client,
     * switches this off.
     */
    public Builder logWhenBuilt(boolean enabled) {
      this.logWhenBuilt = enabled;
      return this;
    }

    /**
     * The channel pool size, 1 to {@value SpannerTuning#MAX_CHANNELS}; {@code null} keeps the
     * client's.
     */
    public Builder channels(Integer channels) {
      if (channels != null && (channels < 1 || channels > MAX_CHANNELS)) {
        throw new IllegalArgumentException(
            "channels must be between 1 and " + MAX_CHANNELS + ", was " + channels);
      }
      this.channels = channels;
      return this;
    }

    /**
     * How long a stream the application closed at its {@code last} message may wait for its
     * trailers before the stream-end guard cancels it; positive, 5 seconds by default.
     */
    public Builder streamEndGuardDrainTimeout(Duration timeout) {
      Objects.requireNonNull(timeout, "timeout");
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException(
            "the stream-end guard's drain timeout must be positive, was " + timeout);
      }
      this.streamEndGuardDrainTimeout = timeout;
      return this;
    }

    /**
     * The concurrent streams the server allows per connection (its HTTP/2
     * SETTINGS_MAX_CONCURRENT_STREAMS, which gRPC does not expose to the client); at least 1, 100
     * by default, as Cloud Spanner's frontends allow. A stream closed at its {@code last} message
     * drains only while its connection has slots to spare: with more than this less a tenth
     * (rounded down) of calls in flight on it, the close cancels at once, as the client would, and
     * frees the slot for the calls waiting.
     */
    public Builder streamEndGuardMaxConcurrentStreams(int maxConcurrentStreams) {
      if (maxConcurrentStreams < 1) {
        throw new IllegalArgumentException(
            "the stream-end guard's max concurrent streams must be at least 1, was "
                + maxConcurrentStreams);
      }
      this.streamEndGuardMaxConcurrentStreams = maxConcurrentStreams;
      return this;
    }

    /** The budget of {@link SpannerTuning#releaseResets()}; for tests and benchmark variants. */
    Builder streamEndGuardReleaseBudget(int resets, Duration window) {
      this.releaseResets = resets;
      this.releaseWindow = Objects.requireNonNull(window, "window");
      return this;
    }

    /** Where environment variables are read from; a test's own lookup in place of the process's. */
    Builder environment(UnaryOperator<String> environment) {
      this.environment = Objects.requireNonNull(environment, "environment");
      return this;
    }

    /**
     * Overrides the slots a connection keeps free of draining streams (a tenth of the stream limit
     * by default); for the benchmark that chooses that default.
     */
    Builder streamEndGuardDrainMargin(int margin) {
      if (margin < 0) {
        throw new IllegalArgumentException(
            "the stream-end guard's drain margin must not be negative, was " + margin);
      }
      this.streamEndGuardDrainMargin = margin;
      return this;
    }

    /**
     * Overrides how far above the pool's mean calls in flight a channel counts as hot, as a right
     * shift of the mean (1 is half again); for the benchmark that chooses the default.
     */
    Builder routingHotShift(int shift) {
      this.routingHotShift = checkShift("hot", shift);
      return this;
    }

    /**
     * Overrides the picker's band, as a right shift of the least cost (1 is half again); for the
     * benchmark that chooses the default.
     */
    Builder routingBandShift(int shift) {
      this.routingBandShift = checkShift("band", shift);
      return this;
    }

    private static int checkShift(String name, int shift) {
      if (shift < 0 || shift > 16) {
        throw new IllegalArgumentException("the " + name + " shift must be 0 to 16, was " + shift);
      }
      return shift;
    }

    public SpannerTuning build() {
      return new SpannerTuning(this);
    }

    private Builder copy() {
      try {
        return (Builder) clone();
      } catch (CloneNotSupportedException ex) {
        throw new AssertionError(ex);
      }
    }
  }
}
