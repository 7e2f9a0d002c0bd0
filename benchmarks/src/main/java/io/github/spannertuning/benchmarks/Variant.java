package io.github.spannertuning.benchmarks;

import com.google.api.gax.grpc.GrpcCallContext;
import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.SpannerOptions.CallContextConfigurator;
import io.github.spannertuning.client.BenchmarkTuning;
import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.observation.SpannerCallMeterObservationHandler;
import io.github.spannertuning.observation.SpannerCallObservations;
import io.grpc.Context;
import io.grpc.MethodDescriptor;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.atomic.AtomicInteger;

/** A client configuration measured side by side with the others in one run. */
enum Variant {

  /** The client as it comes. */
  STOCK("stock"),

  /** {@code SpannerTuning.defaults()}: every feature on. */
  TUNED("tuned"),

  /** Single-use distribution and channel counting, guard off. */
  DISTRIBUTION_ONLY("distribution only"),

  /** The stream-end guard and channel counting, distribution off. */
  GUARD_ONLY("guard only"),

  /**
   * Perfect spreading, for the "imbalance that remains" question: gax's channel pool (grpc-gcp off)
   * with each point select sent to the next channel in turn, plus the guard. Benchmark-only: the
   * call's channel affinity is set through the client's call-context configurator.
   */
  ROUND_ROBIN("round robin"),

  /**
   * Tuned, with the stream-end guard keeping no slot free: a close at {@code last} drains unless
   * its connection is full. Run only when named, to choose the guard's margin.
   */
  MARGIN_NONE("margin 0"),

  /** Tuned, with the guard keeping a quarter of the slots free. Run only when named. */
  MARGIN_QUARTER("margin 25"),

  /**
   * Tuned with hedged reads on, at the starter's defaults (a budget of 5 % extra calls, the delay
   * at the 97.5th percentile of the time to first response). Run on the stragglers workloads, and
   * on others when named ({@code hedged}).
   */
  HEDGED("tuned + hedging"),

  /**
   * Tuned with hedging, the delay at the 95th percentile: candidates for the delay's percentile,
   * run when named ({@code hedging-p95}, {@code hedging-p97.5}, {@code hedging-p99}).
   */
  HEDGING_P95("hedging p95"),

  /** As {@link #HEDGING_P95}, at the 97.5th percentile, the default's, set explicitly. */
  HEDGING_P975("hedging p97.5"),

  /** As {@link #HEDGING_P95}, at the 99th percentile. */
  HEDGING_P99("hedging p99"),

  /**
   * Tuned, with no connection refreshed before the server retires it (warmed again after its GOAWAY
   * only): beside tuned on the aging workload, for the choice of the refresh's default.
   */
  REFRESH_OFF("refresh off"),

  /**
   * Tuned, with every call observed ({@code SpannerCallObservations}) on an observation registry
   * with Micrometer's meter handler on a Prometheus registry, as Spring Boot configures them with
   * Prometheus (long task timers included): beside tuned, for the observations' cost. Run only when
   * named ({@code observed}).
   */
  OBSERVED("tuned + observations");

  private final String label;

  Variant(String label) {
    this.label = label;
  }

  String label() {
    return this.label;
  }

  static Variant of(String label) {
    for (Variant variant : values()) {
      if (variant.label.replace(' ', '-').equals(label)
          || variant.name().equalsIgnoreCase(label)
          || (variant == HEDGED && label.equals("hedged"))) {
        return variant;
      }
    }
    throw new IllegalArgumentException(
        "Unknown variant '"
            + label
            + "'; use stock, tuned, distribution-only, guard-only, round-robin, margin-0,"
            + " margin-25, hedged, hedging-p95, hedging-p97.5, hedging-p99, refresh-off or observed");
  }

  /** Whether this variant hedges reads. */
  boolean hedges() {
    return this == HEDGED || this == HEDGING_P95 || this == HEDGING_P975 || this == HEDGING_P99;
  }

