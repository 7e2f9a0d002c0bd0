package io.github.spannertuning.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.testing.DynamicPoolLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A JDBC URL that turns the driver's dynamic channel pool on ({@code
 * enableDynamicChannelPool=true}) gets a tuned client whose routing follows that pool where the
 * line can ({@link DynamicPoolLine}): the driver's autocommit selects, single-use reads, are
 * routed, on a pool that reports itself dynamic.
 */
class JdbcDynamicPoolTest {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  @Test
  void aDataSourceUrlWithTheDynamicPoolIsTunedAndRouted() throws Exception {
    String url =
        "jdbc:cloudspanner://localhost:"
            + server.get().port()
            + "/projects/p/instances/i/databases/dynamic;usePlainText=true"
            + ";enableDynamicChannelPool=true";
    try (TunedJdbcClient client =
        SpannerJdbcTuning.tune(
            url, new Properties(), SpannerTuning.newBuilder().logWhenBuilt(false).build())) {
      SpannerTuningState state = client.state();
      try (Connection connection = DriverManager.getConnection(url);
          Statement statement = connection.createStatement()) {
        for (int i = 0; i < 20; i++) {
          try (ResultSet rows = statement.executeQuery(MockSpannerServer.POINT_SELECT)) {
            assertThat(rows.next()).as("point select %d returns its row", i).isTrue();
          }
        }
      }
      assertThat(client.isTuned()).as("the driver's client is tuned: %s", client).isTrue();
      assertThat(state.isPoolDynamic()).as("its pool: %s", state.summary()).isTrue();
      assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
          .as("single-use distribution on the dynamic pool: %s", state.summary())
          .isEqualTo(DynamicPoolLine.expected());
      // The driver's own first query (its dialect) is a single-use read too.
      if (DynamicPoolLine.routes()) {
        assertThat(state.singleUseRoutedCount())
            .as("autocommit selects routed")
            .isBetween(20L, 21L);
      } else {
        assertThat(state.singleUseRoutedCount()).as("autocommit selects routed").isZero();
      }
    }
  }
}
