package io.github.spannertuning.benchmarks;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.client.ChannelLoad;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.Context;
import io.grpc.ManagedChannelBuilder;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/** A real Spanner client of the frontend, configured as one variant. */
final class BenchClient implements AutoCloseable {

  private static final Statement POINT_SELECT = Statement.of(MockSpannerServer.POINT_SELECT);

  private final Variant variant;

  private final Spanner spanner;

  private final DatabaseClient database;

  private final SpannerTuningState state;

  private final Context context;

  /** Each query's deadline, 0 for the client's own. */
  private final long deadlineNanos;

  /** Fires the deadlines of every client's queries. */
  private static final ScheduledExecutorService deadlines =
      Executors.newSingleThreadScheduledExecutor(
          (task) -> {
            Thread thread = new Thread(task, "bench-deadlines");
            thread.setDaemon(true);
            return thread;
          });

  private BenchClient(
      Variant variant, Spanner spanner, SpannerTuningState state, long deadlineMillis) {
    this.variant = variant;
    this.spanner = spanner;
    this.database =
        spanner.getDatabaseClient(DatabaseId.of("bench-project", "bench-instance", "bench-db"));
    this.state = state;
    this.context = variant.context();
    this.deadlineNanos = TimeUnit.MILLISECONDS.toNanos(deadlineMillis);
  }

  static BenchClient open(Variant variant, int port, int channels) {
    return open(variant, port, channels, 0);
  }

  /** A client whose queries each have the given deadline (0 for the client's own). */
  static BenchClient open(Variant variant, int port, int channels, long deadlineMillis) {
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("bench-project")
            .setHost("http://127.0.0.1:" + port)
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .setNumChannels(channels);
    SpannerTuningState state = variant.configure(builder);
    return new BenchClient(variant, builder.build().getService(), state, deadlineMillis);
  }

  Variant variant() {
    return this.variant;
  }

  /** The point-select shape: single-use query, one {@code next()}, close. */
  void pointSelect() {
    if (this.context == null && this.deadlineNanos == 0) {
      query();
      return;
    }
    Context base = (this.context != null) ? this.context : Context.current();
    if (this.deadlineNanos == 0) {
      queryIn(base);
      return;
    }
    // Not cancelled when the query is done: that would cancel a stream the guard is still
    // draining, sending the reset the guard saves. The context ends at its deadline.
    queryIn(base.withDeadlineAfter(this.deadlineNanos, TimeUnit.NANOSECONDS, deadlines));
  }

  private void queryIn(Context context) {
    Context previous = context.attach();
    try {
      query();
    } finally {
      context.detach(previous);
    }
  }

  private void query() {
    try (ResultSet rows = this.database.singleUse().executeQuery(POINT_SELECT)) {
      if (!rows.next()) {
        throw new IllegalStateException("the point select returned no row");
      }
    }
  }

  /** Closes at {@code last} the guard cancelled instead of drained; 0 for the stock client. */
  long cancelledAtLimit() {
    return (this.state == null) ? 0 : this.state.streamEndGuardCancelledAtLimitCount();
  }

  /** Calls per sub-channel as the starter counts them; empty for the stock client. */
  long[] clientChannelCalls() {
    if (this.state == null) {
      return new long[0];
    }
    List<ChannelLoad.ChannelStats> channels = this.state.channelLoad().channels();
    long[] calls = new long[channels.size()];
    for (ChannelLoad.ChannelStats channel : channels) {
      calls[channel.index()] = channel.calls();
    }
    return calls;
  }

  @Override
  public void close() {
    this.spanner.close();
  }
}
