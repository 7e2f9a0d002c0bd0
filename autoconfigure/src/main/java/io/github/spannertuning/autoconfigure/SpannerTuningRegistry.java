package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.client.SpannerTuningState;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/**
 * The tuned Spanner clients of the application, by {@code Spanner} bean name. A client leaves the
 * registry when it is closed.
 */
public class SpannerTuningRegistry {

  private final Map<String, SpannerTuningState> clients = new LinkedHashMap<>();

  private final List<BiConsumer<String, SpannerTuningState>> listeners =
      new CopyOnWriteArrayList<>();

  void register(String name, SpannerTuningState state) {
    synchronized (this.clients) {
      this.clients.put(name, state);
    }
    state.onClose(() -> unregister(name, state));
    this.listeners.forEach((listener) -> listener.accept(name, state));
  }

  private void unregister(String name, SpannerTuningState state) {
    synchronized (this.clients) {
      this.clients.remove(name, state);
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
