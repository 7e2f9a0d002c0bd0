package io.github.spannertuning.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.lang.reflect.Method;
import java.net.SocketAddress;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * OpenTelemetry for the trace tests: an SDK whose spans end in an in-memory exporter, as each span
 * ends, and the JVM-wide choice of OpenTelemetry traces for the Spanner client, made for a test
 * class and undone after it.
 *
 * <p>The client fixes that choice when the first {@code SpannerOptions} of the JVM are built, and
 * other test classes in the same JVM have built some: {@link #chooseOpenTelemetryTraces()} clears
 * it first through the client's package-private reset, which the client keeps for its own tests.
 */
public final class TracedClients implements AutoCloseable {

  public static final String QUERY = "CloudSpannerOperation.ExecuteStreamingQuery";

  public static final String UPDATE = "CloudSpannerOperation.ExecuteUpdate";

  public static final String COMMIT = "CloudSpannerOperation.Commit";

  public static final AttributeKey<Long> CHANNEL = AttributeKey.longKey("spanner_tuning.channel");

  public static final AttributeKey<String> ROUTE = AttributeKey.stringKey("spanner_tuning.route");

  public static final AttributeKey<String> STREAM_END =
      AttributeKey.stringKey("spanner_tuning.stream_end");

  public static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("spanner_tuning.attempt");

  public static final AttributeKey<Boolean> HEDGE_WON =
      AttributeKey.booleanKey("spanner_tuning.hedge.won");

  private final InMemorySpanExporter exporter = InMemorySpanExporter.create();

  private final SdkTracerProvider tracerProvider =
      SdkTracerProvider.builder()
          .addSpanProcessor(SimpleSpanProcessor.create(this.exporter))
          .build();

  private final OpenTelemetrySdk openTelemetry =
      OpenTelemetrySdk.builder().setTracerProvider(this.tracerProvider).build();

  /** The SDK, which is not registered as {@code GlobalOpenTelemetry}. */
  public OpenTelemetrySdk openTelemetry() {
    return this.openTelemetry;
  }

  public SdkTracerProvider tracerProvider() {
    return this.tracerProvider;
  }

  /** The spans that ended since the last {@link #clear()}, in the order they ended. */
  public List<SpanData> spans() {
    return this.exporter.getFinishedSpanItems();
  }

  /** The ended spans of this name, in the order they ended. */
  public List<SpanData> spans(String name) {
    return spans().stream().filter((span) -> span.getName().equals(name)).toList();
  }

  public void clear() {
    this.exporter.reset();
  }

  @Override
  public void close() {
    this.openTelemetry.close();
  }

  /** Chooses OpenTelemetry traces for the Spanner clients built from now on in this JVM. */
  public static void chooseOpenTelemetryTraces() {
    resetTracingChoice();
    SpannerOptions.enableOpenTelemetryTraces();
  }

  /** Undoes the choice: the next options built choose the client's default, OpenCensus. */
  public static void resetTracingChoice() {
    try {
      Method reset = SpannerOptions.class.getDeclaredMethod("resetActiveTracingFramework");
      reset.setAccessible(true);
      reset.invoke(null);
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException("SpannerOptions.resetActiveTracingFramework() is gone", ex);
    }
  }

  /**
   * Asserts that the channels the spans name and the connections the server saw the same calls on
   * (in the same order) are one to one, and returns how many channels they used.
   */
  public static int assertChannelsAreConnections(List<SpanData> spans, List<Call> calls) {
    assertThat(spans).as("spans, one per call the server saw").hasSameSizeAs(calls);
    Map<Long, Set<SocketAddress>> connectionsOf = new HashMap<>();
    Map<SocketAddress, Set<Long>> channelsOf = new HashMap<>();
    for (int i = 0; i < spans.size(); i++) {
      Long channel = spans.get(i).getAttributes().get(CHANNEL);
      assertThat(channel).as("spanner_tuning.channel of %s", spans.get(i)).isNotNull();
      SocketAddress connection = calls.get(i).connection();
      connectionsOf.computeIfAbsent(channel, (key) -> new HashSet<>()).add(connection);
      channelsOf.computeIfAbsent(connection, (key) -> new HashSet<>()).add(channel);
    }
    assertThat(connectionsOf.values())
        .as("connections per channel named on the spans: %s", connectionsOf)
        .allSatisfy((connections) -> assertThat(connections).hasSize(1));
    assertThat(channelsOf.values())
        .as("channels named per connection the server saw: %s", channelsOf)
        .allSatisfy((channels) -> assertThat(channels).hasSize(1));
    return connectionsOf.size();
  }
}
