package io.github.spannertuning.benchmarks;

import com.google.api.gax.grpc.GrpcCallContext;
import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.SpannerOptions.CallContextConfigurator;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.Context;
import io.grpc.ManagedChannelBuilder;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.List;

/**
 * A real Spanner client of the frontend, configured as one variant: the client's own API, or
 * Google's JDBC driver over it ({@link JdbcPointSelects}).
 */
final class BenchClient implements AutoCloseable {

  private static final Statement POINT_SELECT = Statement.of(MockSpannerServer.POINT_SELECT);

  private static final Statement REPORT = Statement.of(MockSpannerServer.REPORT);

  private final Variant variant;

  /** The client's own API; {@code null} when the queries go through the JDBC driver. */
  private final Spanner spanner;

  private final DatabaseClient database;

  /** The JDBC driver's client; {@code null} for the client's own API. */
  private final JdbcPointSelects jdbc;

  private final SpannerTuningState state;

  /** The context each query runs in; {@code null} for the thread's own. */
  private final Context context;

  /** {@link System#nanoTime()} as the client's build started. */
  private final long buildStartNanos;

  private BenchClient(
      Variant variant,
      Spanner spanner,
      SpannerTuningState state,
      long deadlineMillis,
      long buildStartNanos) {
    this.variant = variant;
    this.buildStartNanos = buildStartNanos;
    this.spanner = spanner;
    this.database =
        spanner.getDatabaseClient(DatabaseId.of("bench-project", "bench-instance", "bench-db"));
    this.jdbc = null;
    this.state = state;
    this.context =
        (deadlineMillis == 0) ? variant.context() : withDeadline(variant, deadlineMillis);
  }

  private BenchClient(Variant variant, JdbcPointSelects jdbc, long buildStartNanos) {
    this.variant = variant;
    this.buildStartNanos = buildStartNanos;
    this.spanner = null;
    this.database = null;
    this.jdbc = jdbc;
    this.state = jdbc.state();
    this.context = null;
  }

  /**
   * The variant's context with each query's deadline on its call, as a per-call timeout would: the
   * timer ends with the call. A deadline on the context instead would outlive the query, since
   * cancelling that context when the query is done would cancel a stream the guard still drains.
   */
  private static Context withDeadline(Variant variant, long deadlineMillis) {
    Context base = (variant.context() != null) ? variant.context() : Context.ROOT;
    CallContextConfigurator deadline =
        new QueryDeadline(
            SpannerOptions.CALL_CONTEXT_CONFIGURATOR_KEY.get(base),
            Duration.ofMillis(deadlineMillis));
    return base.withValue(SpannerOptions.CALL_CONTEXT_CONFIGURATOR_KEY, deadline);
  }

  static BenchClient open(Variant variant, int port, ClientPool pool) {
    return open(variant, port, pool, 0);
  }

  /** A client whose queries each have the given deadline (0 for the client's own). */
  static BenchClient open(Variant variant, int port, ClientPool pool, long deadlineMillis) {
    long started = System.nanoTime();
    SpannerOptions.Builder builder = options(port, pool);
    SpannerTuningState state = variant.configure(builder);
    return new BenchClient(variant, builder.build().getService(), state, deadlineMillis, started);
  }

  /**
   * A tuned client with this tuning instead of {@code SpannerTuning.defaults()}: for a run that
   * needs a setting other than the default, such as a shorter drain timeout for an experiment's
   * slices.
   */
  static BenchClient tuned(SpannerTuning tuning, int port, int channels) {
    long started = System.nanoTime();
    SpannerOptions.Builder builder = options(port, ClientPool.fixed(channels));
    SpannerTuningState state = tuning.applyTo(builder);
    return new BenchClient(Variant.TUNED, builder.build().getService(), state, 0, started);
  }

