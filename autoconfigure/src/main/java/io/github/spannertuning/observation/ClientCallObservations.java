package io.github.spannertuning.observation;

import io.github.spannertuning.client.CallObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/** The observations of one client's calls. */
final class ClientCallObservations implements CallObserver {

  /** Sessions whose database is known; a client has one multiplexed session per database. */
  private static final int MAX_SESSIONS = 10_000;

  private final ObservationRegistry registry;

  private final MeterRegistry meters;

  private final Supplier<String> clientName;

  private final DefaultSpannerCallObservationConvention operationConvention =
      new DefaultSpannerCallObservationConvention(
          SpannerObservationDocumentation.OPERATION.getName());

  private final DefaultSpannerCallObservationConvention attemptConvention =
      new DefaultSpannerCallObservationConvention(
          SpannerObservationDocumentation.ATTEMPT.getName());

  private final ConcurrentHashMap<String, MethodCalls> methods = new ConcurrentHashMap<>();

  private final ConcurrentHashMap<String, String> databases = new ConcurrentHashMap<>();

  ClientCallObservations(
      ObservationRegistry registry, MeterRegistry meters, Supplier<String> clientName) {
    this.registry = registry;
    this.meters = meters;
    this.clientName = clientName;
  }

  @Override
  public Call operation(String method, String session) {
    if (this.registry.isNoop()) {
      // Nothing would observe it (no handler, or Micrometer's NOOP): no context is made.
      return NoCall.INSTANCE;
    }
    SpannerCallContext context = new SpannerCallContext(this, methodCalls(method), true);
    context.start(session);
    return context;
  }

  @Override
  public Attempt attempt(String method) {
    if (this.registry.isNoop()) {
      return NoCall.INSTANCE;
    }
    return new SpannerCallContext(this, methodCalls(method), false);
  }

  @Override
  public List<OperationSummary> operations() {
    List<OperationSummary> summaries = new ArrayList<>();
    for (MethodCalls calls : this.methods.values()) {
      OperationSummary summary = calls.summary();
      if (summary.count() > 0) {
        summaries.add(summary);
      }
    }
    summaries.sort(Comparator.comparing(OperationSummary::method));
    return summaries;
  }

  private MethodCalls methodCalls(String method) {
    MethodCalls calls = this.methods.get(method);
    return (calls != null) ? calls : this.methods.computeIfAbsent(method, MethodCalls::new);
  }

  CallKeys keys(MethodCalls method, String session) {
    String database = databaseOf(session);
    String client = this.clientName.get();
    CallKeys keys = method.keys(database, client);
    return (keys != null) ? keys : method.newKeys(database, client, this.meters);
  }

  Observation start(SpannerCallContext context) {
    SpannerObservationDocumentation documentation =
        context.isOperation()
            ? SpannerObservationDocumentation.OPERATION
            : SpannerObservationDocumentation.ATTEMPT;
    return documentation
        .observation(
            null,
            context.isOperation() ? this.operationConvention : this.attemptConvention,
            context,
            this.registry)
        .start();
  }

  /** The database ID in a session's or database's resource name; {@code unknown} for none. */
  private String databaseOf(String session) {
    if (session == null || session.isEmpty()) {
      return "unknown";
    }
    String database = this.databases.get(session);
    if (database == null) {
      database = parseDatabase(session);
      if (this.databases.size() >= MAX_SESSIONS) {
        this.databases.clear();
      }
      this.databases.put(session, database);
    }
    return database;
  }

  static String parseDatabase(String name) {
    int at = name.indexOf("/databases/");
    if (at < 0) {
      return "unknown";
    }
    int start = at + "/databases/".length();
    int end = name.indexOf('/', start);
    String database = name.substring(start, (end < 0) ? name.length() : end);
    return database.isEmpty() ? "unknown" : database;
  }
}
