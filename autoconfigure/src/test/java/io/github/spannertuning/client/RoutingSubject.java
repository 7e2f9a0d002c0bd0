package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.grpc.GcpManagedChannelOptions.GcpChannelPoolOptions;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.grpc.Status;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A client with its own production-like mock server ({@link MockSpannerServer#start()}: 2 to 5 ms
 * per data-plane call, scheduled without holding a thread, {@code last} on the final message,
 * trailers 1 ms later): stock, or tuned with {@link SpannerTuning#defaults()}, whose state is
 * asserted against the one the build expects before anything else.
 */
final class RoutingSubject implements AutoCloseable {

  static final String EXPECTED_PROPERTY = "spanner-tuning.expected.single-use-distribution";

  static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  static final int CHANNELS = 8;

  static final String VERSION = ClientVersions.detected().spanner();

  static final String UPDATE = "UPDATE Singers SET name = 'Bob' WHERE id = 1";

  /** Rejected by the server: as a transaction's first statement it forces an explicit begin. */
  static final String INVALID_UPDATE = "UPDATE Singers SET nope = 1 WHERE id = 1";

  static final String TABLE = "Singers";

  static final KeySet READ_KEYS = KeySet.all();

  static final List<String> READ_COLUMNS = List.of("id", "name");

  static final String STREAMING_SQL = "ExecuteStreamingSql";

  /** The state of single-use distribution the build expects on this client line. */
  static FeatureState.Status expected() {
    String property = System.getProperty(EXPECTED_PROPERTY);
    assertThat(property)
        .as("system property %s, set by the build profile (on or native)", EXPECTED_PROPERTY)
        .isIn("on", "native");
    return FeatureState.Status.valueOf(property.toUpperCase(Locale.ROOT));
  }

  static boolean routes() {
    return expected() == FeatureState.Status.ON;
  }

  /** What a workload returned, and how many single-use reads spanner-tuning routed in it. */
  record Result<T>(T value, long routed) {}

  final MockSpannerServer server;

  final Spanner spanner;

  final DatabaseClient client;

  final SpannerTuningState state;

  private RoutingSubject(MockSpannerServer server, Spanner spanner, SpannerTuningState state) {
    this.server = server;
    this.spanner = spanner;
    this.client = spanner.getDatabaseClient(DATABASE);
    this.state = state;
  }

  static RoutingSubject open(boolean tuned) throws Exception {
    return open(results(MockSpannerServer.start()), tuned, RoutingSubject::expected);
  }

  /** The server, answering the statements and read the routing workloads make. */
  static MockSpannerServer results(MockSpannerServer server) {
    server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
    server
        .mock()
        .putStatementResult(
            StatementResult.exception(
                Statement.of(INVALID_UPDATE),
                Status.INVALID_ARGUMENT.withDescription("no column nope").asRuntimeException()));
    server
        .mock()
        .putStatementResult(
            StatementResult.read(TABLE, READ_KEYS, READ_COLUMNS, ResultSets.pointRow()));
    return server;
  }

  /**
   * A client of {@code server}, which closes with it: stock, or tuned with {@link
   * SpannerTuning#defaults()}, whose single-use distribution is asserted to be the state {@code
   * expected} gives.
   */
  static RoutingSubject open(
      MockSpannerServer server, boolean tuned, Supplier<FeatureState.Status> expected)
      throws Exception {
    try {
      SpannerOptions.Builder builder = server.clientOptions(CHANNELS);
      SpannerTuningState state = tuned ? SpannerTuning.defaults().applyTo(builder) : null;
      Spanner spanner = builder.build().getService();
      if (tuned) {
        // The state is final once the client's rpc exists, which getService() creates.
        assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
            .as("tuned client's single-use distribution (%s)", state)
            .isEqualTo(expected.get());
      }
      return new RoutingSubject(server, spanner, state);
    } catch (Exception | AssertionError ex) {
      server.close();
      throw ex;
    }
  }

  /** A client already built on {@code server}, which closes with it. */
  static RoutingSubject of(MockSpannerServer server, Spanner spanner, SpannerTuningState state) {
    return new RoutingSubject(server, spanner, state);
  }

  /**
   * A client of {@code server} on grpc-gcp's dynamic pool with these options, which closes with it:
   * stock, or tuned with {@link SpannerTuning#defaults()}, whose single-use distribution is
   * asserted on, as the lines this runs on have it ({@link
   * io.github.spannertuning.testing.DynamicPoolLine}).
   */
  static RoutingSubject openDynamic(
      MockSpannerServer server, boolean tuned, GcpChannelPoolOptions pool) throws Exception {
    try {
      SpannerOptions.Builder builder = server.dynamicPoolOptions(pool);
      SpannerTuningState state = tuned ? SpannerTuning.defaults().applyTo(builder) : null;
      Spanner spanner = builder.build().getService();
      if (tuned) {
        assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
            .as("tuned client's single-use distribution on the dynamic pool (%s)", state)
            .isEqualTo(FeatureState.Status.ON);
        assertThat(state.isPoolDynamic()).isTrue();
      }
      return new RoutingSubject(server, spanner, state);
    } catch (Exception | AssertionError ex) {
      server.close();
      throw ex;
    }
  }

  void pointSelect() {
    try (ResultSet rs = this.client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      assertThat(rs.next()).as("point select returns its row").isTrue();
    }
  }

  @Override
  public void close() throws Exception {
    this.server.closeAfter(this.spanner);
  }

  /** Runs a workload on a fresh stock client and closes it. */
  static <T> T measure(boolean tuned, Function<RoutingSubject, T> workload) throws Exception {
    try (RoutingSubject subject = RoutingSubject.open(tuned)) {
      return workload.apply(subject);
    }
  }

  /** Runs a workload on a fresh tuned client, whose state is asserted first, and closes it. */
  static <T> RoutingSubject.Result<T> measureTuned(Function<RoutingSubject, T> workload)
      throws Exception {
    try (RoutingSubject subject = RoutingSubject.open(true)) {
      T value = workload.apply(subject);
      return new RoutingSubject.Result<>(value, subject.state.singleUseRoutedCount());
    }
  }

  static void drain(ResultSet rs) {
    int rows = 0;
    while (rs.next()) {
      rows++;
    }
    assertThat(rows).as("rows").isEqualTo(1);
  }
}
