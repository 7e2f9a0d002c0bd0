package io.github.spannertuning.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.github.spannertuning.sample.backend.EmbeddedFakeSpanner;
import io.github.spannertuning.sample.backend.SampleBackend;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.autoconfigure.actuate.observability.AutoConfigureObservability;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/**
 * A machine with no backend: no emulator binary where the sample looks, no {@code
 * SPANNER_EMULATOR_HOST}, Cloud Spanner not chosen. The sample says so in one line and runs on its
 * embedded fake, which it labels as one.
 */
@SpringBootTest(
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {
      "sample.emulator.search-locations=/nonexistent/emulator_main",
      "SPANNER_EMULATOR_HOST=",
      "SPANNER_EMULATOR_BINARY=",
      "sample.seed-singers=200"
    })
@ExtendWith(OutputCaptureExtension.class)
// Boot's tests export no metrics unless told: the sample's Prometheus scrape is checked here.
@AutoConfigureObservability(tracing = false)
@SuppressWarnings({"unchecked", "rawtypes"})
class SampleWithoutBackendTests {

  @Autowired private TestRestTemplate rest;

  @Autowired private SampleBackend backend;

  @Test
  void saysSoInOneLineAndRunsOnTheLabelledFake(CapturedOutput output) {
    assertThat(this.backend.kind()).isEqualTo(SampleBackend.Kind.EMBEDDED_FAKE);
    assertThat(output.getAll().lines().filter((line) -> line.contains("No Spanner backend found")))
        .singleElement()
        .asString()
        .contains(
            "/nonexistent/emulator_main", "SPANNER_EMULATOR_HOST not set", "embedded FAKE Spanner");
    assertThat(output.getAll()).contains("Open http://localhost:");
    assertThat(this.rest.getForObject("/sample/backend", Map.class))
        .containsEntry("fake", true)
        .containsEntry("kind", "embedded-fake");
  }

  @Test
  void theRestEndpointsWorkOnTheFake() {
    Map<String, Object> singer = this.rest.getForObject("/singers/5", Map.class);
    assertThat(singer).containsEntry("singerId", 5).containsKeys("firstName", "lastName");
    String prefix = ((String) singer.get("lastName")).substring(0, 1);
    List<?> found = this.rest.getForObject("/singers?lastName=" + prefix, List.class);
    assertThat(found)
        .isNotEmpty()
        .allSatisfy(
            (row) -> assertThat((String) ((Map<?, ?>) row).get("lastName")).startsWith(prefix));
    assertThat(this.rest.getForObject("/singers/5/albums", List.class)).hasSize(3);

    long before =
        ((Number) this.rest.getForObject("/singers/5/albums/3", Map.class).get("copiesSold"))
            .longValue();
    ResponseEntity<Map> written =
        this.rest.postForEntity("/singers/5/albums/3/sales?copies=4", null, Map.class);
    assertThat(written.getStatusCode()).isEqualTo(HttpStatus.OK);
    assertThat(this.rest.getForObject("/singers/5/albums/3", Map.class))
        .containsEntry("copiesSold", (int) (before + 4));
    assertThat(this.rest.getForEntity("/singers/201", Map.class).getStatusCode())
        .isEqualTo(HttpStatus.NOT_FOUND);
  }

