package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.experiment.CarryOver;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.GuardRail;
import io.github.spannertuning.experiment.InvalidExperimentPlanException;
import java.time.Duration;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * Configuration of spanner-tuning. Unknown keys under {@code spanner.tuning} fail startup rather
 * than being ignored, so a misspelt switch cannot go unnoticed.
 */
@ConfigurationProperties(prefix = "spanner.tuning", ignoreUnknownFields = false)
public class SpannerTuningProperties implements Validator {

  static final String CHANNELS_ALLOWED = "an integer from 1 to " + SpannerTuning.MAX_CHANNELS;

  static final String DRAIN_TIMEOUT_ALLOWED = "a positive duration, such as 5s or 500ms";

  static final String MAX_CONCURRENT_STREAMS_ALLOWED =
      "an integer of at least 1, the concurrent streams the server allows per connection (Cloud"
          + " Spanner allows 100)";

  static final String MAX_EXTRA_ALLOWED =
      "a share of hedgeable reads from 0 to 1, the extra calls hedging may add (0.05 is 5 %)";

  static final String MIN_DELAY_ALLOWED = "a duration of 0 or more, such as 1ms";

  static final String WARM_UP_TIMEOUT_ALLOWED = "a positive duration, such as 10s";

  static final String REFRESH_AFTER_ALLOWED =
      "learned, off, or a duration of at least 1s, such as 50m";

  static final String EXPERIMENT_DURATION_ALLOWED =
      "a duration holding 1 to "
          + ExperimentPlan.MAX_PAIRS
          + " pairs of slices (duration / (2 x slice)), such as 20m; unset, no experiment starts"
          + " at startup unless spanner.tuning.experiment.slice or .fleet is set (then 20m)";

  static final String EXPERIMENT_SLICE_ALLOWED =
      "a duration longer than the carry-over discarded after each switch (the larger of the"
          + " stream-end guard's drain timeout and 2s), and in a fleet longer than that and "
          + ExperimentPlan.FLEET_CLOCK_SKEW.toMillis()
          + "ms together, such as 60s; unset, 60s";

  static final String EXPERIMENT_FLEET_ALLOWED = ExperimentPlan.FLEET_ID_ALLOWED;

  /**
   * What each property that is not a true/false switch accepts, by bean path as {@link #validate}
   * names it: the failure analyzer's advice (its tests fail for a property missing here).
   */
  static final Map<String, String> ACCEPTS =
      Map.ofEntries(
          Map.entry("warmUp.reads", SpannerTuning.WARM_UP_READS_ALLOWED),
          Map.entry("channels", CHANNELS_ALLOWED),
          Map.entry("streamEndGuard.drainTimeout", DRAIN_TIMEOUT_ALLOWED),
          Map.entry("streamEndGuard.maxConcurrentStreams", MAX_CONCURRENT_STREAMS_ALLOWED),
          Map.entry("hedging.maxExtra", MAX_EXTRA_ALLOWED),
          Map.entry("hedging.minDelay", MIN_DELAY_ALLOWED),
          Map.entry("experiment.duration", EXPERIMENT_DURATION_ALLOWED),
          Map.entry("experiment.slice", EXPERIMENT_SLICE_ALLOWED),
          Map.entry("experiment.fleet", EXPERIMENT_FLEET_ALLOWED),
          Map.entry("warmUp.timeout", WARM_UP_TIMEOUT_ALLOWED),
          Map.entry("warmUp.refreshAfter", REFRESH_AFTER_ALLOWED));

  /** Whether to tune the Spanner clients of this application at all. */
  private boolean enabled = true;

  /**
   * Size of the gRPC channel pool, from 1 to 256. Unset keeps the client's own (8 with grpc-gcp, or
   * spring-cloud-gcp's spring.cloud.gcp.spanner.num-rpc-channels).
   */
  private Integer channels;

  private final SingleUseDistribution singleUseDistribution = new SingleUseDistribution();

  private final TransactionRouting transactionRouting = new TransactionRouting();

