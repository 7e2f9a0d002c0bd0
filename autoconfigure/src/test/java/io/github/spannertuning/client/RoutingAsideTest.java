package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.pool.RoutingAside;
import io.github.spannertuning.testing.DynamicPoolLine;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.LogCapture;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.github.spannertuning.testing.StatementResult;
import io.grpc.ManagedChannelBuilder;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.logging.Level;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Routing steps aside where the client chooses channels or endpoints another way: location-aware
 * routing, and the dynamic channel pool on a client before 6.119. The routing features are
 * unsupported with the reason, one warning is logged, the client's pool is left as it is, and the
 * application's queries and transactions still work. From 6.119 routing follows the dynamic pool
 * (the build's expectation for the line: {@link DynamicPoolLine}); how it routes there is {@code
 * DynamicPoolIT}'s.
 */
class RoutingAsideTest {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final UnaryOperator<String> NO_ENV = (name) -> null;

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  @Test
  void onTheDynamicChannelPoolRoutingFollowsItOrStepsAsideAsTheLineCanAndTrafficWorks() {
    try (LogCapture warnings = captureWarnings()) {
      for (int i = 0; i < 2; i++) {
        // The client turns the dynamic pool on only where the pool size is not set.
        SpannerOptions.Builder builder =
            SpannerOptions.newBuilder()
                .setProjectId("test-project")
                .setHost("http://127.0.0.1:" + server.get().port())
                .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
                .setCredentials(NoCredentials.getInstance())
                .enableDynamicChannelPool();
        SpannerTuningState state =
            SpannerTuning.newBuilder().environment(NO_ENV).build().applyTo(builder);
        SpannerOptions options = builder.build();
        assertThat(options.isDynamicChannelPoolEnabled()).isTrue();
        try (Spanner spanner = options.getService()) {
          if (!DynamicPoolLine.routes()) {
            assertSteppedAside(state, RoutingAside.DYNAMIC_POOL);
            assertTrafficWorks(spanner, state, false);
            continue;
          }
          for (Feature feature :
              new Feature[] {Feature.SINGLE_USE_DISTRIBUTION, Feature.TRANSACTION_ROUTING}) {
            assertThat(state.feature(feature).status()).as(feature.id()).isEqualTo(Status.ON);
          }
          assertThat(state.feature(Feature.HEDGING).status()).isEqualTo(Status.OFF);
          assertThat(state.isPoolDynamic()).isTrue();
          assertThat(state.summary()).contains("grpc-gcp dynamic, now 4 channels");
          assertTrafficWorks(spanner, state, true);
        }
      }
      if (DynamicPoolLine.routes()) {
        assertThat(warnings.messages()).as("warnings").isEmpty();
      } else {
        assertWarnedOnce(warnings.messages(), RoutingAside.DYNAMIC_POOL);
      }
    }
  }

  @Test
  void withLocationAwareRoutingOnRoutingStepsAsideAndTrafficWorks() {
    try (LogCapture warnings = captureWarnings()) {
      SpannerOptions.Builder builder = server.get().clientOptions(4);
      UnaryOperator<String> env =
          (name) -> name.equals("GOOGLE_SPANNER_EXPERIMENTAL_LOCATION_API") ? "true" : null;
      SpannerTuningState state =
          SpannerTuning.newBuilder().environment(env).build().applyTo(builder);
      try (Spanner spanner = builder.build().getService()) {
        assertSteppedAside(state, RoutingAside.LOCATION_API);
        assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).reason())
            .contains("GOOGLE_SPANNER_EXPERIMENTAL_LOCATION_API=true");
        assertTrafficWorks(spanner, state, false);
      }
      assertWarnedOnce(warnings.messages(), RoutingAside.LOCATION_API);
    }
  }

  @Test
  void withNeitherRoutingStaysAsTheLineHasIt() {
    for (String value : new String[] {null, "false"}) {
      SpannerOptions.Builder builder = server.get().clientOptions(4);
      SpannerTuningState state =
          SpannerTuning.newBuilder().environment((name) -> value).build().applyTo(builder);
      try (Spanner spanner = builder.build().getService()) {
        assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
            .as("env %s", value)
            .isEqualTo(RoutingSubject.expected());
        assertThat(RoutingAside.reason(spanner.getOptions(), (name) -> value)).isNull();
      }
    }
  }

  /**
   * One warning per JVM for a reason: logged here, or already by an earlier test in this JVM (the
   * suite shares one), and never twice.
   */
  private static void assertWarnedOnce(List<String> warnings, String reason) {
    List<String> logged = warnings.stream().filter((line) -> line.contains(reason)).toList();
    assertThat(logged).as("warnings for two clients").hasSizeLessThanOrEqualTo(1);
    assertThat(SpannerTuning.warnedRoutingAside(reason)).as("warned in this JVM").isTrue();
  }

  private static void assertSteppedAside(SpannerTuningState state, String reason) {
    for (Feature feature :
        new Feature[] {Feature.SINGLE_USE_DISTRIBUTION, Feature.TRANSACTION_ROUTING}) {
      assertThat(state.feature(feature))
          .as(feature.id())
          .isEqualTo(FeatureState.unsupported(reason));
      assertThat(state.isActive(feature)).isFalse();
    }
    // What does not route is as it was.
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(GuardLine.expected());
    assertThat(state.summary()).contains("single-use-distribution=unsupported (" + reason + ")");
  }

  private static void assertTrafficWorks(
      Spanner spanner, SpannerTuningState state, boolean routed) {
    server
        .get()
        .mock()
        .putStatementResult(StatementResult.update(Statement.of(RoutingSubject.UPDATE), 1L));
    DatabaseClient client = spanner.getDatabaseClient(DATABASE);
    for (int i = 0; i < 20; i++) {
      try (ResultSet rs =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        assertThat(rs.next()).isTrue();
      }
    }
    Long updated =
        client
            .readWriteTransaction()
            .run((transaction) -> transaction.executeUpdate(Statement.of(RoutingSubject.UPDATE)));
    assertThat(updated).isEqualTo(1L);
    assertThat(state.singleUseRoutedCount())
        .as("single-use reads routed")
        .isEqualTo(routed ? 20 : 0);
    assertThat(state.transactionsRoutedCount()).as("transactions routed").isEqualTo(routed ? 1 : 0);
  }

  private static LogCapture captureWarnings() {
    return LogCapture.start(SpannerTuning.class.getName(), (level) -> level == Level.WARNING);
  }
}