  @Test
  void channelCallsAddUpToTheCallsTheFakeReceived() {
    EmbeddedFakeSpanner fake = this.backend.fake();
    TuningEndpoint endpoint = new TuningEndpoint(this.rest);

    Map<String, Object> burst =
        this.rest.postForObject("/load/burst?rate=200&length=1", null, Map.class);

    assertThat(burst).containsEntry("reads", 200).containsEntry("errors", 0);
    await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.activeStreams() == 0);
    assertThat(endpoint.channelCalls()).isEqualTo(fake.dataCalls());
  }

  /**
   * A burst's reads in Prometheus's scrape, as the starter's observations time them: operations,
   * attempts and the frontend's time, which the fake sends on every response as Cloud Spanner does;
   * and in the endpoint, per RPC method. Readiness is served, as the sample enables probes.
   */
  @Test
  void aBurstsReadsAreTimedInTheScrapeAndTheEndpoint() {
    Map<String, Object> burst =
        this.rest.postForObject("/load/burst?rate=100&length=1", null, Map.class);
    assertThat(burst).containsEntry("reads", 100).containsEntry("errors", 0);

    String scrape = this.rest.getForObject("/actuator/prometheus", String.class);
    for (String meter :
        List.of(
            "spanner_client_operation_seconds_count",
            "spanner_client_attempt_seconds_count",
            "spanner_client_server_duration_seconds_count")) {
      assertThat(scrape.lines())
          .as(meter)
          .anySatisfy(
              (line) ->
                  assertThat(line)
                      .startsWith(meter + "{")
                      .contains("db_operation_name=\"StreamingRead\"")
                      .contains("db_system_name=\"gcp.spanner\"")
                      .contains("error_type=\"none\"")
                      .contains("spanner_client=\"spanner\"")
                      .contains("db_namespace=\"music\""));
    }
    assertThat(scrape.lines().filter((line) -> line.startsWith("spanner_client_")))
        .isNotEmpty()
        .noneMatch((line) -> line.contains("SELECT") || line.contains("Singers"));

    Map<String, Object> observations =
        (Map<String, Object>) new TuningEndpoint(this.rest).client().get("observations");
    assertThat(observations).containsEntry("state", "on");
    assertThat((List<Map<String, Object>>) observations.get("operations"))
        .anySatisfy(
            (operation) -> {
              assertThat(operation).containsEntry("method", "StreamingRead");
              assertThat(((Number) operation.get("count")).longValue()).isGreaterThanOrEqualTo(100);
              assertThat(((Number) operation.get("frontendShare")).doubleValue())
                  .isBetween(0.0, 1.0);
            });
    assertThat(this.rest.getForEntity("/actuator/health/readiness", Map.class).getStatusCode())
        .isEqualTo(HttpStatus.OK);
  }

  /**
   * The page's warm-up card: each channel connected and primed before the app reported ready, how
   * long that took and what it sent, from {@code /sample/warm-up}; per channel, from the endpoint.
   * Counts, a duration and booleans only: no statement or row.
   */
  @Test
  void thePagesDataShowsTheClientsChannelsWarm() {
    TuningEndpoint endpoint = new TuningEndpoint(this.rest);
    Map<String, Object> client = endpoint.client();
    int poolSize = ((Number) ((Map<String, Object>) client.get("pool")).get("size")).intValue();

    ResponseEntity<Map> answer = this.rest.getForEntity("/sample/warm-up", Map.class);

    assertThat(answer.getStatusCode()).isEqualTo(HttpStatus.OK);
    Map<String, Object> warmUp =
        (Map<String, Object>)
            ((Map<String, Object>) answer.getBody().get("clients")).get("spanner");

    assertThat(warmUp)
        .containsOnlyKeys(
            "watched",
            "warm",
            "channels",
            "warmChannels",
            "sessionKnown",
            "warmUpSeconds",
            "primed",
            "coldReads",
            "refreshed",
            "refreshAfter")
        .containsEntry("watched", true)
        .containsEntry("warm", true)
        .containsEntry("channels", poolSize)
        .containsEntry("warmChannels", poolSize)
        .containsEntry("sessionKnown", true)
        .containsEntry("refreshAfter", "learned");
    assertThat(((Number) warmUp.get("warmUpSeconds")).doubleValue()).isPositive();
    assertThat(((Number) warmUp.get("primed")).longValue()).isGreaterThanOrEqualTo(poolSize);
    assertThat(((Number) warmUp.get("coldReads")).longValue()).isNotNegative();
    assertThat((List<Map<String, Object>>) client.get("channels"))
        .hasSize(poolSize)
        .allSatisfy(
            (channel) -> {
              assertThat(channel).containsEntry("primed", true);
              assertThat(Instant.parse((String) channel.get("connectedSince")))
                  .isBefore(Instant.now());
            });
  }

  @Test
  void burstParametersAreBounded() {
    assertThat(this.rest.postForEntity("/load/burst?rate=5000", null, Map.class).getBody())
        .containsEntry("error", "rate must be 1 to 1000 reads per second, was 5000");
    assertThat(this.rest.postForEntity("/load/burst?length=0", null, Map.class).getStatusCode())
        .isEqualTo(HttpStatus.BAD_REQUEST);
  }
}
