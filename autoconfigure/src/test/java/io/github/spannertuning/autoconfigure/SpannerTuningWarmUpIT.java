package io.github.spannertuning.autoconfigure;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.client.ClientVersions;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.StockAndTuned;
import io.github.spannertuning.testing.TunedInstance;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The warm-up in a Spring Boot application (spring-cloud-gcp's client, bean {@code spanner})
 * against a server whose connections cost 200 ms to set up: the application reports ready through
 * {@code /actuator/health/readiness} once its channels are warm, and its first reads wait for no
 * connection; with Spanner unreachable it is ready anyway after {@code
 * spanner.tuning.warm-up.timeout}, with the warning, and its reads work once Spanner is back.
 *
 * <p>Tagged {@code default-line}: what it checks beyond {@code WarmUpIT} (readiness, the runner,
 * the warning) is the starter's own Spring code, the same on every client line.
 */
@ExtendWith(OutputCaptureExtension.class)
@Tag("default-line")
@Tag("shares-machine")
class SpannerTuningWarmUpIT {

  private static final Duration SET_UP = Duration.ofMillis(200);

  /** The read warm-up's count, set as a user sets it. */
  private static final int READS = 150;

  private static final String PROBES =
      "management.endpoints.web.exposure.include=health,prometheus,spannertuning";

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void anApplicationIsReadyWithWarmChannelsAndItsFirstReadsWaitForNoConnection(
      CapturedOutput output) throws Exception {
    StockAndTuned<Start> start =
        StockAndTuned.measure(
            (tuned) -> {
              try (MockSpannerServer server =
                  MockSpannerServer.builder().connectionSetUp(SET_UP).start()) {
                long began = System.nanoTime();
                try (TunedInstance app = withProbes(server, "spanner.tuning.enabled=" + tuned)) {
                  Duration toReady = Duration.ofNanos(System.nanoTime() - began);
                  int readiness = readiness(app);
                  String endpoint = get(app, "/actuator/spannertuning");
                  String prometheus = get(app, "/actuator/prometheus");
                  server.reset();
                  DatabaseClient client = app.databaseClient();
                  Loops.together(32, 10, (thread, i) -> read(client));
                  long waited =
                      server.callsThatWaitedForSetUp().stream()
                          .filter((call) -> call.method().equals("ExecuteStreamingSql"))
                          .count();
                  return new Start(toReady, readiness, waited, endpoint, prometheus);
                }
              }
            });
    String figures =
        start.print(
            "[warm-up %s, application] set-up %d ms, then 32 threads x 10 reads"
                .formatted(ClientVersions.detected().spanner(), SET_UP.toMillis()));

    assertThat(start.tuned().readiness()).as(figures).isEqualTo(200);
    assertThat(start.tuned().waited()).as("tuned: reads that waited: " + figures).isZero();
    assertThat(start.stock().waited()).as("stock: reads that waited: " + figures).isPositive();
    assertThat(output)
        .contains(
            "Spanner client 'spanner': ",
            " channels connected and primed in ",
            "; read path warmed with " + READS + " of " + READS + " reads in ");
    assertThat(start.tuned().endpoint())
        .as("every channel primed, with the time it connected")
        .contains("\"primed\":true", "\"connectedSince\":\"")
        .doesNotContain("\"primed\":false");
    assertThat(start.stock().endpoint()).doesNotContain("\"primed\":true");
    assertThat(start.tuned().prometheus())
        .contains(
            "spanner_tuning_warm_up_primed_calls_total{",
            "spanner_tuning_warm_up_duration_seconds{",
            "spanner_tuning_warm_up_cold_reads_calls_total{",
            "spanner_tuning_warm_up_refreshed_connections_total{",
            "spanner_tuning_warm_up_reads_calls_total{");
    assertThat(start.tuned().endpoint()).contains("\"warmUpReads\":" + READS);
    assertThat(start.stock().endpoint()).doesNotContain("\"warmUpReads\":" + READS);
  }

  @Test
  void withSpannerUnreachableTheApplicationIsReadyAfterTheTimeoutAndReadsOnceItIsBack(
      CapturedOutput output) throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      server.stop();
      long began = System.nanoTime();
      try (TunedInstance app = withProbes(server, "spanner.tuning.warm-up.timeout=1s")) {
        Duration toReady = Duration.ofNanos(System.nanoTime() - began);
        assertThat(readiness(app)).isEqualTo(200);
        assertThat(toReady)
            .as("the start waited at most about the timeout")
            .isLessThan(Duration.ofSeconds(20));
        assertThat(output)
            .contains(
                "Spanner client 'spanner': ",
                "channels not warm after PT1S (spanner.tuning.warm-up.timeout)",
                "the application reports ready anyway");
        server.startAgain();
        DatabaseClient client = app.databaseClient();
        read(client);
        assertThat(app.tuning().warmer().awaitWarm(Duration.ofSeconds(30)))
            .as("the channels warm once Spanner is back")
            .isTrue();
      }
    }
  }

  private String get(TunedInstance app, String path) throws Exception {
    return this.http
        .send(
            HttpRequest.newBuilder(URI.create("http://" + app.target() + path)).build(),
            HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private int readiness(TunedInstance app) throws Exception {
    return this.http
        .send(
            HttpRequest.newBuilder(
                    URI.create("http://" + app.target() + "/actuator/health/readiness"))
                .build(),
            HttpResponse.BodyHandlers.discarding())
        .statusCode();
  }

  private static void read(DatabaseClient client) {
    try (ResultSet rows = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      if (!rows.next()) {
        throw new AssertionError("no row");
      }
    }
  }

  record Start(Duration toReady, int readiness, long waited, String endpoint, String prometheus) {

    @Override
    public String toString() {
      return "Start[toReady=%s, readiness=%d, waited=%d]".formatted(toReady, readiness, waited);
    }
  }

  /** The application on {@code server} with Kubernetes' probes, and {@code property}. */
  private static TunedInstance withProbes(MockSpannerServer server, String property)
      throws Exception {
    return TunedInstance.start(
        server,
        0,
        PROBES,
        "management.endpoint.health.probes.enabled=true",
        "spanner.tuning.warm-up.reads=" + READS,
        property);
  }
}
