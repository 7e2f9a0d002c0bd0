package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.Loops;
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
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Channel meters of a real client against Google's mock Spanner server on loopback. */
class SpannerChannelMetricsTest {

  private static final String EXPECTED_PROPERTY = "spanner-tuning.expected.single-use-distribution";

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
        String figures =
            String.format(
                Locale.ROOT,
                "%d queries: per-channel calls %s (server saw %d), routed %.0f, guard skipped %.0f,"
                    + " cancels sent %d",
                QUERIES,
                perChannel,
                server.calls().size(),
                routed,
                skipped,
                streamCancels.get());

        assertThat(busyChannels).as("channels with calls: " + figures).isGreaterThanOrEqualTo(6);
        assertThat(sum).as("calls counted: " + figures).isEqualTo(server.calls().size());
        assertThat(gauge(registry, "spanner.tuning.channel.count")).isEqualTo(perChannel.size());
        // Pinned by the build: what this client line's single-use distribution must be.
        Status expected = expectedSingleUseDistribution();
        assertThat(state.feature(Feature.SINGLE_USE_DISTRIBUTION).status())
            .as("single-use distribution on client %s", state.versions().spanner())
            .isEqualTo(expected);
        assertThat(routed)
            .as("single-use reads routed by spanner-tuning: " + figures)
            .isEqualTo((expected == Status.ON) ? QUERIES : 0);
        assertThat(skipped).isEqualTo(state.streamEndGuardSkippedCount());
        // The server marks each point select's only message last: closed on it, they drain.
        double drained = counter(registry, "spanner.tuning.stream.end.guard.drained");
        assertThat(drained).isPositive().isEqualTo(state.streamEndGuardDrainedCount());
        if (GuardLine.clientSkipsCancelAtLast()) {
          // The client sends no cancel after last itself: none to skip, each select drained.
          assertThat(skipped).as("skipped: " + figures).isZero();
          assertThat(drained + streamCancels.get()).as(figures).isEqualTo(QUERIES);
        } else {
          // Every early-closed point select either had its cancel skipped or sent.
          assertThat(skipped).isPositive();
          assertThat(skipped + streamCancels.get()).isEqualTo(QUERIES);
          assertThat(drained).isLessThanOrEqualTo(skipped);
        }
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
        assertThat(perChannel)
            .as(
                "per-channel calls of the gax pool (server saw %d calls on %d connections)",
                server.calls().size(), server.connections().size())
            .hasSize(server.connections().size())
            .hasSize(4);
        assertThat(perChannel.stream().mapToDouble(Double::doubleValue).sum())
            .isEqualTo(server.calls().size());
      }
    }
  }

  private static void runConcurrentPointSelects(Spanner spanner, int queries) {
    DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
    int threads = 50;
    Loops.together(
        threads, queries / threads, (thread, i) -> MockSpannerServer.pointSelects(client, 1));
  }

  /** The build's system property for this client line: {@code on} or {@code native}. */
  private static Status expectedSingleUseDistribution() {
    String property = System.getProperty(EXPECTED_PROPERTY);
    assertThat(property)
        .as("system property %s, set by the build profile (on or native)", EXPECTED_PROPERTY)
        .isIn("on", "native");
    return Status.valueOf(property.toUpperCase(Locale.ROOT));
  }

  private static void awaitIdle(MeterRegistry registry) {
    await("active streams back to 0")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(20))
        .until(
            () ->
                registry.find("spanner.tuning.channel.active.streams").gauges().stream()
                    .mapToDouble(Gauge::value)
                    .sum(),
            (active) -> active == 0);
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