  private final StreamEndGuard streamEndGuard = new StreamEndGuard();

  private final Hedging hedging = new Hedging();

  private final GrpcGcp grpcGcp = new GrpcGcp();

  private final WarmUp warmUp = new WarmUp();

  private final Metrics metrics = new Metrics();

  private final Observations observations = new Observations();

  private final Experiment experiment = new Experiment();

  public boolean isEnabled() {
    return this.enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public Integer getChannels() {
    return this.channels;
  }

  public void setChannels(Integer channels) {
    this.channels = channels;
  }

  public SingleUseDistribution getSingleUseDistribution() {
    return this.singleUseDistribution;
  }

  public TransactionRouting getTransactionRouting() {
    return this.transactionRouting;
  }

  public StreamEndGuard getStreamEndGuard() {
    return this.streamEndGuard;
  }

  public Hedging getHedging() {
    return this.hedging;
  }

  public GrpcGcp getGrpcGcp() {
    return this.grpcGcp;
  }

  public WarmUp getWarmUp() {
    return this.warmUp;
  }

  public Metrics getMetrics() {
    return this.metrics;
  }

  public Observations getObservations() {
    return this.observations;
  }

  public Experiment getExperiment() {
    return this.experiment;
  }

  @Override
  public boolean supports(Class<?> type) {
    return SpannerTuningProperties.class.isAssignableFrom(type);
  }

  /** Boot runs this after binding, and reports each rejected value with its property name. */
  @Override
  public void validate(Object target, Errors errors) {
    SpannerTuningProperties properties = (SpannerTuningProperties) target;
    Integer channels = properties.getChannels();
    if (channels != null && (channels < 1 || channels > SpannerTuning.MAX_CHANNELS)) {
      errors.rejectValue("channels", "range", "must be " + CHANNELS_ALLOWED);
    }
    Duration drainTimeout = properties.getStreamEndGuard().getDrainTimeout();
    if (drainTimeout == null || drainTimeout.isNegative() || drainTimeout.isZero()) {
      errors.rejectValue(
          "streamEndGuard.drainTimeout", "range", "must be " + DRAIN_TIMEOUT_ALLOWED);
    }
    if (properties.getStreamEndGuard().getMaxConcurrentStreams() < 1) {
      errors.rejectValue(
          "streamEndGuard.maxConcurrentStreams",
          "range",
          "must be " + MAX_CONCURRENT_STREAMS_ALLOWED);
    }
    double maxExtra = properties.getHedging().getMaxExtra();
    if (!(maxExtra >= 0 && maxExtra <= 1)) {
      errors.rejectValue("hedging.maxExtra", "range", "must be " + MAX_EXTRA_ALLOWED);
    }
    Duration minDelay = properties.getHedging().getMinDelay();
    if (minDelay == null || minDelay.isNegative()) {
      errors.rejectValue("hedging.minDelay", "range", "must be " + MIN_DELAY_ALLOWED);
    }
    Duration warmUpTimeout = properties.getWarmUp().getTimeout();
    if (warmUpTimeout == null || warmUpTimeout.isNegative() || warmUpTimeout.isZero()) {
      errors.rejectValue("warmUp.timeout", "range", "must be " + WARM_UP_TIMEOUT_ALLOWED);
    }
    int warmUpReads = properties.getWarmUp().getReads();
    if (warmUpReads < 0 || warmUpReads > SpannerTuning.MAX_WARM_UP_READS) {
      errors.rejectValue("warmUp.reads", "range", "must be " + SpannerTuning.WARM_UP_READS_ALLOWED);
    }
    try {
      properties.getWarmUp().refreshAfter();
    } catch (IllegalArgumentException ex) {
      errors.rejectValue("warmUp.refreshAfter", "range", "must be " + REFRESH_AFTER_ALLOWED);
    }
    validateExperiment(properties.getExperiment(), drainTimeout, errors);
  }

  private static void validateExperiment(
      Experiment experiment, Duration drainTimeout, Errors errors) {
    if (!experiment.startsAtStartup()) {
      return;
    }
    Duration duration = experiment.getDuration();
    Duration slice = experiment.getSlice();
    boolean bad = false;
    if (duration != null && (duration.isNegative() || duration.isZero())) {
      errors.rejectValue("experiment.duration", "range", "must be " + EXPERIMENT_DURATION_ALLOWED);
      bad = true;
    }
    if (slice != null && (slice.isNegative() || slice.isZero())) {
      errors.rejectValue("experiment.slice", "range", "must be " + EXPERIMENT_SLICE_ALLOWED);
      bad = true;
    }
    if (bad || drainTimeout == null || drainTimeout.isNegative() || drainTimeout.isZero()) {
      return;
    }
    try {
      experiment.plan(drainTimeout);
    } catch (InvalidExperimentPlanException ex) {
      String path = "experiment." + ex.field();
      errors.rejectValue(path, "range", ex.getMessage() + "; must be " + ACCEPTS.get(path));
    }
  }

  /**
   * The runtime configuration these properties describe. The client's INFO line is logged by the
   * auto-configuration, which knows the Spanner bean's name, not by the runtime.
   */
  public SpannerTuning toTuning() {
    return toTuning(null);
  }

  /**
   * As {@link #toTuning()}, observing each client's calls with {@code observations} where {@code
   * spanner.tuning.observations.enabled} allows; {@code null} for none.
   */
  public SpannerTuning toTuning(CallObserver.Factory observations) {
    SpannerTuning.Builder builder =
        SpannerTuning.newBuilder()
            .logWhenBuilt(false)
            .singleUseDistribution(this.singleUseDistribution.isEnabled())
            .transactionRouting(this.transactionRouting.isEnabled())
            .streamEndGuard(this.streamEndGuard.isEnabled())
            .streamEndGuardDrainTimeout(this.streamEndGuard.getDrainTimeout())
            .streamEndGuardMaxConcurrentStreams(this.streamEndGuard.getMaxConcurrentStreams())
            .hedging(this.hedging.isEnabled())
            .hedgingMaxExtra(this.hedging.getMaxExtra())
            .hedgingMinDelay(this.hedging.getMinDelay())
            .grpcGcpExtension(this.grpcGcp.isEnabled())
            .warmUp(this.warmUp.isEnabled())
            .warmUpReads(this.warmUp.getReads())
            .channels(this.channels);
    if (!this.observations.isEnabled()) {
      builder.observationsOff("spanner.tuning.observations.enabled=false");
    } else if (observations != null) {
      builder.observations(observations);
    } else {
      builder.observationsOff(
          "no ObservationRegistry bean, or management.observations.enable.spanner.client=false");
    }
    this.warmUp.applyRefresh(builder);
    return builder.build();
  }

  /** Single-use reads and queries sent to the channel with the lowest expected latency. */
  public static class SingleUseDistribution {

    /**
     * Whether to send single-use reads and queries to the channel with the lowest expected latency,
     * with no affinity binding: a connection that answers slower, is stuck or fails gets none while
     * the others have room.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** Read-only and read/write transactions started on the channel with the lowest latency. */
  public static class TransactionRouting {

    /**
     * Whether to send the first call of each read-only and read/write transaction to the channel
     * with the lowest expected latency, as single-use reads are; the transaction's later calls,
     * commit and rollback included, follow it. Partitioned DML goes where the client sends it.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** Skipping the cancel of streams that have finished. */
  public static class StreamEndGuard {

    /**
     * Whether to skip the cancel the client sends when it closes a stream that has finished: one
     * whose last message (marked last by Spanner) or end has arrived, such as a point select closed
     * after its row. Such a stream completes when its trailers arrive. Cancels of unfinished
     * streams always go through.
     */
    private boolean enabled = true;

    /**
     * How long a stream closed at its last message may wait for its trailers; if they have not
     * arrived by then, the call is cancelled. Must be positive.
     */
    private Duration drainTimeout = Duration.ofSeconds(5);

    /**
     * Concurrent streams the server allows per connection. A stream closed at its last message
     * holds one of them until its trailers arrive, so it drains only while its connection has at
     * most this many less a tenth (rounded down) calls in flight, its own included; otherwise it is
     * cancelled at once, as the client would, and its slot goes to the calls waiting. At least 1;
     * 100, as Cloud Spanner's frontends allow.
     */
    private int maxConcurrentStreams = SpannerTuning.DEFAULT_MAX_CONCURRENT_STREAMS;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getDrainTimeout() {
      return this.drainTimeout;
    }

    public void setDrainTimeout(Duration drainTimeout) {
      this.drainTimeout = drainTimeout;
    }

    public int getMaxConcurrentStreams() {
      return this.maxConcurrentStreams;
    }

    public void setMaxConcurrentStreams(int maxConcurrentStreams) {
      this.maxConcurrentStreams = maxConcurrentStreams;
    }
  }

  /** Hedged reads: a read that has not answered in time is sent again to another channel. */
  public static class Hedging {

    /**
     * Whether to hedge reads that are safe to send twice (single-use reads and queries, and reads
     * of read-only transactions that have their id): one that has not answered by a recent high
     * percentile of its statement's time to first response is sent again to another channel, and
     * the first attempt to answer is the one the application reads.
     */
    private boolean enabled = false;

    /**
     * The extra calls hedging may add, as a share of hedgeable reads, from 0 to 1: hedges stay
     * within it whatever the server does. A read waits for the percentile of its statement's time
     * to first response that leaves half of this share to hedges: 0.05 waits for the 97.5th.
     */
    private double maxExtra = SpannerTuning.DEFAULT_HEDGING_MAX_EXTRA;

    /** The least time a read waits for its first response before it is hedged. */
    private Duration minDelay = SpannerTuning.DEFAULT_HEDGING_MIN_DELAY;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public double getMaxExtra() {
      return this.maxExtra;
    }

    public void setMaxExtra(double maxExtra) {
      this.maxExtra = maxExtra;
    }

    public Duration getMinDelay() {
      return this.minDelay;
    }

    public void setMinDelay(Duration minDelay) {
      this.minDelay = minDelay;
    }
  }

  /**
   * Warm connections: every channel of a client's pool connects when the client is built and again
   * as soon as the server retires its connection, and is primed with one {@code SELECT 1} before
   * routing sends it reads. The application reports ready (readiness state {@code
   * ACCEPTING_TRAFFIC}) only once every client's channels are warm, or the timeout has passed.
   */
  public static class WarmUp {

    /**
     * Whether to warm the channels of each tuned client, and hold the application's readiness until
     * they are warm.
     */
    private boolean enabled = true;

    /**
     * How long the application's start waits for the channels to be warm before it reports ready
     * anyway, with a warning naming what is not warm: a start never hangs on an unreachable
     * Spanner.
     */
    private Duration timeout = Duration.ofSeconds(10);

    /**
     * When to refresh each channel's connection before the server retires it (make before break,
     * one channel at a time, with up to a tenth of jitter): "learned" (three quarters of the age at
     * which the server retired connections, once it has retired one), "off" (warm a connection
     * again only after the server retired it), or a duration of at least 1s.
     */
    private String refreshAfter = "learned";

    /**
     * Reads to warm the read path with before the application reports ready, from the moment a
     * first channel is warm: single-use SELECT 1 queries through the client itself, spread over its
     * channels, until this many have been read or the timeout has passed. 0 turns it off.
     */
    private int reads = SpannerTuning.DEFAULT_WARM_UP_READS;

    public int getReads() {
      return this.reads;
    }

    public void setReads(int reads) {
      this.reads = reads;
    }

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public Duration getTimeout() {
      return this.timeout;
    }

    public void setTimeout(Duration timeout) {
      this.timeout = timeout;
    }

    public String getRefreshAfter() {
      return this.refreshAfter;
    }

    public void setRefreshAfter(String refreshAfter) {
      this.refreshAfter = refreshAfter;
    }

    /**
     * The refresh age set, {@code null} for learned and zero for off.
     *
     * @throws IllegalArgumentException when it is none of {@value #REFRESH_AFTER_ALLOWED}
     */
    Duration refreshAfter() {
      String value = (this.refreshAfter != null) ? this.refreshAfter.trim() : "";
      if (value.equalsIgnoreCase("learned")) {
        return null;
      }
      if (value.equalsIgnoreCase("off")) {
        return Duration.ZERO;
      }
      Duration after = DurationStyle.detectAndParse(value);
      if (after.compareTo(Duration.ofSeconds(1)) < 0) {
        throw new IllegalArgumentException("below 1s: " + value);
      }
      return after;
    }

    void applyRefresh(SpannerTuning.Builder builder) {
      Duration after = refreshAfter();
      if (after == null) {
        builder.refreshAfterLearned();
      } else if (after.isZero()) {
        builder.refreshOff();
      } else {
        builder.refreshAfter(after);
      }
    }
  }

  /** The grpc-gcp channel pool. */
  public static class GrpcGcp {

    /**
     * Whether to switch the grpc-gcp extension on when the client has it off. Load-aware channel
     * picking needs it.
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /**
   * A switchback experiment started on each Spanner client as it is built, for a canary instance or
   * a whole fleet: the client alternates between tuned and stock in slices and reports which is
   * faster (see docs/experiment.md). None starts unless one of these is set.
   */
  public static class Experiment {

    /**
     * How long the experiment started at startup runs: whole pairs of slices, 1 to 500 of them.
     * Unset, no experiment starts at startup, unless the slice or the fleet is set (then 20m).
     */
    private Duration duration;

    /**
     * How long the client stays in one arm; longer than the carry-over discarded after each switch
     * (the larger of the stream-end guard's drain timeout and 2s). Unset, 60s.
     */
    private Duration slice;

    /**
     * The id of a fleet whose instances run the experiment together: every instance started with
     * the same id switches arms at the same moments, on slices aligned to multiples of the slice
     * since the epoch, in an order drawn from the id. 1 to 64 letters, digits, '-', '_' or '.'.
     * Unset, each client runs its experiment alone.
     */
    private String fleet;

    public Duration getDuration() {
      return this.duration;
    }

    public void setDuration(Duration duration) {
      this.duration = duration;
    }

    public Duration getSlice() {
      return this.slice;
    }

    public void setSlice(Duration slice) {
      this.slice = slice;
    }

    public String getFleet() {
      return this.fleet;
    }

    public void setFleet(String fleet) {
      this.fleet = fleet;
    }

    /** Whether an experiment starts on each client as it is built. */
    public boolean startsAtStartup() {
      return this.duration != null || this.slice != null || this.fleet != null;
    }

    /** The plan these give with this drain timeout, as a client tuned by it would make it. */
    ExperimentPlan plan(Duration drainTimeout) {
      return ExperimentPlan.of(
              this.duration,
              this.slice,
              CarryOver.forDrainTimeout(drainTimeout).length(),
              GuardRail.DEFAULT)
          .inFleet(this.fleet);
    }
  }

  /** Each Spanner call as a Micrometer observation. */
  public static class Observations {

    /**
     * Whether to observe each Spanner call in the application's ObservationRegistry: the
     * spanner.client.operation and spanner.client.attempt timers (and spans, with tracing) and the
     * frontend's time, spanner.client.server.duration (Boot's
     * management.observations.enable.spanner.client=false turns them off too).
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** Micrometer meters of channel load. */
  public static class Metrics {

    /**
     * Whether to publish per-channel load and tuning counters to Micrometer (Boot's
     * management.metrics.enable.spanner.tuning=false turns them off too).
     */
    private boolean enabled = true;

    public boolean isEnabled() {
      return this.enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }
}
