package io.github.spannertuning.benchmarks;

import com.google.api.gax.grpc.GrpcCallContext;
import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.SpannerOptions.CallContextConfigurator;
import io.github.spannertuning.client.BenchmarkTuning;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.grpc.Context;
import io.grpc.MethodDescriptor;
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
  ROUND_ROBIN("round robin");

  /** The guard's drain margin for every variant with the guard; negative for the starter's own. */
  private static volatile int drainMargin = -1;

  private final String label;

  Variant(String label) {
    this.label = label;
  }

  String label() {
    return this.label;
  }

  static Variant of(String label) {
    for (Variant variant : values()) {
      if (variant.label.replace(' ', '-').equals(label) || variant.name().equalsIgnoreCase(label)) {
        return variant;
      }
    }
    throw new IllegalArgumentException(
        "Unknown variant '"
            + label
            + "'; use stock, tuned, distribution-only, guard-only or"
            + " round-robin");
  }

  /** {@code --drain-margin}: the slots the guard keeps free, for every run's clients. */
  static void drainMargin(int margin) {
    drainMargin = margin;
  }

  /** Tunes the builder as this variant does; {@code null} for the stock client. */
  SpannerTuningState configure(SpannerOptions.Builder builder) {
    return switch (this) {
      case STOCK -> null;
      case TUNED -> tuning().build().applyTo(builder);
      case DISTRIBUTION_ONLY -> tuning().streamEndGuard(false).build().applyTo(builder);
      case GUARD_ONLY -> tuning().singleUseDistribution(false).build().applyTo(builder);
      case ROUND_ROBIN -> {
        builder.disableGrpcGcpExtension();
        yield tuning()
            .singleUseDistribution(false)
            .grpcGcpExtension(false)
            .build()
            .applyTo(builder);
      }
    };
  }

  private static SpannerTuning.Builder tuning() {
    SpannerTuning.Builder builder = SpannerTuning.newBuilder();
    int margin = drainMargin;
    return (margin < 0) ? builder : BenchmarkTuning.drainMargin(builder, margin);
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
