package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.StatementResult;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A tuned client (every feature on, {@value #CHANNELS} channels) of a production-like {@link
 * MockSpannerServer} of its own, new for each test.
 */
abstract class TunedClientTests {

  static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  static final int CHANNELS = 8;

  static final String UPDATE = "UPDATE Counters SET value = value + 1 WHERE id = 1";

  MockSpannerServer server;

  Spanner spanner;

  DatabaseClient client;

  SpannerTuningState state;

  @BeforeEach
  void start() throws Exception {
    this.server = MockSpannerServer.start();
    this.server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
    SpannerOptions.Builder builder = this.server.clientOptions(CHANNELS);
    this.state = SpannerTuning.defaults().applyTo(builder);
    assertThat(this.state.isActive(Feature.STREAM_END_GUARD)).as("tuned: %s", this.state).isTrue();
    this.spanner = builder.build().getService();
    this.client = this.spanner.getDatabaseClient(DATABASE);
    pointSelect();
  }

  @AfterEach
  void stop() throws Exception {
    try {
      this.server.mock().unfreeze();
      this.spanner.close();
    } finally {
      this.server.close();
    }
  }

  void pointSelect() {
    try (ResultSet rs =
        this.client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
      assertThat(rs.next()).as("point select returns its row").isTrue();
    }
  }

  void awaitNoActiveStreams() {
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(
                        this.state.channelLoad().channels().stream()
                            .mapToInt(ChannelStats::activeStreams)
                            .sum())
                    .as("active streams on every channel")
                    .isZero());
  }
}
