package io.github.spannertuning.observation;

import io.github.spannertuning.client.ServerTiming;
import io.github.spannertuning.observation.SpannerObservationDocumentation.LowCardinalityKeys;
import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The keys of the calls of one method, database and client, with each error type's key values and
 * frontend meters made on first use and reused: a call finds them with one map look-up.
 */
final class CallKeys {

  private static final String SYSTEM = "gcp.spanner";

  private final String client;

  private final String database;

  private final KeyValues base;

  /** Where the frontend's times are recorded; {@code null} for none. */
  private final MeterRegistry meters;

  private final ConcurrentHashMap<String, ByError> byError = new ConcurrentHashMap<>();

  CallKeys(String method, String database, String client, MeterRegistry meters) {
    this.client = client;
    this.database = database;
    this.meters = meters;
    this.base =
        KeyValues.of(
            KeyValue.of(LowCardinalityKeys.DB_SYSTEM_NAME, SYSTEM),
            KeyValue.of(LowCardinalityKeys.DB_OPERATION_NAME, method),
            KeyValue.of(LowCardinalityKeys.DB_NAMESPACE, database),
            KeyValue.of(LowCardinalityKeys.SPANNER_CLIENT, client));
  }

  String client() {
    return this.client;
  }

  String database() {
    return this.database;
  }

  KeyValues keyValues(String errorType) {
    return byError(errorType).keyValues;
  }

  /** Only the {@code error.type} key of an error type. */
  KeyValues errorKeyValues(String errorType) {
    return byError(errorType).errorKeyValues;
  }

  void attemptEnded(String errorType, long gfeNanos, long afeNanos) {
    if (this.meters == null) {
      return;
    }
    ByError meters = byError(errorType);
    if (gfeNanos != ServerTiming.MISSING) {
      meters.server().record(gfeNanos, TimeUnit.NANOSECONDS);
    } else {
      meters.missing().increment();
    }
    if (afeNanos != ServerTiming.MISSING) {
      meters.afe().record(afeNanos, TimeUnit.NANOSECONDS);
    }
  }

  private ByError byError(String errorType) {
    ByError byError = this.byError.get(errorType);
    return (byError != null)
        ? byError
        : this.byError.computeIfAbsent(errorType, (type) -> new ByError(this.base, type));
  }

  /** The key values and meters of one error type, each made on first use. */
  private final class ByError {

    final KeyValues keyValues;

    final KeyValues errorKeyValues;

    private final Tags tags;

    private volatile Timer server;

    private volatile Counter missing;

    private volatile Timer afe;

    ByError(KeyValues base, String errorType) {
      this.errorKeyValues = KeyValues.of(KeyValue.of(LowCardinalityKeys.ERROR_TYPE, errorType));
      this.keyValues = base.and(this.errorKeyValues);
      Tags tags = Tags.empty();
      for (KeyValue keyValue : this.keyValues) {
        tags = tags.and(keyValue.getKey(), keyValue.getValue());
      }
      this.tags = tags;
    }

    Timer server() {
      Timer server = this.server;
      if (server == null) {
        server =
            Timer.builder(SpannerObservationDocumentation.SERVER_DURATION)
                .description("The Google front end's own time of each Spanner response")
                .tags(this.tags)
                .register(CallKeys.this.meters);
        this.server = server;
      }
      return server;
    }

    Counter missing() {
      Counter missing = this.missing;
      if (missing == null) {
        missing =
            Counter.builder(SpannerObservationDocumentation.SERVER_DURATION_MISSING)
                .description("Spanner responses without the front end's server-timing")
                .baseUnit("responses")
                .tags(this.tags)
                .register(CallKeys.this.meters);
        this.missing = missing;
      }
      return missing;
    }

    Timer afe() {
      Timer afe = this.afe;
      if (afe == null) {
        afe =
            Timer.builder(SpannerObservationDocumentation.AFE_DURATION)
                .description("The application front end's time of each Spanner response")
                .tags(this.tags)
                .register(CallKeys.this.meters);
        this.afe = afe;
      }
      return afe;
    }
  }
}
