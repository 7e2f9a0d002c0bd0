package io.github.spannertuning.client;

import java.util.EnumMap;
import java.util.Map;

/**
 * The state of a client that was never built, for tests of the pieces the client's calls go
 * through: routing on, grpc-gcp native, hedging off, and the stream-end guard as the test needs it.
 */
final class TestStates {

  private TestStates() {}

  static SpannerTuningState withGuard(SpannerTuning tuning, FeatureState guard) {
    Map<Feature, FeatureState> features = new EnumMap<>(Feature.class);
    features.put(Feature.STREAM_END_GUARD, guard);
    features.put(Feature.SINGLE_USE_DISTRIBUTION, FeatureState.on());
    features.put(Feature.TRANSACTION_ROUTING, FeatureState.on());
    features.put(Feature.HEDGING, FeatureState.offByConfiguration());
    features.put(Feature.GRPC_GCP, FeatureState.nativeIn("test"));
    return new SpannerTuningState(tuning, features, true);
  }
}
