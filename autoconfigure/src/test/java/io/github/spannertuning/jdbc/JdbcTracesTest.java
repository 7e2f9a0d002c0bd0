package io.github.spannertuning.jdbc;

import static io.github.spannertuning.testing.TracedClients.COMMIT;
import static io.github.spannertuning.testing.TracedClients.QUERY;
import static io.github.spannertuning.testing.TracedClients.ROUTE;
import static io.github.spannertuning.testing.TracedClients.STREAM_END;
import static io.github.spannertuning.testing.TracedClients.UPDATE;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.jdbc.JdbcDriver;
import com.zaxxer.hikari.HikariDataSource;
import io.github.spannertuning.autoconfigure.SpannerTuningAutoConfiguration;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.github.spannertuning.testing.StatementResult;
import io.github.spannertuning.testing.TracedClients;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceProperties;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The JDBC driver's client traces with the OpenTelemetry the application hands the driver as its
 * {@code openTelemetry} connection property (an object, so set on the pool, not in the URL), and
 * its spans carry spanner-tuning's attributes. The DataSource is the application's Hikari pool, as
 * Boot builds it from {@code spring.datasource.*}, with that one property added; the starter tunes
 * the driver's client for it.
 */
class JdbcTracesTest {

  private static final String UPDATE_SQL = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private static TracedClients traces;

  @BeforeAll
  static void chooseOpenTelemetry() {
    server
        .get()
        .mock()
        .putStatementResult(
            StatementResult.update(com.google.cloud.spanner.Statement.of(UPDATE_SQL), 1L));
    TracedClients.chooseOpenTelemetryTraces();
    traces = new TracedClients();
  }

  @AfterAll
  static void forgetOpenTelemetry() {
    traces.close();
    TracedClients.resetTracingChoice();
  }

  @Test
  void theDriversClientSpansSayWhereEachCallWent() {
    new ApplicationContextRunner()
        .withConfiguration(
            AutoConfigurations.of(
                SpannerTuningAutoConfiguration.class, DataSourceAutoConfiguration.class))
        .withUserConfiguration(TracedDataSource.class)
        .withPropertyValues(
            "spring.datasource.url=jdbc:cloudspanner://localhost:"
                + server.get().port()
                + "/projects/p/instances/i/databases/d;usePlainText=true",
            "spring.datasource.driver-class-name=" + JdbcDriver.class.getName())
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              DataSource dataSource = context.getBean(DataSource.class);
              pointSelect(dataSource);
              traces.clear();
              server.get().reset();
              for (int i = 0; i < 8; i++) {
                pointSelect(dataSource);
              }
              List<SpanData> reads = traces.spans(QUERY);
              assertThat(reads)
                  .extracting((span) -> span.getAttributes().get(ROUTE))
                  .containsOnly("latency");
              assertThat(reads)
                  .extracting((span) -> span.getAttributes().get(STREAM_END))
                  .containsOnly("drained");
              TracedClients.assertChannelsAreConnections(
                  reads, server.get().calls("ExecuteStreamingSql"));
              try (Connection connection = dataSource.getConnection();
                  Statement statement = connection.createStatement()) {
                connection.setAutoCommit(false);
                statement.executeUpdate(UPDATE_SQL);
                connection.commit();
              }
              SpanData update = only(traces.spans(UPDATE));
              SpanData commit = only(traces.spans(COMMIT));
              assertThat(update.getAttributes().get(ROUTE)).isEqualTo("latency");
              assertThat(commit.getAttributes().get(ROUTE)).isEqualTo("transaction");
              TracedClients.assertChannelsAreConnections(
                  List.of(update, commit),
                  List.of(
                      only(server.get().calls("ExecuteSql")), only(server.get().calls("Commit"))));
            });
  }

  private static void pointSelect(DataSource dataSource) throws Exception {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery(MockSpannerServer.POINT_SELECT)) {
      assertThat(rs.next()).isTrue();
    }
  }

  private static <T> T only(List<T> items) {
    assertThat(items).hasSize(1);
    return items.get(0);
  }

  /**
   * The application's pool, as Boot's own DataSource configuration builds it, given the
   * OpenTelemetry its tracing uses as the driver's {@code openTelemetry} property.
   */
  @Configuration(proxyBeanMethods = false)
  static class TracedDataSource {

    @Bean(destroyMethod = "")
    OpenTelemetry openTelemetry() {
      return traces.openTelemetry();
    }

    @Bean
    HikariDataSource dataSource(DataSourceProperties properties, OpenTelemetry openTelemetry) {
      HikariDataSource dataSource =
          properties.initializeDataSourceBuilder().type(HikariDataSource.class).build();
      dataSource.addDataSourceProperty(JdbcDriver.OPEN_TELEMETRY_PROPERTY_KEY, openTelemetry);
      return dataSource;
    }
  }
}
