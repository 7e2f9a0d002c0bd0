package io.github.spannertuning.client;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.protobuf.ByteString;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.routing.HedgeDelay;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Method;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the trace attributes add to a routed, guarded point select (ns/op, and B/op with {@code
 * -prof gc}), on the real classes: {@code TunedSpannerRpc}'s stream path picks the channel and puts
 * the guard on, the gRPC call is made through the real counting interceptor on a stand-in channel,
 * the row marked {@code last} arrives, the application closes, the trailers come. Each query runs
 * in a span of its own, started, made current and ended as the client does its {@code
 * ExecuteStreamingQuery} span, with the client's five attributes, by an OpenTelemetry SDK that
 * exports nowhere; that span costs the same whether the client traces or not.
 *
 * <ul>
 *   <li>{@code tracing=off}: a client that does not trace (built with no OpenTelemetry that
 *       records): what every call pays for the feature being there. Run it on the code before the
 *       feature too, for the cost of the check itself.
 *   <li>{@code tracing=on}: a client that traces: route, channel and stream end are set on the
 *       query's span.
 *   <li>{@code sampled=false}: the query's span dropped by the sampler, as most are under Boot's
 *       default sampling probability (0.1); a traced client then sets nothing.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(org.openjdk.jmh.annotations.Scope.Thread)
public class TraceAttributesBenchmark {

  private static final MethodDescriptor<?, ?> METHOD = SpannerGrpc.getExecuteStreamingSqlMethod();

  private static final Metadata HEADERS = new Metadata();

  private static final PartialResultSet LAST_ROW =
      PartialResultSet.newBuilder()
          .setLast(true)
          .setResumeToken(ByteString.copyFromUtf8("r"))
          .build();

  private static final String QUERY = "CloudSpannerOperation.ExecuteStreamingQuery";

  /** What the client puts on every span: its version, its repository, the database, the thread. */
  private static final Attributes CLIENT_ATTRIBUTES =
      Attributes.builder()
          .put("gcp.client.service", "spanner")
          .put("gcp.client.version", "6.119.0")
          .put("gcp.client.repo", "googleapis/java-spanner")
          .put("db.name", "projects/p/instances/i/databases/d")
          .put("thread.name", "main")
          .build();

  /** {@code TunedSpannerRpc.stream(route, shape, consumer, options, starter)}, private. */
  private static final MethodHandle STREAM = streamMethod();

  @Param({"off", "on"})
  public String tracing;

  @Param({"true", "false"})
  public boolean sampled;

  private TunedSpannerRpc rpc;

  private SdkTracerProvider tracerProvider;

  private Tracer tracer;

  private final RecordingChannel below = new RecordingChannel();

  private Channel counted;

  private final Map<Option, Object> options = new EnumMap<>(Option.class);

  private final NoopConsumer consumer = new NoopConsumer();

  private GuardedStream.Starter starter;

