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

/** A real Spanner client of the frontend, configured as one variant. */
final class BenchClient implements AutoCloseable {

  private static final Statement POINT_SELECT = Statement.of(MockSpannerServer.POINT_SELECT);

  private final Variant variant;

  private final Spanner spanner;

  private final DatabaseClient database;

  private final SpannerTuningState state;

  private final Context context;

  private BenchClient(Variant variant, Spanner spanner, SpannerTuningState state) {
    this.variant = variant;
    this.spanner = spanner;
    this.database =
        spanner.getDatabaseClient(DatabaseId.of("bench-project", "bench-instance", "bench-db"));
    this.state = state;
    this.context = variant.context();
  }

  static BenchClient open(Variant variant, int port, int channels) {
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("bench-project")
            .setHost("http://127.0.0.1:" + port)
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .setNumChannels(channels);
    SpannerTuningState state = variant.configure(builder);
    return new BenchClient(variant, builder.build().getService(), state);
  }

  Variant variant() {
    return this.variant;
  }

  /** The point-select shape: single-use query, one {@code next()}, close. */
  void pointSelect() {
    if (this.context == null) {
      query();
      return;
    }
    Context previous = this.context.attach();
    try {
      query();
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
