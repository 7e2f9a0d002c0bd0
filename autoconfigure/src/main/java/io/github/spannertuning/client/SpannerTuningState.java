package io.github.spannertuning.client;

import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.experiment.Arm;
import io.github.spannertuning.experiment.ArmSwitch;
import io.github.spannertuning.experiment.ArmTotals;
import io.github.spannertuning.experiment.CarryOver;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.experiment.ExperimentSlot;
import io.github.spannertuning.experiment.ExperimentTimer;
import io.github.spannertuning.experiment.GuardRail;
import io.github.spannertuning.experiment.InvalidExperimentPlanException;
import io.github.spannertuning.experiment.RecordedCallListener;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.pool.ChannelWarmer;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.routing.HedgeDelay;
import io.github.spannertuning.routing.Hedging;
import io.github.spannertuning.trace.Traces;
import io.github.spannertuning.warmup.ReadWarmUp;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Tracer;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.StringJoiner;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

/**
 * What spanner-tuning does to one Spanner client: the effective state of each feature, the counters
 * of the work it did, and runtime switches for the features that sit on the RPC path. Thread-safe;
 * read on every RPC, so the checks are plain volatile reads.
 */
public final class SpannerTuningState {

  private static final Feature[] ROUTING = {
    Feature.SINGLE_USE_DISTRIBUTION, Feature.TRANSACTION_ROUTING
  };

  private final SpannerTuning tuning;

  private final boolean rpcInstalled;

  private volatile Map<Feature, FeatureState> features;

  private volatile boolean singleUseDistributionActive;

  private volatile boolean transactionRoutingActive;

  private volatile boolean streamEndGuardActive;

  private volatile boolean streamEndGuardAtLast;

  private volatile boolean hedgingActive;

  private final LongAdder singleUseRouted = new LongAdder();

  private final LongAdder transactionsRouted = new LongAdder();

  private final LongAdder streamEndGuardSkipped = new LongAdder();

  private final LongAdder streamEndGuardDrained = new LongAdder();

  private final LongAdder streamEndGuardDrainTimeouts = new LongAdder();

  private final LongAdder streamEndGuardCancelledAtLimit = new LongAdder();

  private final Hedging hedging;

  private final long drainTimeoutNanos;

  private final int drainWhileInFlightAtMost;

  private final int releaseResets;

  private final long releaseWindowNanos;

  /** This client's switchback experiments; read on every call by the counting interceptor. */
  private final ExperimentSlot experiment =
      new ExperimentSlot(ExperimentTimer.shared(), System::nanoTime, SplittableRandom::new);

  private final ChannelLoad channelLoad = new ChannelLoad(this.experiment);

  private volatile OpenTelemetry openTelemetry;

  /** Whether the client traces its calls with OpenTelemetry, decided when its rpc is built. */
  private volatile boolean traced;

  /** The tracer of hedged reads' attempt spans while the client traces; else {@code null}. */
  private volatile Tracer tracer;

  private volatile boolean grpcGcpEnabled;

  private volatile int numChannels;

  private volatile boolean dynamicPool;

  private volatile boolean open;

  private volatile boolean builtWithoutPicker;

  /** The open client's channel warmth, where it is watched; else {@code null}. */
  private volatile ChannelWarmer warmer;

  /** The open client's options, whose service is the client; {@code null} where not warmed. */
  private volatile SpannerOptions options;

  /** The database of the open client's first session; {@code null} until it has one. */
  private volatile String readsFrom;

  /** The warm-up's reads read to their end, over the client's life. */
  private final LongAdder warmUpReads = new LongAdder();

  /**
   * Whether the read warm-up is sending reads now: only then does a call look up whether it is one
   * of them ({@link #isWarmUpRead}), so that the application's calls pay one volatile read.
   */
  private volatile boolean warmingReadPath;

  /**
   * Whether the open client's read path was warmed: once per client, as the JVM's code it warms
   * stays warm; a later {@link #warmUp} (after a restart of the server, say) waits for the
   * channels.
   */
  private volatile boolean readPathWarmed;

  private final List<Runnable> closeListeners = new CopyOnWriteArrayList<>();

  /** The client's name as the endpoint names it, once registered under one. */
  private volatile String name = DEFAULT_NAME;

