package io.github.spannertuning.jdbc;

import com.google.cloud.spanner.connection.Connection;
import io.github.spannertuning.client.SpannerTuningState;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Spanner client that the JDBC driver uses for one URL, as spanner-tuning reached it. Holds one
 * Connection API connection open, so that the driver keeps the tuned client while the application
 * runs; {@link #close()} releases it. The driver refuses {@code ConnectionOptions.closeSpanner()}
 * and {@code SpannerPool.closeSpannerPool()} while that connection is open: close this first. Once
 * its last connection is closed, the driver keeps the client for at least a minute for the
 * connections that follow, then closes it, or closes it at once when the application calls either.
 */
public final class TunedJdbcClient implements AutoCloseable {

  private final SpannerTuningState state;

  private final String database;

  private final String driverVersion;

  private final String unsupportedReason;

  private final AtomicReference<Connection> held;

  TunedJdbcClient(
      SpannerTuningState state,
      String database,
      String driverVersion,
      String unsupportedReason,
      Connection held) {
    this.state = state;
    this.database = database;
    this.driverVersion = driverVersion;
    this.unsupportedReason = unsupportedReason;
    this.held = new AtomicReference<>(held);
  }

  /** The client's tuning state; every feature is {@code unsupported} when it could not be tuned. */
  public SpannerTuningState state() {
    return this.state;
  }

  /** Whether the driver's client runs with spanner-tuning. */
  public boolean isTuned() {
    return this.unsupportedReason == null;
  }

  /** Why the driver's client could not be tuned. */
  public Optional<String> unsupportedReason() {
    return Optional.ofNullable(this.unsupportedReason);
  }

  /** The URL's database, {@code projects/P/instances/I/databases/D}. */
  public String database() {
    return this.database;
  }

  /** The version of google-cloud-spanner-jdbc on the classpath. */
  public String driverVersion() {
    return this.driverVersion;
  }

  /** Releases the connection held open, once; the state stays readable. */
  @Override
  public void close() {
    Connection held = this.held.getAndSet(null);
    if (held != null) {
      SpannerJdbcTuning.closeQuietly(held);
    }
  }

  @Override
  public String toString() {
    return "TunedJdbcClient[" + this.database + ", " + this.state + "]";
  }
}
