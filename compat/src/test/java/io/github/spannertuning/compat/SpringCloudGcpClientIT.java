package io.github.spannertuning.compat;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import com.google.gson.JsonObject;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.ManagedChannelBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * spring-cloud-gcp's own Spanner auto-configuration, where the line has it (Boot 3.3 to 3.5): its
 * client is tuned and works. On Boot 4 here no spring-cloud-gcp-data-spanner is served, so that
 * auto-configuration must not run, and the application still starts.
 */
@SpringBootTest(
    classes = {CompatApplication.class, SpringCloudGcpClientIT.MockServerCustomizer.class},
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = "compat.spanner.mode=spring-cloud-gcp")
class SpringCloudGcpClientIT {

  static final MockSpannerServer SERVER = start();

  @Value("${local.server.port}")
  int port;

  @Autowired ApplicationContext context;

  /**
   * The application's client closes before its server: a 6.89 client deletes its pooled sessions
   * when it closes, and against a closed server it would wait out those calls when the context
   * closes at the JVM's exit (30 s, after which Surefire kills the test JVM). Closing it again then
   * does nothing.
   */
  @AfterAll
  static void stopServer(@Autowired ObjectProvider<Spanner> spanner) throws InterruptedException {
    spanner.ifAvailable(Spanner::close);
    SERVER.close();
  }

  @Test
  void springCloudGcpsClientIsTunedWhereTheLineHasIt() {
    if (!CompatLine.SPRING_CLOUD_GCP_SPANNER) {
      assertThat(this.context.getBeanNamesForType(Spanner.class))
          .as("Spanner beans without spring-cloud-gcp-data-spanner")
          .isEmpty();
      assertThat(
              CompatLine.get(this.port, "/actuator/spannertuning")
                  .json()
                  .getAsJsonObject("clients")
                  .size())
          .isZero();
      CompatLine.report(
          "spring-cloud-gcp-spanner",
          "does not run (no spring-cloud-gcp-data-spanner for this line)");
      return;
    }
    DatabaseClient client = this.context.getBean(CompatDatabase.class).client();
    for (int i = 0; i < 20; i++) {
      try (ResultSet rs =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString("name")).isEqualTo("Alice");
      }
    }
    JsonObject spanner = Endpoint.client(this.port, "spanner");
    Endpoint.assertFeaturesAsExpected(spanner);
    Endpoint.assertVersionsAsExpected(spanner);
    assertThat(Endpoint.calls(spanner)).isGreaterThanOrEqualTo(20);
    CompatLine.report(
        "spring-cloud-gcp-spanner",
        "tuned: "
            + Endpoint.describe(spanner, "single-use-distribution")
            + ", guard "
            + Endpoint.describe(spanner, "stream-end-guard"));
  }

  /** Points spring-cloud-gcp's client at the mock server, as an application's customizer would. */
  @TestConfiguration(proxyBeanMethods = false)
  static class MockServerCustomizer {

    @Bean
    SpannerOptionsCustomizer mockServer() {
      return (builder) ->
          builder
              .setHost("http://127.0.0.1:" + SERVER.port())
              .setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
    }
  }

  private static MockSpannerServer start() {
    try {
      return CompatLine.server().start();
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }
}
