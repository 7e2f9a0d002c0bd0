package io.github.spannertuning.observation;

import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.observation.MeterObservationHandler;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationHandler.FirstMatchingCompositeObservationHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Times the Spanner calls' observations as Micrometer's {@link DefaultMeterObservationHandler}
 * would, with the same timer (the observation's name, its low-cardinality keys, and {@code error}),
 * at a fraction of its cost per call: the timer of each set of keys is registered once and found
 * again with one map look-up, and the call's time is the one the starter's hooks measured already.
 * It makes no long task timer ({@code <name>.active}): the calls in flight are per channel in
 * {@code spanner.tuning.channel.active.streams}.
 *
 * <p>Register it before the default handler in the first-matching group of meter handlers (Spring
 * Boot: a bean ordered ahead of it, which the starter provides); it takes only {@link
 * SpannerCallContext}s and leaves every other observation to the handlers after it. Keys that an
 * {@code ObservationFilter} or a custom convention adds are honoured, as they are by the default.
 */
public final class SpannerCallMeterObservationHandler
    implements MeterObservationHandler<SpannerCallContext> {

  private static final String OPERATION = SpannerObservationDocumentation.OPERATION.getName();

  private static final String ATTEMPT = SpannerObservationDocumentation.ATTEMPT.getName();

  /** The {@code error} key's value of a call that ended without an exception, as Micrometer's. */
  private static final String NO_ERROR = "none";

  private final MeterRegistry registry;

  /** The timers of calls that end without an exception and with only the default keys. */
  private final ConcurrentHashMap<KeyValues, Timer> operations = new ConcurrentHashMap<>();

  private final ConcurrentHashMap<KeyValues, Timer> attempts = new ConcurrentHashMap<>();

  /** Every other call's timers. */
  private final ConcurrentHashMap<TimerKey, Timer> timers = new ConcurrentHashMap<>();

  /**
   * @param registry where the calls' timers are registered
   */
  public SpannerCallMeterObservationHandler(MeterRegistry registry) {
    this.registry = Objects.requireNonNull(registry, "registry");
  }

  /**
   * This handler ahead of Micrometer's default meter handler on the same registry, in one
   * first-matching group: what Spring Boot sets up with the starter, for a plain-Java application's
   * {@code ObservationRegistry}: {@code
   * registry.observationConfig().observationHandler(SpannerCallMeterObservationHandler.withDefault(meters))}.
   */
  public static ObservationHandler<Observation.Context> withDefault(MeterRegistry registry) {
    return new FirstMatchingCompositeObservationHandler(
        new SpannerCallMeterObservationHandler(registry),
        new DefaultMeterObservationHandler(registry));
  }

  @Override
  public boolean supportsContext(Observation.Context context) {
    return context instanceof SpannerCallContext;
  }

  @Override
  public void onStop(SpannerCallContext context) {
    long nanos = context.elapsedNanos();
    if (nanos >= 0) {
      timer(context).record(nanos, TimeUnit.NANOSECONDS);
    }
  }

  private Timer timer(SpannerCallContext context) {
    Throwable error = context.getError();
    KeyValues own = context.ownKeyValues();
    String name = context.getName();
    if (own != null && error == null) {
      // The common case: no allocation, one look-up.
      ConcurrentHashMap<KeyValues, Timer> timers =
          OPERATION.equals(name) ? this.operations : ATTEMPT.equals(name) ? this.attempts : null;
      if (timers != null) {
        Timer timer = timers.get(own);
        return (timer != null)
            ? timer
            : timers.computeIfAbsent(own, (keys) -> register(new TimerKey(name, keys, NO_ERROR)));
      }
    }
    TimerKey key =
        new TimerKey(
            name,
            context.getLowCardinalityKeyValues(),
            (error != null) ? error.getClass().getSimpleName() : NO_ERROR);
    Timer timer = this.timers.get(key);
    return (timer != null) ? timer : this.timers.computeIfAbsent(key, this::register);
  }

  private Timer register(TimerKey key) {
    List<Tag> tags = new ArrayList<>();
    for (KeyValue keyValue : key.keys()) {
      tags.add(Tag.of(keyValue.getKey(), keyValue.getValue()));
    }
    tags.add(Tag.of("error", key.error()));
    return Timer.builder(key.name()).tags(Tags.of(tags)).register(this.registry);
  }

  /** A timer's identity: the observation's name, its keys and its error. */
  private record TimerKey(String name, KeyValues keys, String error) {}
}
