package io.github.spannertuning.observation;

import io.github.spannertuning.client.CallObserver.OperationSummary;
import io.github.spannertuning.routing.LatencyHistogram;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The calls of one RPC method on one client: the keys of each database's calls, and what the
 * endpoint shows of its operations (count, recent percentiles, the frontend's share of their time).
 */
final class MethodCalls {

  private final String name;

  private final ConcurrentHashMap<String, CallKeys> byDatabase = new ConcurrentHashMap<>();

  private final LatencyHistogram recent = new LatencyHistogram(System.nanoTime());

  private final LongAdder operations = new LongAdder();

  private final LongAdder operationNanos = new LongAdder();

  private final LongAdder frontendNanos = new LongAdder();

  private final LongAdder frontendTimed = new LongAdder();

  MethodCalls(String name) {
    this.name = name;
  }

  String name() {
    return this.name;
  }

  /** The keys of this method's calls on a database by a client, or {@code null} for none yet. */
  CallKeys keys(String database, String client) {
    CallKeys keys = this.byDatabase.get(database);
    return (keys != null && keys.client().equals(client)) ? keys : null;
  }

  /** Makes the keys of this method's calls on a database by a client, replacing a client's old. */
  CallKeys newKeys(String database, String client, MeterRegistry meters) {
    CallKeys keys = new CallKeys(this.name, database, client, meters);
    this.byDatabase.put(database, keys);
    return keys;
  }

  void operationEnded(long nanos) {
    this.operations.increment();
    this.operationNanos.add(nanos);
    this.recent.record(nanos, System.nanoTime());
  }

  void frontendTime(long nanos) {
    this.frontendNanos.add(nanos);
    this.frontendTimed.increment();
  }

  OperationSummary summary() {
    long count = this.operations.sum();
    long total = this.operationNanos.sum();
    Double share =
        (this.frontendTimed.sum() > 0 && total > 0)
            ? Math.min(1.0, (double) this.frontendNanos.sum() / total)
            : null;
    return new OperationSummary(
        this.name,
        count,
        (count > 0) ? this.recent.quantileNanos(0.5) / 1e9 : 0,
        (count > 0) ? this.recent.quantileNanos(0.99) / 1e9 : 0,
        share);
  }
}
