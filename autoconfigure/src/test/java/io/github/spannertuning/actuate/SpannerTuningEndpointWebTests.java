package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;

/** The endpoint over HTTP, with write access granted. */
@SpringBootTest(
    classes = EndpointTestApplication.class,
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {
      "spring.cloud.gcp.project-id=test-project",
      "spring.cloud.gcp.spanner.instance-id=test-instance",
      "spring.cloud.gcp.spanner.database=test-database",
      "spring.cloud.gcp.secretmanager.enabled=false",
      "management.endpoints.web.exposure.include=spannertuning",
      "management.endpoint.spannertuning.access=unrestricted",
      "logging.level.io.github.spannertuning.actuate=debug"
    })
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningEndpointWebTests {

  private final ObjectMapper json = new ObjectMapper();

  @Autowired private TestRestTemplate http;

  @Autowired
  @Qualifier("databaseClientProvider")
  private Supplier<DatabaseClient> databaseClient;

  @Test
  void readsEveryClient() throws Exception {
    pointSelects(50);
    ResponseEntity<String> response =
        this.http.getForEntity("/actuator/spannertuning", String.class);
    assertThat(response.getStatusCode()).isEqualTo(HttpStatus.OK);
    JsonNode clients = this.json.readTree(response.getBody()).get("clients");
    assertThat(clients.size()).as("clients in %s", response.getBody()).isEqualTo(1);
    JsonNode client = clients.get("spanner");
    assertThat(client.at("/features/stream-end-guard/state").asText())
        .isEqualTo(GuardLine.expectedName());
    assertThat(client.at("/features/single-use-distribution/state").asText()).isIn("on", "native");
    assertThat(client.at("/versions/googleCloudSpanner").asText()).matches("6\\.\\d+\\.\\d+");
    assertThat(client.at("/versions/grpcGcp").asText()).matches("1\\.\\d+\\.\\d+");
    assertThat(client.at("/versions/gax").asText()).isNotBlank();
    assertThat(client.at("/versions/grpcJava").asText()).isNotBlank();
    assertThat(client.at("/pool/kind").asText()).isEqualTo("grpc-gcp");
    assertThat(client.at("/pool/size").asInt()).isEqualTo(8);
    assertThat(client.get("channels").size()).isPositive();
    long calls = 0;
    for (JsonNode channel : client.get("channels")) {
      calls += channel.get("calls").asLong();
      assertThat(channel.get("drainingStreams").isInt())
          .as("drainingStreams of %s", channel)
          .isTrue();
    }
    assertThat(calls).isGreaterThanOrEqualTo(50);
    // Closed on their last row: the guard skips the client's cancel, except where the client sends
    // none itself.
    assertThat(client.get("streamEndGuardSkipped").asLong() > 0)
        .isEqualTo(!GuardLine.clientSkipsCancelAtLast());
    // The server marks each point select's only message last: closed on it, they drain.
    assertThat(client.get("streamEndGuardDrained").asLong()).isPositive();
    assertThat(client.get("streamEndGuardDrainTimeouts").asLong()).isZero();
    // Trailers 1 ms late: a connection never has so many calls in flight that a close cancels.
    assertThat(client.get("streamEndGuardCancelledAtLimit").isNumber()).isTrue();
    assertThat(client.get("streamEndGuardCancelledAtLimit").asLong()).isZero();
    assertNothingSecret(response.getBody());
  }

  @Test
  void readsOneClientAndAnswers404ForAnUnknownOne() {
    assertThat(
            this.http.getForEntity("/actuator/spannertuning/spanner", String.class).getStatusCode())
        .isEqualTo(HttpStatus.OK);
    assertThat(this.http.getForEntity("/actuator/spannertuning/nope", String.class).getStatusCode())
        .isEqualTo(HttpStatus.NOT_FOUND);
  }

  @Test
  void writeSwitchesTheGuardAndTheCountersShowIt(CapturedOutput output) throws Exception {
    ResponseEntity<String> off =
        this.http.postForEntity(
            "/actuator/spannertuning/spanner",
            Map.of("feature", "stream-end-guard", "enabled", false),
            String.class);
    assertThat(off.getStatusCode()).isEqualTo(HttpStatus.OK);
    JsonNode client = this.json.readTree(off.getBody());
    assertThat(client.at("/features/stream-end-guard/state").asText()).isEqualTo("off");
    long skippedWhileOff = client.get(GuardLine.closedAtLastField()).asLong();
    pointSelects(30);
    assertThat(skipped()).isEqualTo(skippedWhileOff);

    ResponseEntity<String> on =
        this.http.postForEntity(
            "/actuator/spannertuning/spanner",
            Map.of("feature", "stream-end-guard", "enabled", true),
            String.class);
    assertThat(on.getStatusCode()).isEqualTo(HttpStatus.OK);
    pointSelects(30);
    assertThat(skipped()).isGreaterThan(skippedWhileOff);

    assertThat(output)
        .contains(
            "spanner-tuning: stream-end-guard switched off on Spanner client 'spanner' by"
                + " anonymous through the spannertuning endpoint (was "
                + (GuardLine.clientSkipsCancelAtLast() ? "native (" : "on)"))
        .contains(
            "spanner-tuning: stream-end-guard switched on on Spanner client 'spanner' by"
                + " anonymous through the spannertuning endpoint (was off (switched off at"
                + " runtime))");

    assertThat(
            this.http
                .postForEntity(
                    "/actuator/spannertuning/spanner",
                    Map.of("feature", "turbo", "enabled", true),
                    String.class)
                .getStatusCode())
        .isEqualTo(HttpStatus.BAD_REQUEST);
    assertThat(output)
        .contains(
            "spanner-tuning: refused to switch 'turbo' on Spanner client 'spanner': Unknown"
                + " feature 'turbo'; features that can be switched: single-use-distribution,"
                + " transaction-routing, stream-end-guard, hedging");
    assertThat(
            this.http
                .postForEntity(
                    "/actuator/spannertuning/spanner",
                    Map.of("feature", "grpc-gcp", "enabled", false),
                    String.class)
                .getStatusCode())
        .isEqualTo(HttpStatus.BAD_REQUEST);
    assertThat(output)
        .contains(
            "spanner-tuning: refused to switch 'grpc-gcp' on Spanner client 'spanner': grpc-gcp is"
                + " chosen when the channels are built and cannot be switched at runtime");
    assertThat(
            this.http
                .postForEntity(
                    "/actuator/spannertuning/nope",
                    Map.of("feature", "stream-end-guard", "enabled", true),
                    String.class)
                .getStatusCode())
        .isEqualTo(HttpStatus.BAD_REQUEST);
  }

  @Test
  void anExperimentIsStartedReadAndStoppedOverHttp(CapturedOutput output) throws Exception {
    String path = "/actuator/spannertuning/spanner/experiment";
    // No body, as curl -X POST -H 'Content-Type: application/json' sends: both fields are optional.
    HttpHeaders headers = new HttpHeaders();
    headers.setContentType(MediaType.APPLICATION_JSON);
    ResponseEntity<String> started =
        this.http.postForEntity(path, new HttpEntity<>(headers), String.class);
    assertThat(started.getStatusCode()).as(started.getBody()).isEqualTo(HttpStatus.OK);
    JsonNode experiment = this.json.readTree(started.getBody());
    assertThat(experiment.get("state").asText()).isEqualTo("running");
    assertThat(experiment.get("slice").asText()).isEqualTo("60s");
    assertThat(experiment.get("duration").asText()).isEqualTo("20m");
    assertThat(experiment.get("carryOver").asText()).isEqualTo("5s");
    assertThat(experiment.get("feature").isNull()).as("feature in %s", experiment).isTrue();
    assertThat(experiment.get("fleet").isNull()).as("fleet in %s", experiment).isTrue();
    assertThat(experiment.get("sliceIndex").asLong()).isZero();
    assertThat(experiment.get("arm").asText()).isIn("tuned", "stock");
    JsonNode listed =
        this.json
            .readTree(this.http.getForObject("/actuator/spannertuning", String.class))
            .at("/clients/spanner/experiment");
    assertThat(listed.get("state").asText()).isEqualTo("running");
    assertThat(listed.has("reason")).as("reason in %s", listed).isTrue();
    assertThat(listed.get("reason").isNull()).isTrue();
    assertThat(listed.get("pairs").asInt()).isZero();
    assertThat(listed.at("/results/single-use/calls/tuned").isNumber()).isTrue();
    assertThat(listed.at("/results/single-use/verdict").asText())
        .isEqualTo("no-detectable-difference");
    assertThat(this.http.getForEntity(path, String.class).getStatusCode()).isEqualTo(HttpStatus.OK);
    ResponseEntity<String> second =
        this.http.postForEntity(path, Map.of("duration", "10m", "slice", "30s"), String.class);
    assertThat(second.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);

    ResponseEntity<String> stopped =
        this.http.exchange(path, HttpMethod.DELETE, null, String.class);
    assertThat(stopped.getStatusCode()).isEqualTo(HttpStatus.OK);
    JsonNode ended = this.json.readTree(stopped.getBody());
    assertThat(ended.get("state").asText()).isEqualTo("stopped");
    assertThat(ended.get("reason").asText())
        .isEqualTo("stopped by anonymous through the spannertuning endpoint");
    assertThat(
            this.json
                .readTree(this.http.getForObject("/actuator/spannertuning/spanner", String.class))
                .at("/features/stream-end-guard/state")
                .asText())
        .isEqualTo(GuardLine.expectedName());

    ResponseEntity<String> bad =
        this.http.postForEntity(path, Map.of("duration", "soon"), String.class);
    assertThat(bad.getStatusCode()).isEqualTo(HttpStatus.BAD_REQUEST);
    ResponseEntity<String> shorter =
        this.http.postForEntity(path, Map.of("duration", "2m", "slice", "30s"), String.class);
    assertThat(shorter.getStatusCode()).as(shorter.getBody()).isEqualTo(HttpStatus.OK);
    JsonNode planned = this.json.readTree(shorter.getBody());
    assertThat(planned.get("slice").asText()).isEqualTo("30s");
    assertThat(planned.at("/progress/slices").asInt()).isEqualTo(4);
    assertThat(this.http.exchange(path, HttpMethod.DELETE, null, String.class).getStatusCode())
        .isEqualTo(HttpStatus.OK);
    assertThat(output)
        .contains(
            "spanner-tuning: experiment of 10 pairs of 60s slices started on Spanner client"
                + " 'spanner' by anonymous through the spannertuning endpoint")
        .contains(
            "spanner-tuning: refused an experiment request on Spanner client 'spanner': duration"
                + " must be a duration such as 20m, 60s or 500ms");
  }

  @Test
  void aFeatureComparedByAFleetShowsItsFleetArmAndSliceFromTheEpoch() throws Exception {
    String path = "/actuator/spannertuning/spanner/experiment";
    long before = System.currentTimeMillis() / 60_000;
    ResponseEntity<String> started =
        this.http.postForEntity(
            path,
            Map.of(
                "feature", "stream-end-guard",
                "fleet", "checkout-2026-12",
                "duration", "20m",
                "slice", "60s"),
            String.class);
    long after = System.currentTimeMillis() / 60_000;
    assertThat(started.getStatusCode()).as(started.getBody()).isEqualTo(HttpStatus.OK);
    JsonNode experiment = this.json.readTree(started.getBody());
    assertThat(experiment.get("feature").asText()).isEqualTo("stream-end-guard");
    assertThat(experiment.get("fleet").asText()).isEqualTo("checkout-2026-12");
    assertThat(experiment.get("sliceIndex").asLong()).isBetween(before, after);
    assertThat(experiment.get("arm").asText()).isIn("tuned", "stock");
    JsonNode joined = experiment.at("/sliceStarts/0");
    assertThat(joined.get("sliceIndex").asLong()).isEqualTo(experiment.get("sliceIndex").asLong());
    assertThat(joined.get("arm").asText()).isEqualTo(experiment.get("arm").asText());
    assertThat(joined.get("recorded").asBoolean()).isFalse();
    assertThat(Instant.parse(joined.get("switchedAt").asText()).toEpochMilli() / 60_000)
        .isBetween(before, after);
    assertThat(this.http.exchange(path, HttpMethod.DELETE, null, String.class).getStatusCode())
        .isEqualTo(HttpStatus.OK);
  }

  /**
   * Every refusal of a write answers 400 with its reason, and the field it concerns, in the body,
   * under Boot's default error settings (the message is hidden from its own error bodies).
   */
  @Test
  void everyRefusedWriteSaysWhyInItsBody() throws Exception {
    String experiment = "/actuator/spannertuning/spanner/experiment";
    assertRefused(
        this.http.postForEntity(experiment, Map.of("duration", "10m", "slice", "2s"), String.class),
        "slice must be longer than the carry-over discarded after each switch (5s), was 2s",
        "slice");
    assertRefused(
        this.http.postForEntity(experiment, Map.of("duration", "soon"), String.class),
        "duration must be a duration such as 20m, 60s or 500ms (Boot's duration format), was"
            + " 'soon'",
        "duration");
    assertRefused(
        this.http.postForEntity(experiment, Map.of("fleet", "checkout 2026"), String.class),
        "fleet must be 1 to 64 letters, digits, '-', '_' or '.', the same on every instance, such"
            + " as checkout-2026-12, was 'checkout 2026'",
        "fleet");
    assertRefused(
        this.http.postForEntity(
            experiment, Map.of("fleet", "checkout-2026-12", "slice", "5200ms"), String.class),
        "slice must be longer than the carry-over discarded after each switch (5s) and the clock"
            + " skew a fleet run tolerates between instances (250ms) together, was 5200ms",
        "slice");
    assertRefused(
        this.http.postForEntity(experiment, Map.of("feature", "grpc-gcp"), String.class),
        "grpc-gcp is chosen when the channels are built and cannot be switched at runtime;"
            + " features that can be switched: ",
        "feature");
    HttpHeaders headers = new HttpHeaders();
    headers.setContentType(MediaType.APPLICATION_JSON);
    assertThat(
            this.http
                .postForEntity(experiment, new HttpEntity<>(headers), String.class)
                .getStatusCode())
        .isEqualTo(HttpStatus.OK);
    assertRefused(
        this.http.postForEntity(experiment, Map.of("duration", "10m"), String.class),
        "an experiment is already running on this client (slice 1 of 20); stop it before"
            + " starting another",
        null);
    assertThat(
            this.http.exchange(experiment, HttpMethod.DELETE, null, String.class).getStatusCode())
        .isEqualTo(HttpStatus.OK);
    assertRefused(
        this.http.exchange(
            "/actuator/spannertuning/nope/experiment", HttpMethod.DELETE, null, String.class),
        "Unknown Spanner client 'nope'",
        null);
    assertRefused(
        this.http.postForEntity(
            "/actuator/spannertuning/spanner/experiments", Map.of("duration", "10m"), String.class),
        "Unknown operation 'experiments'; the only one is 'experiment'",
        null);

    String client = "/actuator/spannertuning/spanner";
    assertRefused(
        this.http.postForEntity(client, Map.of("feature", "turbo", "enabled", true), String.class),
        "Unknown feature 'turbo'; features that can be switched: ",
        "feature");
    assertRefused(
        this.http.postForEntity(client, Map.of("feature", "stream-end-guard"), String.class),
        "enabled is required: true or false",
        "enabled");
    assertRefused(
        this.http.postForEntity(
            client, Map.of("feature", "stream-end-guard", "enabled", "maybe"), String.class),
        "enabled must be true or false, was 'maybe'",
        "enabled");
    assertRefused(
        this.http.postForEntity(
            "/actuator/spannertuning/nope",
            Map.of("feature", "stream-end-guard", "enabled", true),
            String.class),
        "Unknown Spanner client 'nope'",
        null);
  }

  private void assertRefused(ResponseEntity<String> response, String message, String field)
      throws Exception {
    assertThat(response.getStatusCode()).as(response.getBody()).isEqualTo(HttpStatus.BAD_REQUEST);
    JsonNode body = this.json.readTree(response.getBody());
    assertThat(body.get("status").asInt()).isEqualTo(400);
    assertThat(body.get("error").asText()).isEqualTo("Bad Request");
    assertThat(body.get("message").asText()).startsWith(message);
    if (field != null) {
      assertThat(body.get("field").asText()).isEqualTo(field);
      assertThat(body.size()).as("fields of %s", body).isEqualTo(4);
    } else {
      assertThat(body.has("field")).as("field in %s", body).isFalse();
      assertThat(body.size()).as("fields of %s", body).isEqualTo(3);
    }
  }

  private long skipped() throws Exception {
    String body = this.http.getForObject("/actuator/spannertuning/spanner", String.class);
    return this.json.readTree(body).get(GuardLine.closedAtLastField()).asLong();
  }

  private void pointSelects(int count) {
    DatabaseClient client = this.databaseClient.get();
    for (int i = 0; i < count; i++) {
      try (ResultSet resultSet =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(resultSet.next()).isTrue();
      }
    }
    // A point select closed on its last row drains: it is counted when its trailers arrive.
    await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams() == 0);
  }

  private long activeStreams() throws Exception {
    String body = this.http.getForObject("/actuator/spannertuning/spanner", String.class);
    long active = 0;
    for (JsonNode channel : this.json.readTree(body).get("channels")) {
      active += channel.get("activeStreams").asLong();
    }
    return active;
  }

  static void assertNothingSecret(String body) {
    assertThat(body.toLowerCase())
        .doesNotContain("select")
        .doesNotContain("singers")
        .doesNotContain("credential")
        .doesNotContain("token")
        .doesNotContain("password")
        .doesNotContain(".json");
  }
}
