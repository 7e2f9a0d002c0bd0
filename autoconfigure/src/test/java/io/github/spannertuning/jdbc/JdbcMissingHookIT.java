package io.github.spannertuning.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ClientDescriptor;
import io.github.spannertuning.autoconfigure.SpannerTuningAutoConfiguration;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.testing.MockSpannerServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A JDBC driver without the hook spanner-tuning relies on, simulated by a class loader that hides
 * the Connection API's package-private configurator interface: the application starts and queries
 * through the driver as it is, and the endpoint says {@code unsupported}, with the member that is
 * missing. Each test has its own server, so its URL is a pool key of its own.
 */
@Tag("shares-machine")
class JdbcMissingHookIT {

  private static final String CONFIGURATOR =
      "com.google.cloud.spanner.connection.ConnectionOptions$SpannerOptionsConfigurator";

  private MockSpannerServer server;

  private String url;

  @BeforeEach
  void start() throws Exception {
    this.server = MockSpannerServer.start();
    this.url =
        "jdbc:cloudspanner://localhost:"
            + this.server.port()
            + "/projects/p/instances/i/databases/d;usePlainText=true";
  }

  @AfterEach
  void stop() throws Exception {
    this.server.close();
  }

  @Test
  void aSpringApplicationStartsQueriesAndIsToldWhy() {
    new ApplicationContextRunner()
        .withClassLoader(new FilteredClassLoader(CONFIGURATOR))
        .withConfiguration(
            AutoConfigurations.of(
                SpannerTuningAutoConfiguration.class,
                DataSourceAutoConfiguration.class,
                JdbcTemplateAutoConfiguration.class))
        .withPropertyValues(
            "spring.datasource.url=" + this.url,
            "spring.datasource.driver-class-name=com.google.cloud.spanner.jdbc.JdbcDriver")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              String name =
                  context
                      .getBean(JdbcTemplate.class)
                      .queryForObject(MockSpannerServer.POINT_SELECT, (rs, i) -> rs.getString(2));
              assertThat(name).isEqualTo("Alice");
              SpannerTuningRegistry registry = context.getBean(SpannerTuningRegistry.class);
              ClientDescriptor client =
                  new SpannerTuningEndpoint(registry::clients, registry::jdbcClient, Show.NEVER)
                      .client("dataSource");
              assertThat(client).as("the endpoint's entry for DataSource 'dataSource'").isNotNull();
              assertThat(client.features())
                  .allSatisfy(
                      (feature, state) -> {
                        assertThat(state.state()).isEqualTo("unsupported");
                        assertThat(state.reason()).contains("SpannerOptionsConfigurator");
                      });
              assertThat(client.jdbc().database()).isEqualTo("projects/p/instances/i/databases/d");
            });
  }

  @Test
  void aPlainJdbcApplicationKeepsItsDriver() throws Exception {
    TunedJdbcClient tuned =
        SpannerJdbcTuning.tune(
            this.url,
            new Properties(),
            SpannerTuning.defaults(),
            new FilteredClassLoader(CONFIGURATOR));
    assertThat(tuned.isTuned()).isFalse();
    assertThat(tuned.unsupportedReason()).get().asString().contains(CONFIGURATOR);
    try (Connection connection = DriverManager.getConnection(this.url);
        ResultSet rows =
            connection.createStatement().executeQuery(MockSpannerServer.POINT_SELECT)) {
      assertThat(rows.next()).isTrue();
      assertThat(rows.getString(2)).isEqualTo("Alice");
    }
    tuned.close();
  }

  /** The other way the hook can fail: the driver built the URL's client before the call. */
  @Test
  void aClientBuiltBeforeTheCallIsReportedNotTuned() throws Exception {
    try (Connection first = DriverManager.getConnection(this.url)) {
      TunedJdbcClient tuned = SpannerJdbcTuning.tune(this.url);
      assertThat(tuned.isTuned()).isFalse();
      assertThat(tuned.unsupportedReason()).get().asString().contains("before spanner-tuning");
      try (ResultSet rows = first.createStatement().executeQuery(MockSpannerServer.POINT_SELECT)) {
        assertThat(rows.next()).isTrue();
      }
      tuned.close();
    }
  }
}
