package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.MethodDescriptor;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Channel meters of a real client against Google's mock Spanner server on loopback. */
class SpannerChannelMetricsTest {

  private static final int QUERIES = 500;

  @Test
  void tunedClientMetersMatchWhatTheServerSaw() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      AtomicInteger streamCancels = new AtomicInteger();
      SpannerOptions.Builder builder =
          server
              .clientOptions(8)
              .setInterceptorProvider(
                  SpannerInterceptorProvider.createDefault().with(countCancels(streamCancels)));
      SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
      MeterRegistry registry = new SimpleMeterRegistry();
      new SpannerChannelMetrics(state, "spanner", Tags.empty()).bindTo(registry);
      try (Spanner spanner = builder.build().getService()) {
        runConcurrentPointSelects(spanner, QUERIES);
        awaitIdle(registry);

        List<Double> perChannel = channelCalls(registry);
        long busyChannels = perChannel.stream().filter((calls) -> calls > 0).count();
        double sum = perChannel.stream().mapToDouble(Double::doubleValue).sum();
        double skipped = counter(registry, "spanner.tuning.stream.end.guard.skipped");
        double routed = counter(registry, "spanner.tuning.single.use.routed");
        System.out.printf(
            "[metrics %s] %d queries: channels with calls=%d, per-channel calls=%s (sum %.0f, server saw %d), routed=%.0f, guard skipped=%.0f, cancels sent=%d, imbalance=%.2f%n",
            state.versions().spanner(), QUERIES, busyChannels, perChannel, sum,
            server.calls().size(), routed, skipped, streamCancels.get(),
            gauge(registry, "spanner.tuning.channel.imbalance"));

        assertThat(busyChannels).isGreaterThanOrEqualTo(6);
        assertThat(sum).isEqualTo(server.calls().size());
        assertThat(gauge(registry, "spanner.tuning.channel.count")).isEqualTo(perChannel.size());
        if (state.feature(Feature.SINGLE_USE_DISTRIBUTION).status() == Status.ON) {
          assertThat(routed).isEqualTo(QUERIES);
        } else {
          // 6.119+: the client routes single-use reads itself; spanner-tuning routes none.
          assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
              .isEqualTo(Status.NATIVE);
          assertThat(routed).isZero();
        }
        // Every early-closed point select either had its cancel skipped or sent.
        assertThat(skipped).isPositive();
        assertThat(skipped + streamCancels.get()).isEqualTo(QUERIES);
        assertThat(skipped).isEqualTo(state.streamEndGuardSkippedCount());
        // The server marks each point select's only message last: closed on it, they drain.
        double drained = counter(registry, "spanner.tuning.stream.end.guard.drained");
        assertThat(drained).isPositive().isLessThanOrEqualTo(skipped);
        assertThat(drained).isEqualTo(state.streamEndGuardDrainedCount());
        assertThat(counter(registry, "spanner.tuning.stream.end.guard.drain.timeouts")).isZero();
      }
      assertThat(registry.find("spanner.tuning.channel.calls").meters())
          .as("meters of a closed client are removed")
          .isEmpty();
      assertThat(registry.find("spanner.tuning.channel.count").meters()).isEmpty();
    }
  }

  @Test
  void channelMetersCountWithTuningSwitchedOff() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      SpannerOptions.Builder builder = server.clientOptions(8);
      SpannerTuningState state =
          SpannerTuning.newBuilder()
              .singleUseDistribution(false)
              .streamEndGuard(false)
              .build()
              .applyTo(builder);
      MeterRegistry registry = new SimpleMeterRegistry();
      new SpannerChannelMetrics(state, "spanner", Tags.of("app", "test")).bindTo(registry);
      try (Spanner spanner = builder.build().getService()) {
        runConcurrentPointSelects(spanner, 200);
        awaitIdle(registry);
        double sum = channelCalls(registry).stream().mapToDouble(Double::doubleValue).sum();
        assertThat(sum).isEqualTo(server.calls().size());
        assertThat(counter(registry, "spanner.tuning.stream.end.guard.skipped")).isZero();
        assertThat(counter(registry, "spanner.tuning.single.use.routed")).isZero();
        assertThat(registry.get("spanner.tuning.channel.calls").tag("app", "test").meters())
            .isNotEmpty();
      }
    }
  }

  @Test
  void channelMetersCountGaxPoolChannelsToo() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      SpannerOptions.Builder builder = server.clientOptions(4).disableGrpcGcpExtension();
      SpannerTuningState state =
          SpannerTuning.newBuilder().grpcGcpExtension(false).build().applyTo(builder);
      MeterRegistry registry = new SimpleMeterRegistry();
      new SpannerChannelMetrics(state, "spanner", Tags.empty()).bindTo(registry);
      try (Spanner spanner = builder.build().getService()) {
        assertThat(state.poolKind()).isEqualTo("gax");
        runConcurrentPointSelects(spanner, 200);
        awaitIdle(registry);
        List<Double> perChannel = channelCalls(registry);
        System.out.printf(
            "[metrics %s] gax pool, 200 queries: per-channel calls=%s, server saw %d on %d connections%n",
            state.versions().spanner(), perChannel, server.calls().size(),
            server.connections().size());
        assertThat(perChannel).hasSize(server.connections().size()).hasSize(4);
        assertThat(perChannel.stream().mapToDouble(Double::doubleValue).sum())
            .isEqualTo(server.calls().size());
      }
    }
  }

  private static void runConcurrentPointSelects(Spanner spanner, int queries) throws Exception {
    DatabaseClient client =
        spanner.getDatabaseClient(DatabaseId.of("test-project", "test-instance", "test-db"));
    int threads = 50;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        futures.add(
            pool.submit(
                () -> {
                  start.await();
                  for (int i = 0; i < queries / threads; i++) {
                    try (ResultSet resultSet =
                        client
                            .singleUse()
                            .executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
                      assertThat(resultSet.next()).isTrue();
                    }
                  }
                  return null;
                }));
      }
      start.countDown();
      for (Future<?> future : futures) {
        future.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static void awaitIdle(MeterRegistry registry) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      double active =
          registry.find("spanner.tuning.channel.active.streams").gauges().stream()
              .mapToDouble(Gauge::value)
              .sum();
      if (active == 0) {
        return;
      }
      Thread.sleep(20);
    }
  }

  private static List<Double> channelCalls(MeterRegistry registry) {
    return registry.find("spanner.tuning.channel.calls").functionCounters().stream()
        .sorted((a, b) -> a.getId().getTag("channel").compareTo(b.getId().getTag("channel")))
        .map(FunctionCounter::count)
        .toList();
  }

  private static double counter(MeterRegistry registry, String name) {
    return registry.get(name).tag("client", "spanner").functionCounter().count();
  }

  private static double gauge(MeterRegistry registry, String name) {
    return registry.get(name).tag("client", "spanner").gauge().value();
  }

  private static ClientInterceptor countCancels(AtomicInteger cancels) {
    return new ClientInterceptor() {
      @Override
      public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
          MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
        ClientCall<ReqT, RespT> call = next.newCall(method, callOptions);
        if (!method.getBareMethodName().equals("ExecuteStreamingSql")) {
          return call;
        }
        return new SimpleForwardingClientCall<>(call) {
          @Override
          public void cancel(String message, Throwable cause) {
            cancels.incrementAndGet();
            super.cancel(message, cause);
          }
        };
      }
    };
  }
}