  /** The name of a client not registered under one. */
  static final String DEFAULT_NAME = "spanner";

  /** Times the client's calls where the application observes them; else {@code null}. */
  private final CallObserver observer;

  private volatile FeatureState observations = FeatureState.off("no observer was given");

  /** Whether the client exports Google's built-in metrics; {@code null} until built, or unknown. */
  private volatile Boolean builtInMetricsExport;

  SpannerTuningState(
      SpannerTuning tuning, Map<Feature, FeatureState> features, boolean rpcInstalled) {
    this.tuning = tuning;
    this.rpcInstalled = rpcInstalled;
    this.drainTimeoutNanos = tuning.getStreamEndGuardDrainTimeout().toNanos();
    this.drainWhileInFlightAtMost =
        tuning.getStreamEndGuardMaxConcurrentStreams() - tuning.streamEndGuardDrainMargin();
    this.releaseResets = tuning.releaseResets();
    this.releaseWindowNanos = tuning.releaseWindow().toNanos();
    long now = System.nanoTime();
    this.hedging =
        new Hedging(
            tuning.getHedgingMaxExtra(),
            tuning.hedgingBurst(),
            tuning.hedgingQuantile(),
            tuning.getHedgingMinDelay().toNanos(),
            (tuning.hedgingFixedDelay() != null)
                ? tuning.hedgingFixedDelay().toNanos()
                : HedgeDelay.NONE,
            now);
    CallObserver.Factory observations = tuning.observations();
    this.observer = (observations != null) ? observations.forClient(() -> this.name) : null;
    publish(new EnumMap<>(features));
  }

  /** Names the client as the endpoint and the observations of its calls name it. */
  public void name(String name) {
    this.name = Objects.requireNonNull(name, "name");
  }

  /** The client's name as the endpoint names it; {@code spanner} until registered under one. */
  public String name() {
    return this.name;
  }

  /** Whether the client's calls are observed, or why not. */
  public FeatureState observations() {
    return this.observations;
  }

  void observations(FeatureState observations) {
    this.observations = observations;
  }

  /**
   * The observer of the client's calls where they are observed ({@link #observations()} is on or,
   * where only attempts can be, unsupported); else {@code null}.
   */
  CallObserver observer() {
    return (this.observations.status() == FeatureState.Status.OFF) ? null : this.observer;
  }

  /** The operations timed so far, per RPC method; empty where calls are not observed. */
  public List<CallObserver.OperationSummary> operations() {
    CallObserver observer = this.observer;
    return (observer != null) ? observer.operations() : List.of();
  }

  /**
   * Whether the client exports Google's built-in metrics to Cloud Monitoring ({@code
   * SpannerOptions.isEnableBuiltInMetrics()}); {@code null} before the client is built, or where
   * this client version does not say.
   */
  public Boolean builtInMetricsExport() {
    return this.builtInMetricsExport;
  }

  void builtInMetricsExport(Boolean export) {
    this.builtInMetricsExport = export;
  }

  /** The configuration this client was tuned with. */
  public SpannerTuning tuning() {
    return this.tuning;
  }

  /**
   * Whether the client runs {@link TunedSpannerRpc} or {@link GuardOnlySpannerRpc}, not the
   * client's rpc as it is.
   */
  boolean rpcInstalled() {
    return this.rpcInstalled;
  }

  /** The effective state of every feature, in declaration order. */
  public Map<Feature, FeatureState> features() {
    return this.features;
  }

  public FeatureState feature(Feature feature) {
    return this.features.get(feature);
  }

  /**
   * Whether spanner-tuning does the work of this feature on this client right now: for the
   * stream-end guard, also where it is native and spanner-tuning adds the rest of it.
   */
  public boolean isActive(Feature feature) {
    return switch (feature) {
      case SINGLE_USE_DISTRIBUTION -> this.singleUseDistributionActive;
      case TRANSACTION_ROUTING -> this.transactionRoutingActive;
      case STREAM_END_GUARD -> this.streamEndGuardActive;
      case HEDGING -> this.hedgingActive;
      case GRPC_GCP -> this.features.get(Feature.GRPC_GCP).isApplied();
    };
  }

  /** Single-use calls routed by the picker. */
  public long singleUseRoutedCount() {
    return this.singleUseRouted.sum();
  }

