package io.github.spannertuning.testing;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.client.SpannerTuningState;
import io.grpc.ManagedChannelBuilder;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * One instance of a fleet: a Spring Boot web application with the starter and spring-cloud-gcp's
 * Spanner client (bean {@code spanner}), against a {@link MockSpannerServer}, on a free port of its
 * own, exposing Actuator's {@code prometheus} and {@code spannertuning} endpoints (the latter
 * writable). Several run side by side in one JVM, each its own Spring context with its own meter
 * registry, as a fleet's instances would.
 */
public final class TunedInstance implements AutoCloseable {

  /** The project, instance and database the application's client uses. */
  public static final DatabaseId DATABASE =
      DatabaseId.of("test-project", "test-instance", "test-database");

  private static final String PORT_PROPERTY = "spanner-tuning.test.spanner-port";

  private final ConfigurableApplicationContext context;

  private TunedInstance(ConfigurableApplicationContext context) {
    this.context = context;
  }

  /**
   * Starts an instance against {@code server}.
   *
   * @param port the port to listen on; 0 for any free one
   * @param properties further {@code key=value} properties, such as {@code
   *     spanner.tuning.stream-end-guard.drain-timeout=1s}
   */
  public static TunedInstance start(MockSpannerServer server, int port, String... properties) {
    List<String> all =
        new ArrayList<>(
            List.of(
                "server.port=" + port,
                "server.address=127.0.0.1",
                PORT_PROPERTY + "=" + server.port(),
                "spring.main.banner-mode=off",
                "spring.cloud.gcp.project-id=" + DATABASE.getInstanceId().getProject(),
                "spring.cloud.gcp.spanner.instance-id=" + DATABASE.getInstanceId().getInstance(),
                "spring.cloud.gcp.spanner.database=" + DATABASE.getDatabase(),
                "spring.cloud.gcp.secretmanager.enabled=false",
                "management.endpoints.web.exposure.include=prometheus,spannertuning",
                "management.endpoint.spannertuning.access=unrestricted"));
    all.addAll(List.of(properties));
    SpringApplicationBuilder application =
        new SpringApplicationBuilder(Application.class).properties(all.toArray(String[]::new));
    // One start at a time: Spring Boot initializes the JVM's one logging system in each start, and
    // two at once race on Logback's properties (a CI run: ConcurrentModificationException in
    // DefaultLogbackConfiguration.putProperty; another: "Unknown format
    // 'CONSOLE_LOG_STRUCTURED_FORMAT_IS_UNDEFINED'").
    synchronized (STARTING) {
      return new TunedInstance(application.run());
    }
  }

  private static final Object STARTING = new Object();

  /** The port the application listens on. */
  public int port() {
    return ((WebServerApplicationContext) this.context).getWebServer().getPort();
  }

  /** {@code 127.0.0.1:port}: a scrape target, and Prometheus's {@code instance} label for it. */
  public String target() {
    return "127.0.0.1:" + port();
  }

  public ConfigurableApplicationContext context() {
    return this.context;
  }

  /** The tuning of the application's client, bean {@code spanner}. */
  public SpannerTuningState tuning() {
    return this.context
        .getBean(SpannerTuningRegistry.class)
        .client("spanner")
        .orElseThrow(() -> new IllegalStateException("the spanner bean is not tuned"));
  }

  /** A client of {@link #DATABASE} from the application's {@code Spanner} bean. */
  public DatabaseClient databaseClient() {
    return this.context.getBean("spanner", Spanner.class).getDatabaseClient(DATABASE);
  }

  @Override
  public void close() {
    this.context.close();
  }

  /** No DataSource: the JDBC driver and JPA on the test classpath are for the JDBC tests. */
  @SpringBootConfiguration
  @EnableAutoConfiguration(
      excludeName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
  static class Application {

    @Bean
    CredentialsProvider credentialsProvider() {
      return NoCredentials::getInstance;
    }

    @Bean
    SpannerOptionsCustomizer mockServer(@Value("${" + PORT_PROPERTY + "}") int port) {
      return (builder) ->
          builder
              .setHost("http://127.0.0.1:" + port)
              .setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
    }
  }
}
