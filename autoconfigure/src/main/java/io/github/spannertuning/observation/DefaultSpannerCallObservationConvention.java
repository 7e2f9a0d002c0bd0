package io.github.spannertuning.observation;

import io.micrometer.common.KeyValues;

/**
 * The keys of {@link SpannerObservationDocumentation}: the call's system, method, database, error
 * type and client, computed once per combination and reused, so that a call allocates no key of its
 * own. At the call's stop it gives only {@code error.type}, the key that changes then: Micrometer
 * adds a convention's keys at the start and again at the stop, and the others are in the context
 * since the start. The span is named by the method.
 */
public class DefaultSpannerCallObservationConvention implements SpannerCallObservationConvention {

  private final String name;

  /** The convention of {@link SpannerObservationDocumentation#OPERATION}. */
  public DefaultSpannerCallObservationConvention() {
    this(SpannerObservationDocumentation.OPERATION.getName());
  }

  /** The convention of the observation of this name. */
  public DefaultSpannerCallObservationConvention(String name) {
    this.name = name;
  }

  @Override
  public String getName() {
    return this.name;
  }

  @Override
  public String getContextualName(SpannerCallContext context) {
    return context.method();
  }

  @Override
  public KeyValues getLowCardinalityKeyValues(SpannerCallContext context) {
    return context.keyValues();
  }
}
