package io.github.spannertuning.client;

/**
 * The knobs the load benchmark turns that are not part of the starter's API: it sits in the
 * runtime's package, inside the benchmarks module, to reach them.
 */
public final class BenchmarkTuning {

  private BenchmarkTuning() {}

  /**
   * Sets the stream slots a connection keeps free of draining streams, to compare candidates for
   * the starter's default (a tenth of the stream limit).
   */
  public static SpannerTuning.Builder drainMargin(SpannerTuning.Builder builder, int margin) {
    return builder.streamEndGuardDrainMargin(margin);
  }
}
