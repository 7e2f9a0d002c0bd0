package io.github.spannertuning.sample;

import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.client.SpannerTuningState.WarmUp;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * What the page's warm-up card shows of each client besides its channels (whose connection time and
 * priming the page reads from {@code /actuator/spannertuning}): the starter's own figures, the same
 * as its {@code spanner.tuning.warm.up.*} meters. Counts, a duration and booleans only: nothing of
 * a statement or a row.
 */
@RestController
class WarmUpController {

  private final ObjectProvider<SpannerTuningRegistry> registry;

  WarmUpController(ObjectProvider<SpannerTuningRegistry> registry) {
    this.registry = registry;
  }

  @GetMapping("/sample/warm-up")
  Map<String, Map<String, ClientWarmUp>> warmUp() throws InterruptedException {
    Map<String, ClientWarmUp> clients = new LinkedHashMap<>();
    SpannerTuningRegistry registry = this.registry.getIfAvailable();
    if (registry != null) {
      for (Map.Entry<String, SpannerTuningState> client : registry.clients().entrySet()) {
        clients.put(client.getKey(), ClientWarmUp.of(client.getValue()));
      }
    }
    return Map.of("clients", clients);
  }

  /**
   * One client's warm-up, as it is now.
   *
   * @param watched whether the client's channel warmth is watched (warm-up on, and a channel
   *     picker)
   * @param warm whether every channel is connected and primed now
   * @param channels the channels watched
   * @param warmChannels those connected and primed now
   * @param sessionKnown whether the client has a session to prime with
   * @param warmUpSeconds from the client's build until every channel was first warm; {@code null}
   *     until then
   * @param primed priming calls ({@code SELECT 1}) that answered, one per new connection
   * @param coldReads reads routing sent to a channel that was not warm, because no warm one had
   *     room
   * @param refreshed connections refreshed before the server retired them
   * @param refreshAfter when a connection is refreshed ({@code
   *     spanner.tuning.warm-up.refresh-after})
   */
  record ClientWarmUp(
      boolean watched,
      boolean warm,
      int channels,
      int warmChannels,
      boolean sessionKnown,
      Double warmUpSeconds,
      long primed,
      long coldReads,
      long refreshed,
      String refreshAfter) {

    static ClientWarmUp of(SpannerTuningState state) throws InterruptedException {
      // A zero timeout: what is warm now, without waiting.
      WarmUp warmUp = state.warmUp(Duration.ZERO);
      return new ClientWarmUp(
          warmUp.watched(),
          warmUp.warm(),
          warmUp.channels(),
          warmUp.warmChannels(),
          warmUp.sessionKnown(),
          (warmUp.took() != null) ? warmUp.took().toMillis() / 1000.0 : null,
          (long) state.primedCount(),
          (long) state.coldReadCount(),
          state.refreshedCount(),
          state.tuning().getRefreshAfter());
    }
  }
}
