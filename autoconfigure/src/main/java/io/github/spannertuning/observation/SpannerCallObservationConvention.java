package io.github.spannertuning.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * The convention of a Spanner call's observation. An application that wants other keys registers
 * its own as a global convention ({@code
 * ObservationRegistry.observationConfig().observationConvention}) or a bean Boot adds so.
 */
public interface SpannerCallObservationConvention
    extends ObservationConvention<SpannerCallContext> {

  @Override
  default boolean supportsContext(Observation.Context context) {
    return context instanceof SpannerCallContext;
  }
}