  /**
   * Transactions whose first call the picker routed (each attempt of a retried transaction counts).
   */
  public long transactionsRoutedCount() {
    return this.transactionsRouted.sum();
  }

  /**
   * Closes of finished streams that sent no cancel: the stream had ended, or it was closed at its
   * {@code last} message and its trailers then arrived within the drain timeout. Where the client
   * sends no cancel after {@code last} itself (the guard is native), those are not counted here.
   */
  public long streamEndGuardSkippedCount() {
    return this.streamEndGuardSkipped.sum();
  }

  /**
   * Streams closed at their {@code last} message, before their trailers, that then completed on
   * their own within the drain timeout (also counted as skipped); where the guard is native, the
   * streams that delivered {@code last} and then completed within the drain timeout.
   */
  public long streamEndGuardDrainedCount() {
    return this.streamEndGuardDrained.sum();
  }

  /**
   * Streams closed at their {@code last} message (where the guard is native: finished at it) whose
   * trailers did not arrive within the drain timeout, and were cancelled then.
   */
  public long streamEndGuardDrainTimeoutCount() {
    return this.streamEndGuardDrainTimeouts.sum();
  }

  /**
   * Streams closed at their {@code last} message (where the guard is native: finished at it) that
   * were cancelled at once instead of drained, because their connection had too few of its stream
   * slots free to hold one while it drains.
   */
  public long streamEndGuardCancelledAtLimitCount() {
    return this.streamEndGuardCancelledAtLimit.sum();
  }

  /**
   * This client's hedged reads, whatever the feature's state: the hedges sent, won and denied, the
   * budget, the delays. The type is spanner-tuning's internal routing package: read it, do not
   * build on it.
   */
  public Hedging hedging() {
    return this.hedging;
  }

  /** This client's experiments, which a hedged read records itself in. */
  ExperimentSlot experimentSlot() {
    return this.experiment;
  }

  /**
   * Calls per sub-channel of this client's pool, counted whatever the features' state. Empty when
   * the client's interceptor provider could not be extended.
   */
  public ChannelLoad channelLoad() {
    return this.channelLoad;
  }

  /** Versions of the client libraries this client runs on. */
  public ClientVersions versions() {
    return ClientVersions.detected();
  }

  /**
   * Switches single-use distribution, transaction routing or the stream-end guard on this running
   * client, for an A/B comparison without a restart. Only features spanner-tuning applies itself
   * can be switched: not one the client does natively, not one this client version lacks a hook
   * for, and not grpc-gcp, which is chosen when the channels are built. A routing feature switches
   * on only on a client built with one of the two on: the picker is set up when the client is
   * built. A transaction begun while transaction routing was on keeps its channel after a switch.
   *
   * @throws IllegalArgumentException for grpc-gcp
   * @throws IllegalStateException when the feature cannot be switched on this client
   */
  public void setEnabled(Feature feature, boolean enabled) {
    checkSwitch(feature, enabled);
    // Outside this object's lock: the experiment switches arms holding its own lock, then this one.
    this.experiment.abort(
        feature.id()
            + " was switched "
            + (enabled ? "on" : "off")
            + " by hand; the client went back to its configured states before that switch");
    synchronized (this) {
      checkSwitch(feature, enabled);
      Map<Feature, FeatureState> next = new EnumMap<>(this.features);
      next.put(feature, FeatureStates.switched(feature, enabled));
      publish(next);
    }
  }

  private synchronized void checkSwitch(Feature feature, boolean enabled) {
    if (!feature.isSwitchableAtRuntime()) {
      throw new IllegalArgumentException(
          "grpc-gcp is chosen when the channels are built and cannot be switched at runtime");
    }
    FeatureState current = this.features.get(feature);
    if (!FeatureStates.isSwitchable(feature, current)) {
      throw new IllegalStateException(
          feature.id() + " cannot be switched on this client: it is " + current);
    }
    if (!this.rpcInstalled) {
      throw new IllegalStateException(
          feature.id() + " cannot be switched: tuning was not installed on this client");
    }
    if (enabled
        && FeatureStates.needsPicker(feature)
        && current.status() == FeatureState.Status.OFF
        && this.builtWithoutPicker) {
      throw new IllegalStateException(
          feature.id()
              + " cannot be switched on: routing and hedging were off when this client was built,"
              + " and the channel picker it needs is set up only then");
    }
  }

