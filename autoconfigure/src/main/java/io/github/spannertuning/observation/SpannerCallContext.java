package io.github.spannertuning.observation;

import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.ServerTiming;
import io.micrometer.common.KeyValue;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Supplier;

/**
 * One Spanner call being observed: an operation or an attempt, its method, database and client, and
 * how it ended. Holds nothing of the call's content: no SQL, parameter or row.
 */
public final class SpannerCallContext extends Observation.Context
    implements CallObserver.Attempt, Supplier<SpannerCallContext> {

  private static final AtomicIntegerFieldUpdater<SpannerCallContext> STOPPED =
      AtomicIntegerFieldUpdater.newUpdater(SpannerCallContext.class, "stopped");

  private final ClientCallObservations client;

  private final MethodCalls method;

  private final boolean operation;

  /** The keys once the call's database is known; {@code null} before. */
  private CallKeys keys;

  private String errorType = CallObserver.NO_ERROR;

  private Observation observation;

  private long startNanos;

  /** The call's time once it stopped; {@code -1} before. */
  private long elapsedNanos = -1;

  private long gfeNanos = ServerTiming.MISSING;

  private long afeNanos = ServerTiming.MISSING;

  private volatile int stopped;

  /** Whether keys other than the default convention's were added to or removed from this call. */
  private boolean otherKeys;

  /** Set while the default convention's keys are being added, one by one. */
  private boolean addingOwnKeys;

  SpannerCallContext(ClientCallObservations client, MethodCalls method, boolean operation) {
    this.client = client;
    this.method = method;
    this.operation = operation;
  }

  /** The RPC method's bare name. */
  public String method() {
    return this.method.name();
  }

  /** Whether this is an operation rather than an attempt. */
  public boolean isOperation() {
    return this.operation;
  }

  /** The database ID, or {@code null} before the call's request named it. */
  public String database() {
    CallKeys keys = this.keys;
    return (keys != null) ? keys.database() : null;
  }

  /** The name of the gRPC status code the call ended with, or {@code none}. */
  public String errorType() {
    return this.errorType;
  }

  /** The call's time from its start to its stop, in nanoseconds; {@code -1} while it runs. */
  long elapsedNanos() {
    return this.elapsedNanos;
  }

  /**
   * The call's keys, for its convention: all of them at the start; at the stop only {@code
   * error.type}, the one that changes, for the others are in the context since the start.
   */
  KeyValues keyValues() {
    return (this.stopped == 0)
        ? this.keys.keyValues(this.errorType)
        : this.keys.errorKeyValues(this.errorType);
  }

  /**
   * The call's low-cardinality keys, the very object the default convention's keys make, where
   * nothing else added or removed a key (a filter, another convention); {@code null} otherwise, and
   * then {@link #getLowCardinalityKeyValues()} has them all.
   */
  KeyValues ownKeyValues() {
    return (this.otherKeys || this.keys == null) ? null : this.keys.keyValues(this.errorType);
  }

  @Override
  public Observation.Context addLowCardinalityKeyValues(KeyValues keyValues) {
    if (this.keys == null || keyValues != keyValues()) {
      this.otherKeys = true;
      return super.addLowCardinalityKeyValues(keyValues);
    }
    // Micrometer adds them one by one, through addLowCardinalityKeyValue.
    this.addingOwnKeys = true;
    try {
      return super.addLowCardinalityKeyValues(keyValues);
    } finally {
      this.addingOwnKeys = false;
    }
  }

  @Override
  public Observation.Context addLowCardinalityKeyValue(KeyValue keyValue) {
    if (!this.addingOwnKeys) {
      this.otherKeys = true;
    }
    return super.addLowCardinalityKeyValue(keyValue);
  }

  @Override
  public Observation.Context removeLowCardinalityKeyValue(String keyName) {
    this.otherKeys = true;
    return super.removeLowCardinalityKeyValue(keyName);
  }

  @Override
  public Observation.Context removeLowCardinalityKeyValues(String... keyNames) {
    this.otherKeys = true;
    return super.removeLowCardinalityKeyValues(keyNames);
  }

  @Override
  public SpannerCallContext get() {
    return this;
  }

  @Override
  public void on(String session) {
    if (this.observation == null) {
      start(session);
    }
  }

  void start(String session) {
    this.keys = this.client.keys(this.method, session);
    this.startNanos = System.nanoTime();
    this.observation = this.client.start(this);
  }

  @Override
  public void serverTiming(long gfeNanos, long afeNanos) {
    this.gfeNanos = gfeNanos;
    this.afeNanos = afeNanos;
  }

  @Override
  public void stop(String errorType) {
    Observation observation = this.observation;
    if (observation == null || !STOPPED.compareAndSet(this, 0, 1)) {
      return;
    }
    long nanos = System.nanoTime() - this.startNanos;
    this.errorType = errorType;
    this.elapsedNanos = nanos;
    observation.stop();
    if (this.operation) {
      this.method.operationEnded(nanos);
    } else {
      this.keys.attemptEnded(errorType, this.gfeNanos, this.afeNanos);
      if (this.gfeNanos != ServerTiming.MISSING) {
        this.method.frontendTime(this.gfeNanos);
      }
    }
  }
}
