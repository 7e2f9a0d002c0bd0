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

  /**
   * Sets the routing rule's constants, to compare candidates for the starter's defaults: a channel
   * is hot above the pool's mean calls in flight plus the mean shifted right by {@code hotShift},
   * and about as fast as the fastest within its expected latency plus that shifted right by {@code
   * bandShift}.
   */
  public static SpannerTuning.Builder routingRule(
      SpannerTuning.Builder builder, int hotShift, int bandShift) {
    return builder.routingHotShift(hotShift).routingBandShift(bandShift);
  }

  /**
   * Sets the percentile of the time to first response a read waits for before it is hedged, to
   * compare candidates for the starter's default ({@code 1 - maxExtra / 2}, the 97.5th percentile
   * at the default budget).
   */
  public static SpannerTuning.Builder hedgingQuantile(
      SpannerTuning.Builder builder, double quantile) {
    return builder.hedgingQuantile(quantile);
  }
}