  /** Tunes the builder as this variant does; {@code null} for the stock client. */
  SpannerTuningState configure(SpannerOptions.Builder builder) {
    return switch (this) {
      case STOCK -> null;
      case TUNED -> SpannerTuning.defaults().applyTo(builder);
      case DISTRIBUTION_ONLY ->
          SpannerTuning.newBuilder().streamEndGuard(false).build().applyTo(builder);
      case GUARD_ONLY ->
          SpannerTuning.newBuilder().singleUseDistribution(false).build().applyTo(builder);
      case MARGIN_NONE ->
          BenchmarkTuning.drainMargin(SpannerTuning.newBuilder(), 0).build().applyTo(builder);
      case MARGIN_QUARTER ->
          BenchmarkTuning.drainMargin(
                  SpannerTuning.newBuilder(), SpannerTuning.DEFAULT_MAX_CONCURRENT_STREAMS / 4)
              .build()
              .applyTo(builder);
      case HEDGED -> SpannerTuning.newBuilder().hedging(true).build().applyTo(builder);
      case HEDGING_P95 -> hedgingAt(0.95, builder);
      case HEDGING_P975 -> hedgingAt(0.975, builder);
      case HEDGING_P99 -> hedgingAt(0.99, builder);
      case REFRESH_OFF -> SpannerTuning.newBuilder().refreshOff().build().applyTo(builder);
      case OBSERVED -> observed(builder);
      case ROUND_ROBIN -> {
        builder.disableGrpcGcpExtension();
        yield SpannerTuning.newBuilder()
            .singleUseDistribution(false)
            .grpcGcpExtension(false)
            .build()
            .applyTo(builder);
      }
    };
  }

  private static SpannerTuningState hedgingAt(double quantile, SpannerOptions.Builder builder) {
    return BenchmarkTuning.hedgingQuantile(SpannerTuning.newBuilder().hedging(true), quantile)
        .build()
        .applyTo(builder);
  }

  /**
   * Tuned with observations on a registry of the client's own, as Boot's {@code
   * ObservationAutoConfiguration} builds it with metrics and no tracing and the starter: its
   * Spanner calls' handler ahead of the default meter handler in a first-matching group. Each
   * client gets a new Prometheus registry, so that no window's meters carry over to the next.
   */
  private static SpannerTuningState observed(SpannerOptions.Builder builder) {
    PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    ObservationRegistry registry = ObservationRegistry.create();
    registry
        .observationConfig()
        .observationHandler(SpannerCallMeterObservationHandler.withDefault(meters));
    SpannerTuningState state =
        SpannerTuning.newBuilder()
            .observations(new SpannerCallObservations(registry, meters))
            .build()
            .applyTo(builder);
    if (state.observations().status() != FeatureState.Status.ON) {
      throw new IllegalStateException(
          "observations are not on for this client: " + state.observations());
    }
    return state;
  }

  /** The context each query of this variant runs in; {@code null} for the thread's own. */
  Context context() {
    return (this == ROUND_ROBIN)
        ? Context.ROOT.withValue(SpannerOptions.CALL_CONTEXT_CONFIGURATOR_KEY, new RoundRobin())
        : null;
  }

  /**
   * Gives each streaming query the next channel of gax's pool. gax's pool takes the affinity modulo
   * its size. The returned context is merged into the client's: merging replaces the call options
   * (so the client's are carried over) and appends headers (so none are carried).
   */
  private static final class RoundRobin implements CallContextConfigurator {

    private final AtomicInteger next = new AtomicInteger();

    @Override
    public <ReqT, RespT> ApiCallContext configure(
        ApiCallContext context, ReqT request, MethodDescriptor<ReqT, RespT> method) {
      if (!method.getBareMethodName().equals("ExecuteStreamingSql")) {
        return null;
      }
      return GrpcCallContext.createDefault()
          .withCallOptions(((GrpcCallContext) context).getCallOptions())
          .withChannelAffinity(this.next.getAndIncrement() & Integer.MAX_VALUE);
    }
  }
}
