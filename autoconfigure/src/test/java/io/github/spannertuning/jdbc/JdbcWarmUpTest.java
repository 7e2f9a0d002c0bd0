package io.github.spannertuning.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.client.SpannerTuningState.WarmUp;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The JDBC driver's client is warmed as the starter's others are: against a test server whose every
 * call on a new connection waits until 200 ms after that connection's first call, the driver's
 * tuned client is warm once {@link SpannerTuningState#warmUp} returns (what the starter's readiness
 * waits for), and then 16 threads reading through the driver at once wait for no connection. The
 * server counts the waits; no timing.
 */
class JdbcWarmUpTest {

  private static final int CHANNELS = 4;

  private static final int READS = 40;

  @Test
  void theDriversClientIsWarmBeforeItsFirstReadsAndTheyWaitForNoConnection() throws Exception {
    try (MockSpannerServer server =
        MockSpannerServer.builder().connectionSetUp(Duration.ofMillis(200)).start()) {
      String url =
          "jdbc:cloudspanner://localhost:"
              + server.port()
              + "/projects/p/instances/i/databases/warm;usePlainText=true;numChannels="
              + CHANNELS;
      try (TunedJdbcClient client =
          SpannerJdbcTuning.tune(
              url,
              new Properties(),
              SpannerTuning.newBuilder().logWhenBuilt(false).warmUpReads(READS).build())) {
        SpannerTuningState state = client.state();
        try (Connection first = DriverManager.getConnection(url)) {
          WarmUp warmUp = state.warmUp(Duration.ofSeconds(10));
          assertThat(warmUp.warm()).as("the driver's client warmed: %s", warmUp).isTrue();
          assertThat(warmUp.warmChannels()).as("%s", warmUp).isEqualTo(CHANNELS);
          assertThat(
                  server.calls("ExecuteStreamingSql").stream()
                      .map((call) -> ((ExecuteSqlRequest) call.request()).getSql()))
              .as("the read path warmed through the driver's client, with no table read")
              .hasSize(READS)
              .containsOnly("SELECT 1");
          assertThat(state.warmUpReadCount()).isEqualTo(READS);
          server.reset();
          Loops.together(16, 1, (thread, i) -> pointSelect(url));
          assertThat(
                  server.callsThatWaitedForSetUp().stream()
                      .filter((call) -> call.method().equals("ExecuteStreamingSql")))
              .as("the driver's reads that waited for a connection")
              .isEmpty();
        }
      }
    }
  }

  private static void pointSelect(String url) {
    try (Connection connection = DriverManager.getConnection(url);
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(MockSpannerServer.POINT_SELECT)) {
      assertThat(rows.next()).isTrue();
    } catch (SQLException ex) {
      throw new IllegalStateException(ex);
    }
  }
}
