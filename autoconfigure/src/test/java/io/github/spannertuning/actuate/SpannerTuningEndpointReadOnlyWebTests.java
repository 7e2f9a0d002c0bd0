package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.testing.GuardLine;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;

/** With Boot's default access for this endpoint, read-only, the write operation is refused. */
class SpannerTuningEndpointReadOnlyWebTests extends EndpointOverHttp {

  @Test
  void writeIsRefusedAndNothingChanges() {
    assertThat(
            this.http
                .postForEntity(
                    "/actuator/spannertuning/spanner",
                    Map.of("feature", "stream-end-guard", "enabled", false),
                    String.class)
                .getStatusCode()
                .is4xxClientError())
        .isTrue();
    String path = "/actuator/spannertuning/spanner/experiment";
    assertThat(
            this.http
                .postForEntity(path, Map.of("duration", "2m", "slice", "30s"), String.class)
                .getStatusCode()
                .is4xxClientError())
        .as("start an experiment")
        .isTrue();
    assertThat(
            this.http
                .exchange(path, HttpMethod.DELETE, null, String.class)
                .getStatusCode()
                .is4xxClientError())
        .as("stop an experiment")
        .isTrue();
    // Readable, and none was started.
    assertThat(this.http.getForEntity(path, String.class).getStatusCode())
        .isEqualTo(HttpStatus.NOT_FOUND);
    String body = this.http.getForObject("/actuator/spannertuning/spanner", String.class);
    assertThat(body)
        .contains("\"stream-end-guard\":{\"state\":\"" + GuardLine.expectedName() + "\"");
    assertThat(body).contains("\"experiment\":null");
    assertNothingSecret(body);
  }
}
