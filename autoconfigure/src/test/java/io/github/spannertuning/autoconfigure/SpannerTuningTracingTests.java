package io.github.spannertuning.autoconfigure;

import static io.github.spannertuning.testing.TracedClients.QUERY;
import static io.github.spannertuning.testing.TracedClients.ROUTE;
import static io.github.spannertuning.testing.TracedClients.STREAM_END;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.autoconfigure.core.GcpContextAutoConfiguration;
import com.google.cloud.spring.autoconfigure.spanner.GcpSpannerAutoConfiguration;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.github.spannertuning.testing.TracedClients;
import io.grpc.ManagedChannelBuilder;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.gson.GsonAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * spring-cloud-gcp's client in an application whose Spring Boot traces with OpenTelemetry: an
 * {@link OpenTelemetry} bean and the {@link SdkTracerProvider} bean behind it, as Boot's
 * OpenTelemetry and tracing auto-configurations make them for Micrometer Tracing's OpenTelemetry
 * bridge (here with an in-memory exporter), and the application's choice of OpenTelemetry traces
 * for the Spanner client. spring-cloud-gcp passes no OpenTelemetry to the client; the starter gives
 * its builder the bean, and the client's spans carry spanner-tuning's attributes.
 */
class SpannerTuningTracingTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private static TracedClients traces;

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  GsonAutoConfiguration.class,
                  GcpContextAutoConfiguration.class,
                  GcpSpannerAutoConfiguration.class,
                  SpannerTuningAutoConfiguration.class))
          .withPropertyValues(
              "spring.cloud.gcp.project-id=test-project",
              "spring.cloud.gcp.spanner.instance-id=test-instance",
              "spring.cloud.gcp.spanner.database=test-database")
          .withUserConfiguration(LocalServer.class);

  @BeforeAll
  static void chooseOpenTelemetry() {
    traces = new TracedClients();
  }

  @AfterAll
  static void forgetOpenTelemetry() {
    traces.close();
    TracedClients.resetTracingChoice();
  }

  @BeforeEach
  void openTelemetryTraces() {
    TracedClients.chooseOpenTelemetryTraces();
    traces.clear();
  }

  @Test
  void theClientTracesWithBootsOpenTelemetryAndItsSpansSayWhereEachCallWent() {
    this.contextRunner
        .withUserConfiguration(BootTracing.class)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(SpannerOptions.class).getOpenTelemetry())
                  .isSameAs(traces.openTelemetry());
              pointSelects(context, 1);
              traces.clear();
              server.get().reset();
              pointSelects(context, 12);
              List<SpanData> reads = traces.spans(QUERY);
              assertThat(reads)
                  .extracting((span) -> span.getAttributes().get(ROUTE))
                  .containsOnly("latency");
              assertThat(reads)
                  .extracting((span) -> span.getAttributes().get(STREAM_END))
                  .containsOnly("drained");
              TracedClients.assertChannelsAreConnections(
                  reads, server.get().calls("ExecuteStreamingSql"));
            });
  }

  /**
   * The bean is given only where Boot traces with OpenTelemetry (Boot makes an OpenTelemetry bean
   * whenever the SDK is on the classpath, tracing or not), the application chose OpenTelemetry
   * traces for the client, and it gave the builder no OpenTelemetry of its own.
   */
  @Test
  void theBeanIsGivenOnlyWhereBootTracesAndTheApplicationLeftItToBoot() {
    this.contextRunner
        .withUserConfiguration(BootTracing.class)
        .run((context) -> assertThat(openTelemetryOf(context)).isSameAs(traces.openTelemetry()));
    this.contextRunner
        .withUserConfiguration(BootOpenTelemetry.class)
        .run(
            (context) ->
                assertThat(openTelemetryOf(context))
                    .as("no SdkTracerProvider bean: Boot does not trace")
                    .isNotSameAs(traces.openTelemetry()));
    this.contextRunner
        .withUserConfiguration(BootTracing.class)
        .withPropertyValues("test.own-open-telemetry=true")
        .run(
            (context) ->
                assertThat(openTelemetryOf(context))
                    .as("the application's customizer set one")
                    .isSameAs(LocalServer.OWN_OPEN_TELEMETRY));
    TracedClients.resetTracingChoice();
    this.contextRunner
        .withUserConfiguration(BootTracing.class)
        .run(
            (context) ->
                assertThat(openTelemetryOf(context))
                    .as("the client traces with OpenCensus, its default")
                    .isNotSameAs(traces.openTelemetry()));
  }

  private static OpenTelemetry openTelemetryOf(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed();
    return context.getBean(SpannerOptions.class).getOpenTelemetry();
  }

  @SuppressWarnings("unchecked")
  private static void pointSelects(AssertableApplicationContext context, int count) {
    DatabaseClient client =
        ((Supplier<DatabaseClient>) context.getBean("databaseClientProvider")).get();
    for (int i = 0; i < count; i++) {
      try (ResultSet resultSet =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(resultSet.next()).isTrue();
      }
    }
  }

  /**
   * What Boot's OpenTelemetry and tracing auto-configurations make, with an in-memory exporter.
   * Shared by the tests, so not shut down with a context.
   */
  @Configuration(proxyBeanMethods = false)
  @Import(BootOpenTelemetry.class)
  static class BootTracing {

    @Bean(destroyMethod = "")
    SdkTracerProvider otelSdkTracerProvider() {
      return traces.tracerProvider();
    }
  }

  /** The OpenTelemetry bean Boot makes whenever the SDK is on the classpath. */
  @Configuration(proxyBeanMethods = false)
  static class BootOpenTelemetry {

    @Bean(destroyMethod = "")
    OpenTelemetry openTelemetry() {
      return traces.openTelemetry();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class LocalServer {

    static final OpenTelemetry OWN_OPEN_TELEMETRY = OpenTelemetry.noop();

    @Bean
    CredentialsProvider credentialsProvider() {
      return NoCredentials::getInstance;
    }

    @Bean
    SpannerOptionsCustomizer localServer(org.springframework.core.env.Environment environment) {
      boolean ownOpenTelemetry =
          environment.getProperty("test.own-open-telemetry", Boolean.class, false);
      return (builder) -> {
        builder
            .setHost("http://127.0.0.1:" + server.get().port())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
        if (ownOpenTelemetry) {
          builder.setOpenTelemetry(OWN_OPEN_TELEMETRY);
        }
      };
    }
  }
}
