package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.client.SpannerTuningState;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/** The tuned Spanner clients of the application, by bean name. */
public class SpannerTuningRegistry {

  private final Map<String, SpannerTuningState> clients =
      Collections.synchronizedMap(new LinkedHashMap<>());

  void register(String name, SpannerTuningState state) {
    this.clients.put(name, state);
  }

  /** Every tuned client, in the order the beans were created. */
  public Map<String, SpannerTuningState> clients() {
    synchronized (this.clients) {
      return Map.copyOf(this.clients);
    }
  }

  public Optional<SpannerTuningState> client(String name) {
    return Optional.ofNullable(this.clients.get(name));
  }
}
