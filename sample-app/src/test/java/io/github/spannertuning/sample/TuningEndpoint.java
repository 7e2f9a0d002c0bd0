package io.github.spannertuning.sample;

import java.util.List;
import java.util.Map;
import org.springframework.boot.test.web.client.TestRestTemplate;

/** Reads {@code /actuator/spannertuning} the way the page does, over HTTP. */
final class TuningEndpoint {

  private final TestRestTemplate rest;

  TuningEndpoint(TestRestTemplate rest) {
    this.rest = rest;
  }

  @SuppressWarnings("unchecked")
  Map<String, Object> client() {
    Map<String, Object> body = this.rest.getForObject("/actuator/spannertuning", Map.class);
    return (Map<String, Object>) ((Map<String, Object>) body.get("clients")).get("spanner");
  }

  @SuppressWarnings("unchecked")
  long channelCalls() {
    return ((List<Map<String, Object>>) client().get("channels"))
        .stream().mapToLong((channel) -> ((Number) channel.get("calls")).longValue()).sum();
  }

  @SuppressWarnings("unchecked")
  long channelsWithCalls() {
    return ((List<Map<String, Object>>) client().get("channels"))
        .stream().filter((channel) -> ((Number) channel.get("calls")).longValue() > 0).count();
  }

  @SuppressWarnings("unchecked")
  long activeStreams() {
    return ((List<Map<String, Object>>) client().get("channels"))
        .stream().mapToLong((channel) -> ((Number) channel.get("activeStreams")).longValue()).sum();
  }
}
