package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ChannelDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ClientDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.FeatureDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ShapeDescriptor;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.sql.StatementNormalizer;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import java.security.Principal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * {@link SpannerTuningEndpoint} on its own, given a map of clients as Boot's {@code CachesEndpoint}
 * is given its cache managers: real tuned clients against the test server, no Spring context.
 */
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningEndpointTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private static final String STATEMENT =
      "SELECT * FROM Singers WHERE Email = 'ann@example.com' AND SingerId = 42";

  private static final String NORMALIZED = "SELECT * FROM Singers WHERE Email = ? AND SingerId = ?";

  private final Map<String, SpannerTuningState> clients = new LinkedHashMap<>();

  private final List<Spanner> spanners = new ArrayList<>();

  private final SpannerTuningEndpoint endpoint =
      new SpannerTuningEndpoint(() -> new LinkedHashMap<>(this.clients));

  @AfterEach
  void closeClients() {
    this.spanners.forEach(Spanner::close);
  }

  @Test
  void listsEveryClientByNameInOrder() {
    Spanner first = tuned("first", SpannerTuning.defaults(), 2);
    tuned("second", SpannerTuning.defaults(), 3);
    pointSelects(first, 6);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> GuardLine.closedAtLastCount(this.clients.get("first")) == 6);
    Map<String, ClientDescriptor> described = this.endpoint.clients().clients();
    assertThat(described).containsOnlyKeys("first", "second");
    assertThat(described.keySet()).containsExactly("first", "second");
    ClientDescriptor client = described.get("first");
    assertThat(client.pool().kind()).isEqualTo("grpc-gcp");
    assertThat(client.pool().size()).isEqualTo(2);
    assertThat(client.channels()).extracting(ChannelDescriptor::channel).allMatch((i) -> i < 2);
    assertThat(client.channels().stream().mapToLong(ChannelDescriptor::calls).sum())
        .isGreaterThanOrEqualTo(6);
    assertThat(client.imbalance()).isNotNull().isGreaterThanOrEqualTo(1.0);
    assertThat(client.versions().googleCloudSpanner())
        .isEqualTo(SpannerOptions.class.getPackage().getImplementationVersion());
    assertThat(
            GuardLine.clientSkipsCancelAtLast()
                ? client.streamEndGuardDrained()
                : client.streamEndGuardSkipped())
        .isEqualTo(6);
    assertThat(described.get("second").pool().size()).isEqualTo(3);
  }

  @Test
  void asksForTheClientsOnEveryRequest() {
    assertThat(this.endpoint.clients().clients()).isEmpty();
    assertThat(this.endpoint.client("late")).isNull();
    tuned("late", SpannerTuning.defaults(), 2);
    assertThat(this.endpoint.clients().clients()).containsOnlyKeys("late");
    assertThat(this.endpoint.client("late")).isNotNull();
    this.clients.remove("late");
    assertThat(this.endpoint.client("late")).isNull();
  }

  @Test
  void eachFeatureIsShownWithItsState() {
    tuned("spanner", SpannerTuning.defaults(), 2);
    Map<String, FeatureDescriptor> features = this.endpoint.client("spanner").features();
    assertThat(features.keySet())
        .containsExactly(
            "single-use-distribution",
            "transaction-routing",
            "stream-end-guard",
            "hedging",
            "grpc-gcp");
    assertThat(features.get("stream-end-guard").state()).isEqualTo(GuardLine.expectedName());
    assertThat(features.get("grpc-gcp").state()).isEqualTo("native");
    assertThat(features.get("grpc-gcp").reason()).isEqualTo("the client already uses grpc-gcp");
    assertThat(features.get("single-use-distribution").state())
        .isEqualTo(System.getProperty("spanner-tuning.expected.single-use-distribution", "native"));
    assertThat(features.get("transaction-routing").state())
        .as("routed by the same picker, where single-use reads are")
        .isEqualTo(System.getProperty("spanner-tuning.expected.single-use-distribution", "native"));
  }

  @Test
  void aFeatureOffByConfigurationNamesItsProperty() {
    tuned("spanner", SpannerTuning.newBuilder().streamEndGuard(false).build(), 2);
    assertThat(this.endpoint.client("spanner").features().get("stream-end-guard"))
        .isEqualTo(
            new FeatureDescriptor(
                "off",
                "spanner.tuning.stream-end-guard.enabled=false",
                "spanner.tuning.stream-end-guard.enabled"));
  }

  @Test
  void aFeatureSwitchedOffAtRuntimeNamesNoProperty() {
    tuned("spanner", SpannerTuning.defaults(), 2);
    ClientDescriptor after =
        this.endpoint.switchFeature("spanner", "stream-end-guard", false, null);
    assertThat(after.features().get("stream-end-guard"))
        .isEqualTo(new FeatureDescriptor("off", "switched off at runtime", null));
  }

  @Test
  void switchingChangesTheClientAndLogsWhoDidIt(CapturedOutput output) {
    Spanner spanner = tuned("spanner", SpannerTuning.defaults(), 2);
    SpannerTuningState state = this.clients.get("spanner");
    this.endpoint.switchFeature("spanner", "stream-end-guard", false, () -> "alice");
    assertThat(state.feature(Feature.STREAM_END_GUARD).status()).isEqualTo(Status.OFF);
    pointSelects(spanner, 5);
    assertThat(GuardLine.closedAtLastCount(state)).isZero();
    this.endpoint.switchFeature("spanner", "stream-end-guard", true, null);
    pointSelects(spanner, 5);
    await().atMost(Duration.ofSeconds(10)).until(() -> GuardLine.closedAtLastCount(state) == 5);
    assertThat(output)
        .contains(
            "spanner-tuning: stream-end-guard switched off on Spanner client 'spanner' by alice"
                + " through the spannertuning endpoint (was "
                + (GuardLine.clientSkipsCancelAtLast() ? "native (" : "on)"))
        .contains(
            "spanner-tuning: stream-end-guard switched on on Spanner client 'spanner' by"
                + " anonymous through the spannertuning endpoint (was off (switched off at"
                + " runtime))");
  }

  @Test
  void anUnknownFeatureIsRefusedNamingTheSwitchableOnes() {
    tuned("spanner", SpannerTuning.defaults(), 2);
    assertThat(refusal("spanner", "turbo", true))
        .isEqualTo(
            "Unknown feature 'turbo'; features that can be switched:"
                + " single-use-distribution, transaction-routing, stream-end-guard, hedging");
  }

  @Test
  void grpcGcpIsRefusedBeforeTheClientIsAsked() {
    tuned("spanner", SpannerTuning.defaults(), 2);
    SpannerTuningState state = this.clients.get("spanner");
    assertThat(refusal("spanner", "grpc-gcp", false))
        .isEqualTo(
            "grpc-gcp is chosen when the channels are built and cannot be switched at"
                + " runtime; features that can be switched: single-use-distribution,"
                + " transaction-routing, stream-end-guard, hedging");
    assertThat(state.feature(Feature.GRPC_GCP).status()).isEqualTo(Status.NATIVE);
  }

  @Test
  void aFeatureTheClientCannotSwitchIsRefusedWithItsState() {
    tuned("spanner", SpannerTuning.newBuilder().grpcGcpExtension(false).build(), 2, true);
    assertThat(this.clients.get("spanner").feature(Feature.SINGLE_USE_DISTRIBUTION).status())
        .isEqualTo(Status.UNSUPPORTED);
    assertThat(refusal("spanner", "single-use-distribution", true))
        .startsWith("single-use-distribution cannot be switched on this client: it is unsupported");
  }

  @Test
  void singleUseDistributionOffWhenTheClientWasBuiltIsRefusedOnWhileTheGuardIsNot() {
    tuned(
        "spanner",
        SpannerTuning.newBuilder()
            .singleUseDistribution(false)
            .transactionRouting(false)
            .streamEndGuard(false)
            .build(),
        2);
    SpannerTuningState state = this.clients.get("spanner");
    assertThat(refusal("spanner", "single-use-distribution", true))
        .isEqualTo(
            "single-use-distribution cannot be switched on: routing and hedging were off when this"
                + " client was built, and the channel picker it needs is set up only then");
    assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status()).isEqualTo(Status.OFF);
    assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).byConfiguration()).isTrue();
    // The guard needs nothing set up when the client is built.
    ClientDescriptor after = this.endpoint.switchFeature("spanner", "stream-end-guard", true, null);
    assertThat(after.features().get("stream-end-guard").state())
        .isEqualTo(GuardLine.expectedName());
  }

  @Test
  void anUnknownClientIsRefused() {
    assertThat(refusal("nope", "stream-end-guard", true))
        .isEqualTo("Unknown Spanner client 'nope'");
  }

  /**
   * Over JMX, as Boot's {@code env} endpoint does with its values, {@code when-authorized} shows
   * the statements: JMX has no principal, and a JMX client is trusted.
   */
  @ParameterizedTest(name = "{0}")
  @CsvSource({"NEVER, false", "WHEN_AUTHORIZED, true", "ALWAYS, true"})
  void overJmxTheStatementIsShownUnlessNever(Show show, boolean shown) {
    SpannerTuningEndpoint endpoint =
        new SpannerTuningEndpoint(
            () -> new LinkedHashMap<>(this.clients), (name) -> Optional.empty(), show);
    hedgedQueries(tuned("spanner", SpannerTuning.newBuilder().hedging(true).build(), 2), 5);
    ShapeDescriptor shape = endpoint.client("spanner").hedging().shapes().get(0);
    assertThat(shape.shape())
        .isEqualTo("query " + StatementNormalizer.normalize(STATEMENT).fingerprint());
    assertThat(shape.statement()).isEqualTo(shown ? NORMALIZED : null);
    assertThat(endpoint.clients().clients().get("spanner").hedging().shapes().get(0).statement())
        .isEqualTo(shown ? NORMALIZED : null);
  }

  /**
   * Over HTTP, {@code when-authorized} shows the statements to a principal with one of the roles,
   * or to any principal when no role is configured, as Boot's {@code env} endpoint shows values.
   */
  @Test
  void overHttpWhenAuthorizedShowsTheStatementToAPrincipalWithARole() {
    hedgedQueries(tuned("spanner", SpannerTuning.newBuilder().hedging(true).build(), 2), 5);
    SecurityContext anonymous = SecurityContext.NONE;
    SecurityContext operator = user("olivia", "ops");
    SecurityContext developer = user("dave", "dev");
    SpannerTuningEndpointWebExtension anyUser =
        new SpannerTuningEndpointWebExtension(this.endpoint, Show.WHEN_AUTHORIZED, Set.of());
    SpannerTuningEndpointWebExtension operators =
        new SpannerTuningEndpointWebExtension(this.endpoint, Show.WHEN_AUTHORIZED, Set.of("ops"));
    assertThat(statement(anyUser, anonymous)).isNull();
    assertThat(statement(anyUser, developer)).isEqualTo(NORMALIZED);
    assertThat(statement(operators, developer)).isNull();
    assertThat(statement(operators, operator)).isEqualTo(NORMALIZED);
    assertThat(
            operators
                .clients(operator)
                .clients()
                .get("spanner")
                .hedging()
                .shapes()
                .get(0)
                .statement())
        .isEqualTo(NORMALIZED);
    assertThat(
            new SpannerTuningEndpointWebExtension(this.endpoint, Show.NEVER, Set.of("ops"))
                .client(operator, "spanner")
                .hedging()
                .shapes()
                .get(0)
                .statement())
        .isNull();
  }

  private static String statement(
      SpannerTuningEndpointWebExtension extension, SecurityContext securityContext) {
    return extension.client(securityContext, "spanner").hedging().shapes().get(0).statement();
  }

  private static SecurityContext user(String name, String role) {
    return new SecurityContext() {

      @Override
      public Principal getPrincipal() {
        return () -> name;
      }

      @Override
      public boolean isUserInRole(String asked) {
        return role.equals(asked);
      }
    };
  }

  private static void hedgedQueries(Spanner spanner, int count) {
    server
        .get()
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(STATEMENT), ResultSets.pointRow()));
    DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
    for (int i = 0; i < count; i++) {
      try (ResultSet rows = client.singleUse().executeQuery(Statement.of(STATEMENT))) {
        while (rows.next()) {
          // Read to the end.
        }
      }
    }
  }

  /** The reason the endpoint refuses this switch with. */
  private String refusal(String client, String feature, boolean enabled) {
    InvalidEndpointRequestException refused =
        catchThrowableOfType(
            InvalidEndpointRequestException.class,
            () -> this.endpoint.switchFeature(client, feature, enabled, null));
    assertThat(refused).as("the switch of %s on %s refused", feature, client).isNotNull();
    return refused.getReason();
  }

  private Spanner tuned(String name, SpannerTuning tuning, int channels) {
    return tuned(name, tuning, channels, false);
  }

  private Spanner tuned(String name, SpannerTuning tuning, int channels, boolean grpcGcpOff) {
    SpannerOptions.Builder builder = server.get().clientOptions(channels);
    if (grpcGcpOff) {
      builder.disableGrpcGcpExtension();
    }
    SpannerTuningState state = tuning.applyTo(builder);
    Spanner spanner = builder.build().getService();
    this.spanners.add(spanner);
    this.clients.put(name, state);
    return spanner;
  }

  private static void pointSelects(Spanner spanner, int count) {
    MockSpannerServer.pointSelects(spanner.getDatabaseClient(MockSpannerServer.DATABASE), count);
    // Closed on their last row, the point selects drain: counted when their trailers arrive.
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                SpannerTuning.stateOf(spanner.getOptions())
                    .orElseThrow()
                    .channelLoad()
                    .channels()
                    .stream()
                    .allMatch((channel) -> channel.activeStreams() == 0));
  }
}
