package io.github.spannertuning.jdbc;

import com.google.cloud.spanner.connection.Connection;
import com.google.cloud.spanner.connection.ConnectionOptions;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Tunes the Spanner client that Google's JDBC driver (google-cloud-spanner-jdbc) builds for a JDBC
 * URL. Call it once, before the application's first connection to that URL:
 *
 * <pre>{@code
 * TunedJdbcClient tuned = SpannerJdbcTuning.tune(url);
 * Connection connection = DriverManager.getConnection(url);
 * }</pre>
 *
 * <p>The driver keeps one {@code Spanner} per set of connection options that matter to the client
 * (its pool key) and builds it for the first connection. This class opens that first connection
 * itself, with the driver's own options for the URL and a configurator that applies the {@link
 * SpannerTuning} to the client's {@code SpannerOptions.Builder}, and holds it open so that the
 * driver keeps the client; {@link TunedJdbcClient#close()} lets it go. Every later connection to
 * the URL, with the same properties, shares the tuned client.
 *
 * <p>Fails open: where the driver's internals differ from what this class relies on, or the driver
 * built the client before, it logs one warning and returns a client whose features are {@code
 * unsupported}, with the reason. It never throws for the URL's sake, and leaves the driver's own
 * behaviour as it was.
 */
public final class SpannerJdbcTuning {

  private static final Logger logger = Logger.getLogger(SpannerJdbcTuning.class.getName());

  private static final Pattern DATABASE =
      Pattern.compile("projects/[^/;?]+/instances/[^/;?]+/databases/[^/;?]+");

  private static final Set<String> warned = ConcurrentHashMap.newKeySet();

  private SpannerJdbcTuning() {}

  /** Whether the driver handles this URL: {@code jdbc:cloudspanner:...}. */
  public static boolean isSpannerUrl(String url) {
    return url != null && url.startsWith("jdbc:cloudspanner:");
  }

  /** Tunes the client for this URL with the default tuning and no extra properties. */
  public static TunedJdbcClient tune(String url) {
    return tune(url, new Properties(), SpannerTuning.defaults());
  }

  /**
   * Tunes the client for this URL and these connection properties, as {@code
   * DriverManager.getConnection(url, info)} would be given them.
   */
  public static TunedJdbcClient tune(String url, Properties info, SpannerTuning tuning) {
    return tune(url, info, tuning, SpannerJdbcTuning.class.getClassLoader());
  }

  /**
   * As {@link #tune(String, Properties, SpannerTuning)}, looking up the driver's members in the
   * given class loader.
   */
  public static TunedJdbcClient tune(
      String url, Properties info, SpannerTuning tuning, ClassLoader loader) {
    Objects.requireNonNull(tuning, "tuning");
    if (!isSpannerUrl(url)) {
      throw new IllegalArgumentException("not a Spanner JDBC URL (jdbc:cloudspanner:...)");
    }
    String database = database(url);
    JdbcDriverHooks hooks;
    try {
      hooks = JdbcDriverHooks.resolve(loader);
    } catch (RuntimeException | LinkageError ex) {
      return unsupported(
          tuning, database, "unknown", "the JDBC driver could not be inspected: " + ex);
    }
    if (hooks.missing() != null) {
      return unsupported(tuning, database, hooks.driverVersion(), hooks.missing());
    }
    Connection connection = null;
    try {
      Properties properties = new Properties();
      if (info != null) {
        properties.putAll(info);
      }
      String uri = hooks.connectionUri(url, properties);
      AtomicReference<SpannerTuningState> built = new AtomicReference<>();
      ConnectionOptions options =
          hooks.configuredOptions(uri, properties, (builder) -> built.set(tuning.applyTo(builder)));
      if (!hooks.poolKey(options).equals(hooks.poolKey(hooks.driverOptions(uri, properties)))) {
        return unsupported(
            tuning,
            database,
            hooks.driverVersion(),
            "the JDBC driver builds other connection options for this URL than spanner-tuning"
                + " does, so its connections would not share the tuned client");
      }
      connection = options.getConnection();
      Optional<SpannerTuningState> state =
          SpannerTuning.stateOf(connection.getSpanner().getOptions());
      if (state.isEmpty()) {
        connection.close();
        return unsupported(
            tuning,
            database,
            hooks.driverVersion(),
            "the JDBC driver had built the client for this URL before spanner-tuning could tune"
                + " it; tune it before the first connection");
      }
      logger.fine(() -> "spanner-tuning: tuned the JDBC client for " + database);
      return new TunedJdbcClient(state.get(), database, hooks.driverVersion(), null, connection);
    } catch (RuntimeException | LinkageError ex) {
      if (connection != null) {
        closeQuietly(connection);
      }
      return unsupported(
          tuning,
          database,
          hooks.driverVersion(),
          "tuning the JDBC client failed: "
              + ex.getClass().getSimpleName()
              + ": "
              + ex.getMessage());
    }
  }

  private static TunedJdbcClient unsupported(
      SpannerTuning tuning, String database, String driverVersion, String reason) {
    if (warned.add(reason)) {
      logger.log(
          Level.WARNING,
          "spanner-tuning: off for the JDBC driver's Spanner client ("
              + reason
              + "). The driver works as it does without spanner-tuning.");
    }
    return new TunedJdbcClient(tuning.unsupported(reason), database, driverVersion, reason, null);
  }

  /** The URL's database path, without its host, options or credentials. */
  static String database(String url) {
    Matcher matcher = DATABASE.matcher(url);
    return matcher.find() ? matcher.group() : "unknown";
  }

  static void closeQuietly(Connection connection) {
    try {
      connection.close();
    } catch (RuntimeException ex) {
      logger.log(Level.FINE, "spanner-tuning: closing its JDBC connection failed", ex);
    }
  }
}