  /**
   * The plan of an experiment on this client: {@code duration} and {@code slice} ({@code null} for
   * the defaults, 20 minutes of 60 s slices), the carry-over this client's drain timeout gives
   * ({@link CarryOver#forDrainTimeout}) and the default guard rail.
   *
   * @throws IllegalArgumentException when the durations do not make a plan, saying why
   */
  public ExperimentPlan experimentPlan(Duration duration, Duration slice) {
    return ExperimentPlan.of(
        duration,
        slice,
        CarryOver.forDrainTimeout(this.tuning.getStreamEndGuardDrainTimeout()).length(),
        GuardRail.DEFAULT);
  }

  /**
   * Starts a switchback experiment on this client. Without {@link ExperimentPlan#feature()}, it
   * alternates between the tuned arm (the switchable features as they are now) and the stock arm
   * (every one of them switched off), in slices. With one, between that feature on, even where it
   * is configured off, and off, every other feature as it is now. However it ends, the client is
   * put back in the states it had before. See {@link ExperimentSlot}.
   *
   * @throws IllegalStateException when one is running already, or when no feature spanner-tuning
   *     applies itself is on, so the two arms would be the same client
   * @throws InvalidExperimentPlanException naming {@code feature} when the plan's feature is not
   *     one that can be switched on this client, saying why
   */
  public ExperimentResult startExperiment(ExperimentPlan plan) {
    if (plan.feature() != null) {
      return startFeatureExperiment(plan);
    }
    Map<Feature, FeatureState> tuned;
    synchronized (this) {
      tuned = switchableOn(this.features);
      // A running experiment is refused by the slot, with its progress. A client tuning never
      // reached is never open: the features' reasons say why, not that it is closed.
      if (!this.experiment.isRunning() && (!this.rpcInstalled || tuned.isEmpty())) {
        throw new IllegalStateException(
            "no feature spanner-tuning applies itself is on on this client, so the two arms"
                + " would be the same client: "
                + summaryOfFeatures());
      }
      requireOpen();
    }
    return startExperiment(plan, (arm) -> switchTo(arm, tuned));
  }

  private ExperimentResult startFeatureExperiment(ExperimentPlan plan) {
    Feature feature;
    FeatureState before;
    synchronized (this) {
      try {
        feature = Feature.fromId(plan.feature());
        if (!this.experiment.isRunning()) {
          checkSwitch(feature, true);
          checkSwitch(feature, false);
        }
      } catch (IllegalArgumentException | IllegalStateException ex) {
        throw new InvalidExperimentPlanException("feature", ex.getMessage());
      }
      requireOpen();
      before = this.features.get(feature);
    }
    FeatureState on =
        (before.isApplied() || before.status() == FeatureState.Status.NATIVE)
            ? before
            : FeatureStates.on(feature);
    return startExperiment(
        plan,
        new ArmSwitch() {
          @Override
          public void switchTo(Arm arm) {
            FeatureState to = (arm == Arm.TUNED) ? on : FeatureStates.STOCK_ARM;
            replace(feature, to, before, on, FeatureStates.STOCK_ARM);
          }

          @Override
          public void restore() {
            replace(feature, before, on, FeatureStates.STOCK_ARM);
          }
        });
  }

  private void requireOpen() {
    if (!this.open) {
      throw new IllegalStateException("the client is not open");
    }
  }

  /**
   * Puts {@code feature} in state {@code to} if it is in one of the states an experiment gives it,
   * so that nothing the client resolved meanwhile is overwritten.
   */
  private synchronized void replace(Feature feature, FeatureState to, FeatureState... from) {
    FeatureState current = this.features.get(feature);
    if (current.equals(to) || !List.of(from).contains(current)) {
      return;
    }
    Map<Feature, FeatureState> next = new EnumMap<>(this.features);
    next.put(feature, to);
    publish(next);
  }

  /** Starts an experiment with another arm switch: for a test that makes both arms alike (A/A). */
  ExperimentResult startExperiment(ExperimentPlan plan, ArmSwitch armSwitch) {
    return this.experiment.start(plan, armSwitch);
  }

  /** Stops the running experiment, as a user asked; false when none was running. */
  public boolean stopExperiment(String reason) {
    return this.experiment.stop(reason);
  }