  private static SpannerOptions.Builder options(int port, ClientPool pool) {
    return pool.apply(
        SpannerOptions.newBuilder()
            .setProjectId("bench-project")
            .setHost("http://127.0.0.1:" + port)
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance()));
  }

  /**
   * A client whose point selects go through Google's JDBC driver, each thread on its own
   * connection; stock and tuned only, with the client's own deadline.
   */
  static BenchClient openJdbc(Variant variant, int port, int channels, long deadlineMillis) {
    if (deadlineMillis != 0) {
      throw new IllegalArgumentException("The JDBC workload takes no per-query deadline");
    }
    long started = System.nanoTime();
    return new BenchClient(variant, JdbcPointSelects.open(variant, port, channels), started);
  }

  /** The client for the workload: the client's own API, or the JDBC driver (on a fixed pool). */
  static BenchClient open(Workload workload, Variant variant, int port, ClientPool pool) {
    return workload.jdbc()
        ? openJdbc(variant, port, pool.channels(), workload.deadlineMs())
        : open(variant, port, pool, workload.deadlineMs());
  }

  /**
   * Readies the calling thread before a window: opens its JDBC connection, as a connection pool has
   * its connections open before the traffic comes; nothing for the client's own API.
   */
  void prepareThread() {
    if (this.jdbc != null) {
      this.jdbc.connection();
    }
  }

  Variant variant() {
    return this.variant;
  }

  /**
   * {@link System#nanoTime()} as the client's build started: before its options, so that its build,
   * its database client's (which starts its first session) and a wait for its warm-up all count
   * from here.
   */
  long buildStartNanos() {
    return this.buildStartNanos;
  }

  /** The starter's state of this client; {@code null} for the stock client. */
  SpannerTuningState state() {
    return this.state;
  }

  /**
   * The point-select shape: single-use query, one {@code next()}, close; through the JDBC driver,
   * an autocommit query on the thread's connection.
   */
  void pointSelect() {
    if (this.jdbc != null) {
      this.jdbc.pointSelect();
      return;
    }
    inContext(this::query);
  }

  /**
   * The report shape of a mixed workload: single-use query of {@link MockSpannerServer#REPORT}, its
   * rows read to the end, close. The client's own API only.
   */
  void report() {
    if (this.jdbc != null) {
      throw new UnsupportedOperationException("The JDBC workload sends point selects only");
    }
    inContext(this::readReport);
  }

  private void inContext(Runnable query) {
    if (this.context == null) {
      query.run();
      return;
    }
    Context previous = this.context.attach();
    try {
      query.run();
    } finally {
      this.context.detach(previous);
    }
  }

  private void query() {
    try (ResultSet rows = this.database.singleUse().executeQuery(POINT_SELECT)) {
      if (!rows.next()) {
        throw new IllegalStateException("the point select returned no row");
      }
    }
  }

  private void readReport() {
    try (ResultSet rows = this.database.singleUse().executeQuery(REPORT)) {
      if (!rows.next()) {
        throw new IllegalStateException("the report returned no row");
      }
      while (rows.next()) {
        // A report is read to its end.
      }
    }
  }

  /** Closes at {@code last} the guard cancelled instead of drained; 0 for the stock client. */
  long cancelledAtLimit() {
    return (this.state == null) ? 0 : this.state.streamEndGuardCancelledAtLimitCount();
  }

  /**
   * The starter's hedge counts so far: sent, won, denied, losers cancelled; {@code null} for a
   * variant that does not hedge.
   */
  long[] hedges() {
    if (this.state == null || !this.variant.hedges()) {
      return null;
    }
    return new long[] {
      this.state.hedging().sent(),
      this.state.hedging().won(),
      this.state.hedging().denied(),
      this.state.hedging().losersCancelled()
    };
  }

  /** Calls per sub-channel as the starter counts them; empty for the stock client. */
  long[] clientChannelCalls() {
    if (this.state == null) {
      return new long[0];
    }
    List<ChannelLoad.ChannelStats> channels = this.state.channelLoad().channels();
    // A dynamic pool's channels keep the index they were first found at while others leave.
    int size = channels.stream().mapToInt((channel) -> channel.index() + 1).max().orElse(0);
    long[] calls = new long[size];
    for (ChannelLoad.ChannelStats channel : channels) {
      calls[channel.index()] = channel.calls();
    }
    return calls;
  }

  /** The channels the client's grpc-gcp pool has now; the client's own API only. */
  int poolSize() {
    return ClientPool.size(this.spanner);
  }

  /**
   * Whether the starter's routing follows the client's dynamic pool; false for the stock client.
   */
  boolean routesOnDynamicPool() {
    return this.state != null && this.state.channelLoad().isDynamic();
  }

  @Override
  public void close() {
    if (this.jdbc != null) {
      this.jdbc.close();
    } else {
      this.spanner.close();
    }
  }

  /**
   * Sets a timeout on each streaming query, after whatever the variant's own configurator sets. The
   * returned context is merged into the client's: merging replaces the call options (so the
   * client's are carried over) and appends headers (so none are carried).
   */
  private record QueryDeadline(CallContextConfigurator next, Duration timeout)
      implements CallContextConfigurator {

    @Override
    public <ReqT, RespT> ApiCallContext configure(
        ApiCallContext context, ReqT request, MethodDescriptor<ReqT, RespT> method) {
      ApiCallContext configured =
          (this.next != null) ? this.next.configure(context, request, method) : null;
      if (!method.getBareMethodName().equals("ExecuteStreamingSql")) {
        return configured;
      }
      GrpcCallContext call =
          (configured != null)
              ? (GrpcCallContext) configured
              : GrpcCallContext.createDefault()
                  .withCallOptions(((GrpcCallContext) context).getCallOptions());
      return call.withTimeoutDuration(this.timeout);
    }
  }
}
