package io.github.spannertuning.client;

import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;

/**
 * The client's own {@link GapicSpannerRpc}, unchanged but for telling the tuning state when the
 * client closes. Used where {@link TunedSpannerRpc}'s methods do not match this client version: the
 * client then behaves as stock, and its state (features unsupported, channel load) still reaches
 * the registry, the meters and the endpoint. Refers to no class a version may lack. {@link
 * TunedSpannerRpc} and {@link GuardOnlySpannerRpc} build on it.
 */
class ObservedSpannerRpc extends GapicSpannerRpc {

  final SpannerTuningState state;

  ObservedSpannerRpc(SpannerOptions options, SpannerTuningState state) {
    super(options);
    this.state = state;
  }

  @Override
  public void shutdown() {
    try {
      super.shutdown();
    } finally {
      this.state.closed();
    }
  }

  @Override
  public void shutdownNow() {
    try {
      super.shutdownNow();
    } finally {
      this.state.closed();
    }
  }
}