  /** The running experiment, or else the last one; {@code null} when none was started. */
  public ExperimentResult experiment() {
    return this.experiment.result();
  }

  /** Tells {@code listener} of the end of every experiment on this client from now on. */
  public void onExperimentEnd(Consumer<ExperimentResult> listener) {
    this.experiment.onEnd(listener);
  }

  /** This client's experiment figures per call kind and arm, for meters tagged {@code arm}. */
  public ArmTotals experimentTotals() {
    return this.experiment.totals();
  }

  /**
   * Tells {@code listener} of every call this client's experiments record from now on, as they
   * record it: for figures that add up across processes, such as a latency histogram per arm.
   */
  public void addExperimentCallListener(RecordedCallListener listener) {
    this.experiment.addRecordedCallListener(listener);
  }

  /** Stops telling {@code listener} of the calls the experiments record. */
  public void removeExperimentCallListener(RecordedCallListener listener) {
    this.experiment.removeRecordedCallListener(listener);
  }

  /** Whether an experiment is running on this client. */
  public boolean isExperimentRunning() {
    return this.experiment.isRunning();
  }

  /**
   * The arm switch: stock switches off every feature that was on when the experiment started
   * ({@code tuned}), tuned puts them back. Only a feature in the state the experiment gave it is
   * put back, so nothing the client resolved meanwhile is overwritten.
   */
  private synchronized void switchTo(Arm arm, Map<Feature, FeatureState> tuned) {
    Map<Feature, FeatureState> next = new EnumMap<>(this.features);
    for (Map.Entry<Feature, FeatureState> feature : tuned.entrySet()) {
      FeatureState current = next.get(feature.getKey());
      if (arm == Arm.STOCK && current.equals(feature.getValue())) {
        next.put(feature.getKey(), FeatureStates.STOCK_ARM);
      } else if (arm == Arm.TUNED && current.equals(FeatureStates.STOCK_ARM)) {
        next.put(feature.getKey(), feature.getValue());
      }
    }
    if (!next.equals(this.features)) {
      publish(next);
    }
  }

  private static Map<Feature, FeatureState> switchableOn(Map<Feature, FeatureState> features) {
    Map<Feature, FeatureState> on = new EnumMap<>(Feature.class);
    features.forEach(
        (feature, state) -> {
          // The guard's split state counts: its stock arm switches off spanner-tuning's part.
          boolean startersPart =
              state.isApplied()
                  || (state.status() == FeatureState.Status.NATIVE
                      && FeatureStates.isSwitchable(feature, state));
          if (feature.isSwitchableAtRuntime() && startersPart) {
            on.put(feature, state);
          }
        });
    return on;
  }

  private String summaryOfFeatures() {
    StringJoiner line = new StringJoiner(", ");
    this.features.forEach((feature, state) -> line.add(feature.id() + "=" + state));
    return line.toString();
  }

  /** The kind of channel pool the client uses: {@code grpc-gcp} or {@code gax}. */
  public String poolKind() {
    return this.grpcGcpEnabled ? "grpc-gcp" : "gax";
  }

  /**
   * The channels of the pool that take new calls now: the size the client was built with, or on
   * grpc-gcp's dynamic pool its size now (its initial size until routing follows it).
   */
  public int poolSize() {
    return this.channelLoad.isDynamic() ? this.channelLoad.poolSize() : this.numChannels;
  }

  /** Whether the client's pool is grpc-gcp's dynamic pool, whose channels come and go. */
  public boolean isPoolDynamic() {
    return this.dynamicPool;
  }

  /**
   * One line for a log: client versions, the pool, and each feature's state, for example {@code
   * (google-cloud-spanner 6.119.0, grpc-gcp 1.12.0, gax 2.82.0, grpc-java 1.81.0; pool grpc-gcp of
   * 8 channels): single-use-distribution=native (...), stream-end-guard=on, grpc-gcp=native (...)}.
   * The pool is known once the client is built.
   */
  public String summary() {
    ClientVersions versions = versions();
    StringBuilder line =
        new StringBuilder("(google-cloud-spanner ")
            .append(versions.spanner())
            .append(", grpc-gcp ")
            .append((versions.grpcGcp() != null) ? versions.grpcGcp() : "absent")
            .append(", gax ")
            .append(versions.gax())
            .append(", grpc-java ")
            .append(versions.grpc())
            .append("; pool ")
            .append(poolKind())
            .append(this.dynamicPool ? " dynamic, now " : " of ")
            .append(poolSize())
            .append(" channels): ")
            .append(summaryOfFeatures());
    return line.toString();
  }