  @Setup(Level.Trial)
  public void setUp() {
    this.tracerProvider =
        SdkTracerProvider.builder()
            .setSampler(this.sampled ? Sampler.alwaysOn() : Sampler.alwaysOff())
            .build();
    this.tracer = this.tracerProvider.get("bench");
    OpenTelemetry openTelemetry = OpenTelemetry.noop();
    if (this.tracing.equals("on")) {
      SpannerOptions.enableOpenTelemetryTraces();
      openTelemetry = OpenTelemetrySdk.builder().setTracerProvider(this.tracerProvider).build();
    }
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("bench-project")
            .setHost("http://127.0.0.1:1")
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .setOpenTelemetry(openTelemetry);
    SpannerTuningState state =
        SpannerTuning.newBuilder().logWhenBuilt(false).build().applyTo(builder);
    this.rpc = (TunedSpannerRpc) new TunedSpannerRpcFactory(state).create(builder.build());
    if (state.traced() != this.tracing.equals("on")) {
      throw new IllegalStateException("tracing=" + this.tracing + " but traced=" + state.traced());
    }
    ClientInterceptor interceptor = state.channelLoad().interceptor();
    this.counted =
        new Channel() {
          @Override
          public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
              MethodDescriptor<ReqT, RespT> method, CallOptions callOptions) {
            return interceptor.interceptCall(
                method, callOptions, TraceAttributesBenchmark.this.below);
          }

          @Override
          public String authority() {
            return "127.0.0.1:1";
          }
        };
    // gax makes the stream's gRPC call on the calling thread, below grpc-gcp.
    this.starter =
        (target, callOptions) -> {
          @SuppressWarnings("unchecked")
          ClientCall<Object, Object> call =
              (ClientCall<Object, Object>) this.counted.newCall(METHOD, CallOptions.DEFAULT);
          call.start(new ClientCall.Listener<>() {}, HEADERS);
          return NoopCall.INSTANCE;
        };
    // The client passes a channel hint with every query.
    this.options.put(Option.CHANNEL_HINT, 3L);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    this.rpc.shutdownNow();
    this.tracerProvider.close();
  }

  /** A single-use point select: routed, guarded, closed on its row marked last. */
  @Benchmark
  public Object pointSelect() throws Throwable {
    // The client's span of the query, current while it makes the call and closes it.
    Span span = this.tracer.spanBuilder(QUERY).setAllAttributes(CLIENT_ATTRIBUTES).startSpan();
    StreamingCall call;
    try (Scope scope = span.makeCurrent()) {
      call =
          (StreamingCall)
              STREAM.invokeExact(
                  this.rpc,
                  TunedSpannerRpc.Route.SINGLE_USE,
                  (HedgeDelay.Shape) null,
                  (ResultStreamConsumer) this.consumer,
                  (Map<Option, ?>) this.options,
                  this.starter);
      ResultStreamConsumer guarded = (ResultStreamConsumer) call;
      call.request(1);
      guarded.onPartialResultSet(LAST_ROW);
      call.cancel("closed");
    } finally {
      span.end();
    }
    this.below.trailers();
    return call;
  }

  private static MethodHandle streamMethod() {
    try {
      Method stream =
          TunedSpannerRpc.class.getDeclaredMethod(
              "stream",
              TunedSpannerRpc.Route.class,
              HedgeDelay.Shape.class,
              ResultStreamConsumer.class,
              Map.class,
              GuardedStream.Starter.class);
      stream.setAccessible(true);
      return MethodHandles.lookup().unreflect(stream);
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException(
          "TunedSpannerRpc.stream(...) changed its signature: update this benchmark", ex);
    }
  }

  /** The client's consumer, reduced to nothing. */
  private static final class NoopConsumer implements ResultStreamConsumer {

    @Override
    public void onPartialResultSet(PartialResultSet results) {}

    @Override
    public void onCompleted() {}

    @Override
    public void onError(SpannerException e) {}

    @Override
    public boolean cancelQueryWhenClientIsClosed() {
      return false;
    }
  }

  /** The stream gax would return, reduced to nothing. */
  private static final class NoopCall implements StreamingCall {

    static final NoopCall INSTANCE = new NoopCall();

    @Override
    public ApiCallContext getCallContext() {
      return null;
    }

    @Override
    public void request(int numMessages) {}

    @Override
    public void cancel(String message) {}
  }

  /** The sub-channel, reduced to keeping the last call's listener, to send its trailers. */
  private static final class RecordingChannel extends Channel {

    private RecordingCall last;

    @Override
    @SuppressWarnings("unchecked")
    public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
        MethodDescriptor<ReqT, RespT> method, CallOptions callOptions) {
      this.last = new RecordingCall();
      return (ClientCall<ReqT, RespT>) this.last;
    }

    void trailers() {
      RecordingCall call = this.last;
      this.last = null;
      call.listener.onClose(Status.OK, HEADERS);
    }

    @Override
    public String authority() {
      return "127.0.0.1:1";
    }
  }

  private static final class RecordingCall extends ClientCall<Object, Object> {

    private Listener<Object> listener;

    @Override
    public void start(Listener<Object> listener, Metadata headers) {
      this.listener = listener;
    }

    @Override
    public void request(int numMessages) {}

    @Override
    public void cancel(String message, Throwable cause) {}

    @Override
    public void halfClose() {}

    @Override
    public void sendMessage(Object message) {}
  }
}
