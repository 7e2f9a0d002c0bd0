package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import io.github.spannertuning.testing.MockSpannerServer;
import java.time.Duration;

/** A client of the mock server with the guard on or off, and a cancel counter below grpc-gcp. */
record GuardedTestClient(
    Spanner spanner, DatabaseClient database, SpannerTuningState state, CancelCounter counter)
    implements AutoCloseable {

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  static GuardedTestClient open(MockSpannerServer server, boolean guard) {
    return open(server, guard, SpannerTuning.DEFAULT_DRAIN_TIMEOUT);
  }

  static GuardedTestClient open(MockSpannerServer server, boolean guard, Duration drainTimeout) {
    return open(
        server,
        8,
        SpannerTuning.newBuilder().streamEndGuard(guard).streamEndGuardDrainTimeout(drainTimeout),
        guard);
  }

  /**
   * A client of {@code channels} channels tuned as {@code tuning} says, whose guard is asserted to
   * be active or not as {@code guard} says before the client is built.
   */
  static GuardedTestClient open(
      MockSpannerServer server, int channels, SpannerTuning.Builder tuning, boolean guard) {
    CancelCounter counter = new CancelCounter();
    SpannerOptions.Builder builder = server.clientOptions(channels);
    builder.setInterceptorProvider(SpannerInterceptorProvider.createDefault().with(counter));
    SpannerTuningState state = tuning.build().applyTo(builder);
    assertThat(state.isActive(Feature.STREAM_END_GUARD)).isEqualTo(guard);
    Spanner spanner = builder.build().getService();
    return new GuardedTestClient(spanner, spanner.getDatabaseClient(DATABASE), state, counter);
  }

  @Override
  public void close() {
    this.spanner.close();
  }
}
