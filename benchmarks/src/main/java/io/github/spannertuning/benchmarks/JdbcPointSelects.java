package io.github.spannertuning.benchmarks;

import com.google.cloud.spanner.connection.SpannerPool;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.jdbc.SpannerJdbcTuning;
import io.github.spannertuning.jdbc.TunedJdbcClient;
import io.github.spannertuning.testing.MockSpannerServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Properties;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Point selects through Google's JDBC driver (google-cloud-spanner-jdbc), stock or tuned with
 * {@link SpannerJdbcTuning}: each thread holds its own {@link Connection} in autocommit, as a
 * connection pool hands one to each worker, and runs the point select as JPA and JdbcTemplate read
 * one: a prepared statement, {@code executeQuery}, one {@code next()}, the result set and statement
 * closed.
 *
 * <p>The driver keeps one Spanner client per pool key (its URL's client options) in the JVM ({@code
 * SpannerPool}). The two variants differ in the key only by the user agent: stock leaves it unset,
 * tuned sets {@code userAgent=sp-jdbc}, the token the driver sends when it is unset, so both send
 * the same header and cannot share a client. Every window builds a fresh client: {@link #close()}
 * closes its connections, then the driver's pool, which closes the client at once instead of 60 s
 * later.
 */
final class JdbcPointSelects implements AutoCloseable {

  private final String url;

  private final TunedJdbcClient tuned;

  private final Queue<Connection> opened = new ConcurrentLinkedQueue<>();

  private final ThreadLocal<Connection> connection = new ThreadLocal<>();

  private JdbcPointSelects(String url, TunedJdbcClient tuned) {
    this.url = url;
    this.tuned = tuned;
  }

  /** The JDBC URL of the frontend for the variant, on the given number of channels. */
  static String url(Variant variant, int port, int channels) {
    String url =
        "jdbc:cloudspanner://127.0.0.1:"
            + port
            + "/projects/bench-project/instances/bench-instance/databases/bench-db"
            + ";usePlainText=true;numChannels="
            + channels;
    return switch (variant) {
      case STOCK -> url;
      case TUNED -> url + ";userAgent=sp-jdbc";
      default ->
          throw new IllegalArgumentException(
              "The JDBC workload compares stock and tuned only, not " + variant.label());
    };
  }

  /** The driver's client for the variant: tuned before its first connection, or as it comes. */
  static JdbcPointSelects open(Variant variant, int port, int channels) {
    String url = url(variant, port, channels);
    TunedJdbcClient tuned = null;
    if (variant == Variant.TUNED) {
      tuned = SpannerJdbcTuning.tune(url, new Properties(), SpannerTuning.defaults());
      if (!tuned.isTuned()) {
        tuned.close();
        throw new IllegalStateException(
            "spanner-tuning could not tune the JDBC client: " + tuned.unsupportedReason().get());
      }
    }
    return new JdbcPointSelects(url, tuned);
  }

  /** The tuned client's state; {@code null} for the stock driver. */
  SpannerTuningState state() {
    return (this.tuned == null) ? null : this.tuned.state();
  }

  /** Opens this thread's connection, if it has none yet. */
  Connection connection() {
    Connection connection = this.connection.get();
    if (connection == null) {
      try {
        connection = DriverManager.getConnection(this.url);
      } catch (SQLException ex) {
        throw new IllegalStateException("The JDBC driver opened no connection: " + ex, ex);
      }
      this.opened.add(connection);
      this.connection.set(connection);
    }
    return connection;
  }

  /** The point select on this thread's connection. */
  void pointSelect() {
    try (PreparedStatement statement =
            connection().prepareStatement(MockSpannerServer.POINT_SELECT);
        ResultSet rows = statement.executeQuery()) {
      if (!rows.next()) {
        throw new IllegalStateException("the point select returned no row");
      }
    } catch (SQLException ex) {
      throw new IllegalStateException(ex.toString(), ex);
    }
  }

  @Override
  public void close() {
    Connection connection;
    while ((connection = this.opened.poll()) != null) {
      try {
        connection.close();
      } catch (SQLException ex) {
        // Closing a connection of a window that is over; the next window opens its own.
      }
    }
    if (this.tuned != null) {
      this.tuned.close();
    }
    SpannerPool.closeSpannerPool();
  }
}