  /** Runs when the client is closed, for example to remove its meters. */
  public void onClose(Runnable listener) {
    this.closeListeners.add(listener);
  }

  void closed() {
    this.experiment.abort("the client was closed");
    ChannelWarmer warmer = this.warmer;
    if (warmer != null) {
      warmer.close();
      this.warmer = null;
    }
    this.options = null;
    this.readsFrom = null;
    if (this.open) {
      this.open = false;
      // A client built again from these options sets up its picker by the state it finds then.
      this.builtWithoutPicker = false;
      this.closeListeners.forEach(Runnable::run);
      this.channelLoad.reset();
    }
  }

  OpenTelemetry openTelemetry() {
    return this.openTelemetry;
  }

  /**
   * Whether the client traces its calls with OpenTelemetry ({@link Traces#on}): then spanner-tuning
   * puts its attributes on the client's spans. Known once the client's rpc is created.
   */
  boolean traced() {
    return this.traced;
  }

  Tracer tracer() {
    return this.tracer;
  }

  /** Records the pool of a client tuning did not reach: it is never resolved, nor opened. */
  synchronized void pool(boolean grpcGcpEnabled, int numChannels, boolean dynamicPool) {
    this.grpcGcpEnabled = grpcGcpEnabled;
    this.numChannels = numChannels;
    this.dynamicPool = dynamicPool;
  }

  /** Records what the built options show, once the client's rpc is created. */
  synchronized void resolve(
      boolean grpcGcpEnabled, int numChannels, boolean dynamicPool, OpenTelemetry openTelemetry) {
    this.openTelemetry = openTelemetry;
    this.traced = Traces.on(openTelemetry);
    this.tracer = this.traced ? Traces.tracer(openTelemetry) : null;
    pool(grpcGcpEnabled, numChannels, dynamicPool);
    this.channelLoad.poolSize(numChannels);
    this.channelLoad.open();
    this.open = true;
    Map<Feature, FeatureState> next = new EnumMap<>(this.features);
    for (Feature feature : ROUTING) {
      next.put(feature, FeatureStates.routingBuilt(next.get(feature), grpcGcpEnabled));
    }
    if (!grpcGcpEnabled) {
      hedgingUnsupported(next, FeatureStates.GRPC_GCP_OFF);
    }
    if (!next.equals(this.features)) {
      publish(next);
    }
  }

  /**
   * The picker could not be set up on this client. Where the client has its own least-busy pick,
   * that one stays in charge; elsewhere calls are routed as the client does it. Hedging, which
   * sends its hedges by the picker, is unsupported.
   */
  synchronized void pickerUnavailable(String reason) {
    SpannerTuning.warnOnce("single-use-distribution and transaction-routing", reason);
    Map<Feature, FeatureState> next = new EnumMap<>(this.features);
    for (Feature feature : ROUTING) {
      if (next.get(feature).isApplied()) {
        next.put(
            feature,
            FeatureStates.withoutPicker(feature, reason, PoolRouting.hasChannelReferences()));
      }
    }
    hedgingUnsupported(next, reason);
    publish(next);
  }

  /**
   * The client chooses channels or endpoints in a way the picker must not fight ({@link
   * io.github.spannertuning.pool.RoutingAside}): the routing features that were on, and hedging,
   * are unsupported, with the reason, and one warning is logged. The client's pool is left as it
   * is.
   */
  synchronized void routingStepsAside(String reason) {
    Map<Feature, FeatureState> next = new EnumMap<>(this.features);
    boolean changed = false;
    for (Feature feature : ROUTING) {
      FeatureState current = next.get(feature);
      if (current.isApplied() || current.status() == FeatureState.Status.NATIVE) {
        next.put(feature, FeatureState.unsupported(reason));
        changed = true;
      }
    }
    if (hedgingUnsupported(next, reason) || changed) {
      SpannerTuning.warnRoutingAside(reason);
      publish(next);
    }
  }

