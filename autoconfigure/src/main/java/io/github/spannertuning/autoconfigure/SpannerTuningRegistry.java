package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.jdbc.TunedJdbcClient;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/**
 * The tuned Spanner clients of the application, by {@code Spanner} bean name, and the JDBC driver's
 * clients by {@code DataSource} bean name. A client leaves the registry when it is closed.
 */
public class SpannerTuningRegistry {

  private final Map<String, SpannerTuningState> clients = new LinkedHashMap<>();

  private final Map<String, TunedJdbcClient> jdbcClients = new LinkedHashMap<>();

  private final List<BiConsumer<String, SpannerTuningState>> listeners =
      new CopyOnWriteArrayList<>();

  void register(String name, SpannerTuningState state) {
    synchronized (this.clients) {
      this.clients.put(name, state);
    }
    state.onClose(() -> unregister(name, state));
    this.listeners.forEach((listener) -> listener.accept(name, state));
  }

  /** Records the JDBC driver's client for a DataSource, under the DataSource bean's name. */
  void register(String dataSource, TunedJdbcClient client) {
    synchronized (this.clients) {
      this.jdbcClients.put(dataSource, client);
    }
    register(dataSource, client.state());
  }

  private void unregister(String name, SpannerTuningState state) {
    synchronized (this.clients) {
      if (this.clients.remove(name, state)) {
        this.jdbcClients.remove(name);
      }
    }
  }

  /** The JDBC driver's client recorded under this DataSource bean name. */
  public Optional<TunedJdbcClient> jdbcClient(String name) {
    synchronized (this.clients) {
      return Optional.ofNullable(this.jdbcClients.get(name));
    }
  }

  /** Every open tuned client, in the order the beans were created. */
  public Map<String, SpannerTuningState> clients() {
    synchronized (this.clients) {
      return new LinkedHashMap<>(this.clients);
    }
  }

  public Optional<SpannerTuningState> client(String name) {
    synchronized (this.clients) {
      return Optional.ofNullable(this.clients.get(name));
    }
  }

  /** Calls the listener for every client registered now and from now on. */
  public void onRegister(BiConsumer<String, SpannerTuningState> listener) {
    clients().forEach(listener);
    this.listeners.add(listener);
  }
}
