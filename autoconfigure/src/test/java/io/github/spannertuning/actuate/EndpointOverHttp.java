package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import java.time.Duration;
import java.util.function.Supplier;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.client.TestRestTemplate;

/**
 * The endpoint over HTTP: {@link EndpointTestApplication} on a random port, its spring-cloud-gcp
 * client ({@code spanner}) on the shared test server, the endpoint exposed with Boot's default
 * access for it (read-only) unless a test class grants more with {@code @TestPropertySource}.
 */
@SpringBootTest(
    classes = EndpointTestApplication.class,
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {
      "spring.cloud.gcp.project-id=test-project",
      "spring.cloud.gcp.spanner.instance-id=test-instance",
      "spring.cloud.gcp.spanner.database=test-database",
      "spring.cloud.gcp.secretmanager.enabled=false",
      "management.endpoints.web.exposure.include=spannertuning"
    })
abstract class EndpointOverHttp {

  static final String CLIENT = "/actuator/spannertuning/spanner";

  final ObjectMapper json = new ObjectMapper();

  @Autowired TestRestTemplate http;

  @Autowired
  @Qualifier("databaseClientProvider")
  private Supplier<DatabaseClient> databaseClient;

  /**
   * {@code count} point selects on the application's client, then until none of its streams is
   * open: a point select closed on its last row drains, and is counted when its trailers arrive.
   */
  void pointSelects(int count) {
    MockSpannerServer.pointSelects(this.databaseClient.get(), count);
    await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams() == 0);
  }

  /**
   * {@code count} single-use runs of {@code sql}, which the server answers with one row, each read
   * to its end, then until none of the application's streams is open.
   */
  void queries(String sql, int count) {
    EndpointTestApplication.sharedServer()
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(sql), ResultSets.pointRow()));
    DatabaseClient client = this.databaseClient.get();
    for (int i = 0; i < count; i++) {
      try (ResultSet rows = client.singleUse().executeQuery(Statement.of(sql))) {
        while (rows.next()) {
          // Read to the end.
        }
      }
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> activeStreams() == 0);
  }

  /** What {@code GET /actuator/spannertuning/spanner} answers. */
  JsonNode client() throws Exception {
    return this.json.readTree(this.http.getForObject(CLIENT, String.class));
  }

  private long activeStreams() throws Exception {
    long active = 0;
    for (JsonNode channel : client().get("channels")) {
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