  /** Hedging sends its hedges by the picker: without it, hedging is unsupported. */
  private static boolean hedgingUnsupported(Map<Feature, FeatureState> next, String reason) {
    if (next.get(Feature.HEDGING).status() == FeatureState.Status.UNSUPPORTED) {
      return false;
    }
    next.put(Feature.HEDGING, FeatureState.unsupported(reason));
    return true;
  }

  /**
   * Whether the open client was built with the picker. One built with both routing features off has
   * none, and they then cannot be switched on while it is open.
   */
  void builtWithPicker(boolean installed) {
    this.builtWithoutPicker = !installed;
  }

  void warmer(ChannelWarmer warmer, SpannerOptions options) {
    this.warmer = warmer;
    this.options = (warmer != null) ? options : null;
    this.readsFrom = null;
    this.readPathWarmed = false;
  }

  /** The database of the client's first session: the warm-up's reads go to it. */
  void readsFrom(String database) {
    this.readsFrom = database;
  }

  /**
   * The open client's channel warmth ({@link SpannerTuning.Builder#warmUp}), or {@code null} where
   * it is not watched: warm-up off, no channel picker, or a dynamic pool.
   */
  public ChannelWarmer warmer() {
    return this.warmer;
  }

  /**
   * Waits until every channel of the client's pool is connected and primed and the read path is
   * warmed ({@link SpannerTuning.Builder#warmUpReads}), at most {@code timeout}: for an application
   * to call before it takes traffic. The warm-up itself starts when the client is built; priming
   * needs the client's first session, which the client creates when the application asks it for a
   * database client.
   *
   * @return what was warm when this returned; never throws for a channel that did not get warm
   *     (fail open: the client works, its first reads on a cold channel wait for its set-up)
   */
  public WarmUp warmUp(Duration timeout) throws InterruptedException {
    ChannelWarmer warmer = this.warmer;
    if (warmer == null) {
      return WarmUp.NOT_WATCHED;
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    ReadWarmUp.Result reads = ReadWarmUp.Result.NONE;
    // The read path is warmed from the first warm channel on, while the others are still being
    // connected and primed: the JVM's work overlaps the network's. Routing sends no read to a
    // channel that is not connected while a warm one has room, so none of them waits for a
    // connection; the others take theirs as they become warm.
    if (this.tuning.warmUpReads() > 0 && warmer.awaitAnyWarm(timeout)) {
      reads =
          warmReadPath(
              Math.min(2 * warmer.warmth().size(), ReadWarmUp.MAX_READERS), left(deadline));
    }
    boolean warm = warmer.awaitWarm(left(deadline));
    int channels = warmer.warmth().size();
    int warmChannels = 0;
    for (var channel : warmer.warmth()) {
      if (channel.isWarm()) {
        warmChannels++;
      }
    }
    return new WarmUp(
        true, warm, channels, warmChannels, warmer.hasSession(), warmer.warmUpTime(), reads);
  }

  private static Duration left(long deadlineNanos) {
    return Duration.ofNanos(Math.max(0, deadlineNanos - System.nanoTime()));
  }

  /**
   * Sends the warm-up's reads ({@link SpannerTuning#warmUpReads}) through the open client's own
   * database client, within what is left of the timeout, from {@code readers} threads.
   */
  private ReadWarmUp.Result warmReadPath(int readers, Duration left) throws InterruptedException {
    SpannerOptions options = this.options;
    String database = this.readsFrom;
    int count = this.tuning.warmUpReads();
    if (options == null
        || database == null
        || count == 0
        || left.isZero()
        || !this.open
        || this.readPathWarmed) {
      return ReadWarmUp.Result.NONE;
    }
    this.readPathWarmed = true;
    // The client the application built: its options hold it until it is closed.
    Spanner spanner = options.getService();
    this.warmingReadPath = true;
    try {
      ReadWarmUp.Result reads =
          ReadWarmUp.run(spanner.getDatabaseClient(DatabaseId.of(database)), count, readers, left);
      this.warmUpReads.add(reads.answered());
      return reads;
    } finally {
      this.warmingReadPath = false;
    }
  }

  /** Whether the calling thread's call is one of the read warm-up's, not the application's. */
  boolean isWarmUpRead() {
    return this.warmingReadPath && ReadWarmUp.isWarmUpRead();
  }

  /** The warm-up's reads read to their end on this client, for its meter. */
  public long warmUpReadCount() {
    return this.warmUpReads.sum();
  }

  /** Priming calls that answered on the open client, for its meter; 0 where none are sent. */
  public double primedCount() {
    ChannelWarmer warmer = this.warmer;
    return (warmer != null) ? warmer.primed() : 0;
  }

  /** Reads routing sent to a cold channel, for its meter; 0 where warmth is not watched. */
  public double coldReadCount() {
    ChannelWarmer warmer = this.warmer;
    return (warmer != null) ? warmer.coldReads() : 0;
  }

  /** Connections refreshed before the server retired them, over the client's life. */
  public long refreshedCount() {
    ChannelWarmer warmer = this.warmer;
    return (warmer != null) ? warmer.refreshed() : 0;
  }

  /**
   * Seconds from the open client's build until all its channels were first warm; {@code NaN} until
   * then, or where warmth is not watched.
   */
  public double warmUpSeconds() {
    ChannelWarmer warmer = this.warmer;
    Duration took = (warmer != null) ? warmer.warmUpTime() : null;
    return (took != null) ? took.toNanos() / 1e9 : Double.NaN;
  }

  /**
   * What a warm-up found.
   *
   * @param watched whether the client's channel warmth is watched at all
   * @param warm whether every channel was warm
   * @param channels the pool's channels
   * @param warmChannels those warm
   * @param sessionKnown whether the client had a session to prime with
   * @param took from the client's start until every channel was warm; {@code null} if not yet
   * @param reads what the warm-up's reads through the client did, from the first warm channel on
   */
  public record WarmUp(
      boolean watched,
      boolean warm,
      int channels,
      int warmChannels,
      boolean sessionKnown,
      Duration took,
      ReadWarmUp.Result reads) {

    static final WarmUp NOT_WATCHED =
        new WarmUp(false, false, 0, 0, false, null, ReadWarmUp.Result.NONE);
  }

  void singleUseRouted() {
    this.singleUseRouted.increment();
  }

  void transactionRouted() {
    this.transactionsRouted.increment();
  }

  void streamEndGuardSkipped() {
    this.streamEndGuardSkipped.increment();
  }

  void streamEndGuardDrained() {
    this.streamEndGuardDrained.increment();
  }

  void streamEndGuardDrainTimedOut() {
    this.streamEndGuardDrainTimeouts.increment();
  }

  void streamEndGuardCancelledAtLimit() {
    this.streamEndGuardCancelledAtLimit.increment();
  }

  /**
   * Whether the guard acts when a stream delivers its {@code last} message rather than when it is
   * closed: where the client drops its call at {@code last} and sends no cancel itself, the guard
   * is native and only its release at the slot limit, its drain timeout and its counters remain.
   */
  boolean guardFinishesAtLast() {
    return this.streamEndGuardAtLast;
  }

  /**
   * Whether a stream that finished at {@code last} on this full connection may be released by a
   * reset: within the connection's budget ({@link SpannerTuning#releaseResets()}).
   */
  boolean mayRelease(ChannelLoad.ChannelStats channel) {
    return channel
        .connection()
        .tryReset(System.nanoTime(), this.releaseWindowNanos, this.releaseResets);
  }

  long drainTimeoutNanos() {
    return this.drainTimeoutNanos;
  }

  /**
   * A close at {@code last} drains while its sub-channel has at most this many calls in flight, its
   * own included: the stream limit less the guard's margin.
   */
  int drainWhileInFlightAtMost() {
    return this.drainWhileInFlightAtMost;
  }

  private void publish(Map<Feature, FeatureState> next) {
    this.features = Collections.unmodifiableMap(next);
    this.singleUseDistributionActive = next.get(Feature.SINGLE_USE_DISTRIBUTION).isApplied();
    this.transactionRoutingActive = next.get(Feature.TRANSACTION_ROUTING).isApplied();
    FeatureState guard = next.get(Feature.STREAM_END_GUARD);
    this.streamEndGuardActive = FeatureStates.guardWorks(guard);
    this.streamEndGuardAtLast = guard.status() == FeatureState.Status.NATIVE;
    this.hedgingActive = next.get(Feature.HEDGING).isApplied();
  }

  @Override
  public String toString() {
    return "SpannerTuningState" + this.features;
  }
}
