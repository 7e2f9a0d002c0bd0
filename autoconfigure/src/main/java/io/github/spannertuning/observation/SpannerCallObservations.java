package io.github.spannertuning.observation;

import io.github.spannertuning.client.CallObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Observes the calls of the Spanner clients it is given to, in an application's {@link
 * ObservationRegistry}: with Micrometer's meter handler that is a timer per observation, with a
 * tracing handler a span. The frontend's times are recorded in the {@link MeterRegistry}, where one
 * is given. Hand it to {@code SpannerTuning.Builder.observations(..)}:
 *
 * <pre>{@code
 * SpannerTuning.newBuilder()
 *     .observations(new SpannerCallObservations(observationRegistry, meterRegistry))
 *     .build()
 *     .applyTo(builder);
 * }</pre>
 */
public final class SpannerCallObservations implements CallObserver.Factory {

  private final ObservationRegistry registry;

  private final MeterRegistry meters;

  /**
   * @param registry where each operation and attempt is observed
   * @param meters where the frontend's times are recorded; {@code null} to record none
   */
  public SpannerCallObservations(ObservationRegistry registry, MeterRegistry meters) {
    this.registry = Objects.requireNonNull(registry, "registry");
    this.meters = meters;
  }

  @Override
  public CallObserver forClient(Supplier<String> clientName) {
    return new ClientCallObservations(this.registry, this.meters, clientName);
  }
}
