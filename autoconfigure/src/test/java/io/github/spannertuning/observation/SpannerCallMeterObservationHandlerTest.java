package io.github.spannertuning.observation;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.client.CallObserver;
import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler.FirstMatchingCompositeObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The starter's handler makes the timers Micrometer's default handler makes for the same calls,
 * names, keys and counts, and no long task timer; keys a filter adds are on them; every other
 * observation goes on to the default handler.
 */
class SpannerCallMeterObservationHandlerTest {

  private static final String SESSION = "projects/p/instances/i/databases/orders/sessions/s1";

  @Test
  void theCallsGetTheTimersOfMicrometersDefaultHandlerButNoLongTaskTimer() {
    MeterRegistry byDefault = new SimpleMeterRegistry();
    calls(registry(byDefault, false));
    MeterRegistry starter = new SimpleMeterRegistry();
    calls(registry(starter, true));

    Map<String, Long> expected = timers(byDefault);
    assertThat(expected)
        .as("the default handler's timers, as the setup's calls make them")
        .containsEntry(
            "spanner.client.operation{db.namespace=orders, db.operation.name=Commit,"
                + " db.system.name=gcp.spanner, error=none, error.type=ABORTED,"
                + " spanner.client=spanner}",
            1L)
        .containsEntry(
            "spanner.client.operation{db.namespace=orders, db.operation.name=Commit,"
                + " db.system.name=gcp.spanner, error=none, error.type=none,"
                + " spanner.client=spanner}",
            3L)
        .containsEntry(
            "spanner.client.attempt{db.namespace=orders,"
                + " db.operation.name=ExecuteStreamingSql, db.system.name=gcp.spanner,"
                + " error=none, error.type=none, spanner.client=spanner}",
            5L);
    assertThat(timers(starter)).isEqualTo(expected);
    assertThat(byDefault.find("spanner.client.operation.active").longTaskTimers()).isNotEmpty();
    assertThat(starter.find("spanner.client.operation.active").meters()).isEmpty();
    assertThat(starter.find("spanner.client.attempt.active").meters()).isEmpty();
  }

  @Test
  void eachCallIsTimedFromItsStartToItsStop() throws InterruptedException {
    MeterRegistry meters = new SimpleMeterRegistry();
    CallObserver observer =
        new SpannerCallObservations(registry(meters, true), null).forClient(() -> "spanner");
    CallObserver.Call call = observer.operation("Commit", SESSION);
    Thread.sleep(20);
    call.stop(CallObserver.NO_ERROR);
    Timer timer = meters.get("spanner.client.operation").timer();
    assertThat(timer.count()).isEqualTo(1);
    assertThat(timer.totalTime(TimeUnit.MILLISECONDS)).isGreaterThanOrEqualTo(20);
  }

  @Test
  void keysAFilterAddsAreOnTheTimers() {
    MeterRegistry meters = new SimpleMeterRegistry();
    ObservationRegistry registry = registry(meters, true);
    registry
        .observationConfig()
        .observationFilter(
            (context) -> context.addLowCardinalityKeyValue(KeyValue.of("region", "eu-west1")));
    CallObserver observer = new SpannerCallObservations(registry, null).forClient(() -> "spanner");
    for (int i = 0; i < 3; i++) {
      observer.operation("Commit", SESSION).stop(CallObserver.NO_ERROR);
    }
    assertThat(
            meters
                .get("spanner.client.operation")
                .tag("region", "eu-west1")
                .tag("db.namespace", "orders")
                .tag("db.operation.name", "Commit")
                .tag("error.type", "none")
                .tag("error", "none")
                .timer()
                .count())
        .isEqualTo(3);
  }

  @Test
  void otherObservationsGoOnToTheDefaultHandler() {
    MeterRegistry meters = new SimpleMeterRegistry();
    ObservationRegistry registry = registry(meters, true);
    Observation.createNotStarted("app.work", registry).observe(() -> {});
    assertThat(meters.get("app.work").timer().count()).isEqualTo(1);
    assertThat(meters.find("app.work.active").longTaskTimers()).hasSize(1);
  }

  /** Two operations of Commit (one ABORTED, then three fine) and five attempts of a query. */
  private static void calls(ObservationRegistry registry) {
    CallObserver observer = new SpannerCallObservations(registry, null).forClient(() -> "spanner");
    observer.operation("Commit", SESSION).stop("ABORTED");
    for (int i = 0; i < 3; i++) {
      observer.operation("Commit", SESSION).stop(CallObserver.NO_ERROR);
    }
    for (int i = 0; i < 5; i++) {
      CallObserver.Attempt attempt = observer.attempt("ExecuteStreamingSql");
      attempt.on(SESSION);
      attempt.stop(CallObserver.NO_ERROR);
    }
  }

  /** As Boot groups meter handlers: the starter's, where given, ahead of the default. */
  private static ObservationRegistry registry(MeterRegistry meters, boolean starter) {
    ObservationRegistry registry = ObservationRegistry.create();
    registry
        .observationConfig()
        .observationHandler(
            starter
                ? SpannerCallMeterObservationHandler.withDefault(meters)
                : new FirstMatchingCompositeObservationHandler(
                    new DefaultMeterObservationHandler(meters)));
    return registry;
  }

  /** Each timer by its name and sorted tags, with its count. */
  private static Map<String, Long> timers(MeterRegistry meters) {
    Map<String, Long> timers = new TreeMap<>();
    for (Meter meter : meters.getMeters()) {
      if (meter instanceof Timer timer) {
        Map<String, String> tags = new TreeMap<>();
        timer.getId().getTags().forEach((tag) -> tags.put(tag.getKey(), tag.getValue()));
        timers.put(timer.getId().getName() + tags, timer.count());
      }
    }
    return timers;
  }
}
