package io.github.spannertuning.autoconfigure;

import com.google.cloud.spanner.Spanner;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.jdbc.TunedJdbcClient;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The tuned Spanner clients of the application, by {@code Spanner} bean name, and the JDBC driver's
 * clients by {@code DataSource} bean name. A {@code Spanner} bean that spanner-tuning did not reach
 * is listed too, with every feature {@code unsupported} and the reason; the listeners are not told
 * of it, since nothing on it is counted. A client leaves the registry when it is closed.
 *
 * <p>Logs the end of each tuned client's experiments, under its name: {@code done} at INFO with the
 * verdicts, {@code aborted} at WARN with the reason. A stop is logged by whoever stopped it.
 */
public class SpannerTuningRegistry {

  private static final Log logger = LogFactory.getLog(SpannerTuningRegistry.class);

  private final Map<String, SpannerTuningState> clients = new LinkedHashMap<>();

  private final Map<String, TunedJdbcClient> jdbcClients = new LinkedHashMap<>();

  /** The untuned clients among {@link #clients}, to tell when they are closed. */
  private final Map<String, Spanner> untuned = new LinkedHashMap<>();

  private final List<BiConsumer<String, SpannerTuningState>> listeners =
      new CopyOnWriteArrayList<>();

  void register(String name, SpannerTuningState state) {
    state.name(name);
    synchronized (this.clients) {
      this.clients.put(name, state);
      this.untuned.remove(name);
    }
    state.onClose(() -> unregister(name, state));
    state.onExperimentEnd((result) -> logEnd(name, result));
    this.listeners.forEach((listener) -> listener.accept(name, state));
  }

  private static void logEnd(String name, ExperimentResult result) {
    if ("done".equals(result.state())) {
      StringBuilder verdicts = new StringBuilder();
      result
          .results()
          .forEach(
              (kind, figures) ->
                  verdicts
                      .append((verdicts.length() > 0) ? "; " : "")
                      .append(verdict(kind, figures)));
      logger.info(
          "spanner-tuning: experiment done on Spanner client '"
              + name
              + "' after "
              + result.pairs()
              + ((result.pairs() == 1) ? " pair of " : " pairs of ")
              + result.slice()
              + " slices"
              + result.scope()
              + ": "
              + verdicts
              + "; its result is in the spannertuning endpoint");
    } else if ("aborted".equals(result.state())) {
      logger.warn(
          "spanner-tuning: experiment aborted on Spanner client '"
              + name
              + "'"
              + result.scope()
              + ": "
              + result.reason());
    }
  }

  private static String verdict(String kind, KindResult figures) {
    if (figures.pairs() == 0) {
      return kind + " not compared (no pair had calls of it in both arms)";
    }
    String line =
        kind + " " + figures.verdict() + ", P99 tuned/stock x" + round(figures.p99Ratio());
    return (figures.p99RatioLow() != null)
        ? line
            + " (95 % interval "
            + round(figures.p99RatioLow())
            + " to "
            + round(figures.p99RatioHigh())
            + ")"
        : line;
  }

  private static String round(Double ratio) {
    return (ratio != null) ? String.format(Locale.ROOT, "%.2f", ratio) : "n/a";
  }

  /** Records the JDBC driver's client for a DataSource, under the DataSource bean's name. */
  void register(String dataSource, TunedJdbcClient client) {
    synchronized (this.clients) {
      this.jdbcClients.put(dataSource, client);
    }
    register(dataSource, client.state());
  }

  /**
   * Records a {@code Spanner} bean spanner-tuning did not reach, with its state of every feature
   * {@code unsupported}, until the client is closed.
   */
  void registerUntuned(String name, Spanner spanner, SpannerTuningState state) {
    state.name(name);
    synchronized (this.clients) {
      this.clients.put(name, state);
      this.untuned.put(name, spanner);
    }
  }

  /** An untuned client has no state that reports its close: it is looked at when asked for. */
  private void removeClosedUntuned() {
    for (Iterator<Map.Entry<String, Spanner>> it = this.untuned.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<String, Spanner> client = it.next();
      if (client.getValue().isClosed()) {
        this.clients.remove(client.getKey());
        it.remove();
      }
    }
  }

  private void unregister(String name, SpannerTuningState state) {
    synchronized (this.clients) {
      if (this.clients.remove(name, state)) {
        this.jdbcClients.remove(name);
      }
    }
  }

  /** The JDBC driver's clients recorded now, by DataSource bean name. */
  public Map<String, TunedJdbcClient> jdbcClients() {
    synchronized (this.clients) {
      return new LinkedHashMap<>(this.jdbcClients);
    }
  }

  /** The JDBC driver's client recorded under this DataSource bean name. */
  public Optional<TunedJdbcClient> jdbcClient(String name) {
    synchronized (this.clients) {
      return Optional.ofNullable(this.jdbcClients.get(name));
    }
  }

  /**
   * Every open client, in the order the beans were created: the tuned ones, and the {@code Spanner}
   * beans spanner-tuning did not reach, with every feature {@code unsupported}.
   */
  public Map<String, SpannerTuningState> clients() {
    synchronized (this.clients) {
      removeClosedUntuned();
      return new LinkedHashMap<>(this.clients);
    }
  }

  public Optional<SpannerTuningState> client(String name) {
    synchronized (this.clients) {
      removeClosedUntuned();
      return Optional.ofNullable(this.clients.get(name));
    }
  }

  /** Calls the listener for every tuned client registered now and from now on. */
  public void onRegister(BiConsumer<String, SpannerTuningState> listener) {
    Map<String, SpannerTuningState> tuned;
    synchronized (this.clients) {
      tuned = new LinkedHashMap<>(this.clients);
      tuned.keySet().removeAll(this.untuned.keySet());
    }
    tuned.forEach(listener);
    this.listeners.add(listener);
  }
}
