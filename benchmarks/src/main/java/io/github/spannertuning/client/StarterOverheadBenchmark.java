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
import com.google.spanner.v1.TransactionOptions;
import com.google.spanner.v1.TransactionSelector;
import io.github.spannertuning.routing.HedgeDelay;
import io.grpc.ManagedChannelBuilder;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
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
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What spanner-tuning's stream path adds to each query, measured on its real classes (this class
 * sits in their package, inside the benchmarks module, to reach them): ns/op, and B/op with {@code
 * -prof gc}. {@code streamTuned} runs {@code TunedSpannerRpc}'s stream path (request
 * classification, routing, the guard's wrapper) for one query: start, the row marked {@code last},
 * the end and the close, in either order. {@code streamStock} is the same sequence straight on the
 * call the client would get. The call is a no-op stand-in for gax's, made by a {@link
 * GuardedStream.Starter} that returns it, on both sides alike. Single-use and transactional (a
 * transaction id) requests, with hedging off (its default). {@link ChannelLoadBenchmark} measures
 * the load counting, {@link HedgingBenchmark} what hedging adds.
 *
 * <p>What the starter saves (the stock client's cancel path with its exceptions) is not here: the
 * stand-in call's cancel costs nothing. That is in the load benchmark's throwables, bytes and CPU.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class StarterOverheadBenchmark {

  /** {@code TunedSpannerRpc.stream(...)}, private: read by reflection so no main code changes. */
  static final MethodHandle STREAM = streamMethod();

  /** The client's own rpc, reduced to handing out the stand-in call. */
  static final GuardedStream.Starter STARTER = (consumer, options) -> NoopCall.INSTANCE;

  static final PartialResultSet LAST_ROW =
      PartialResultSet.newBuilder()
          .setLast(true)
          .setResumeToken(ByteString.copyFromUtf8("r"))
          .build();

  /** Single-use read-only, as the client sends a point select. */
  static final TransactionSelector SINGLE_USE =
      TransactionSelector.newBuilder()
          .setSingleUse(
              TransactionOptions.newBuilder()
                  .setReadOnly(TransactionOptions.ReadOnly.newBuilder().setStrong(true)))
          .build();

  private static final TransactionSelector IN_TRANSACTION =
      TransactionSelector.newBuilder().setId(ByteString.copyFromUtf8("tx-1")).build();

  @Param({"single-use", "transaction"})
  public String request;

  /**
   * When the application closes the result set: {@code after-end} once the stream completed (a
   * caller that reads past the last row), {@code at-last} after the row marked {@code last} and
   * before the trailers (a point select: {@code next()} once, then close).
   */
  @Param({"at-last", "after-end"})
  public String close;

  private boolean closeAtLast;

  private TunedSpannerRpc rpc;

  private Map<Option, Object> options;

  private TunedSpannerRpc.Route route;

  private final NoopConsumer consumer = new NoopConsumer();

  @Setup(Level.Trial)
  public void setUp() {
    this.rpc = rpc(SpannerTuning.defaults());
    this.options = clientOptions();
    this.route =
        TunedSpannerRpc.Route.of(
            true, this.request.equals("single-use") ? SINGLE_USE : IN_TRANSACTION);
    this.closeAtLast = this.close.equals("at-last");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    this.rpc.shutdownNow();
  }

  /** A tuned client's rpc on a pool that is never connected to. */
  static TunedSpannerRpc rpc(SpannerTuning tuning) {
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("bench-project")
            .setHost("http://127.0.0.1:1")
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance());
    SpannerTuningState state = tuning.applyTo(builder);
    return (TunedSpannerRpc) new TunedSpannerRpcFactory(state).create(builder.build());
  }

  /** The client passes a channel hint with every query. */
  static Map<Option, Object> clientOptions() {
    Map<Option, Object> options = new EnumMap<>(Option.class);
    options.put(Option.CHANNEL_HINT, 3L);
    return options;
  }

  @Benchmark
  public Object streamStock() {
    StreamingCall call = STARTER.start(this.consumer, this.options);
    return pointSelect(this.consumer, call, this.closeAtLast);
  }

  @Benchmark
  public Object streamTuned() throws Throwable {
    // The guard wraps the consumer: the stand-in call does not call it, so it is driven here.
    StreamingCall call =
        (StreamingCall)
            STREAM.invokeExact(
                this.rpc,
                this.route,
                (HedgeDelay.Shape) null,
                (ResultStreamConsumer) this.consumer,
                (Map<?, ?>) this.options,
                STARTER);
    return pointSelect((ResultStreamConsumer) call, call, this.closeAtLast);
  }

  static Object pointSelect(
      ResultStreamConsumer consumer, StreamingCall call, boolean closeAtLast) {
    call.request(1);
    consumer.onPartialResultSet(LAST_ROW);
    if (closeAtLast) {
      call.cancel("closed");
      consumer.onCompleted();
    } else {
      consumer.onCompleted();
      call.cancel("closed");
    }
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
      return MethodHandles.lookup()
          .unreflect(stream)
          .asType(
              MethodType.methodType(
                  StreamingCall.class,
                  TunedSpannerRpc.class,
                  TunedSpannerRpc.Route.class,
                  HedgeDelay.Shape.class,
                  ResultStreamConsumer.class,
                  Map.class,
                  GuardedStream.Starter.class));
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException(
          "TunedSpannerRpc.stream(...) changed its signature: update this benchmark", ex);
    }
  }

  /** The client's consumer, reduced to nothing. */
  static final class NoopConsumer implements ResultStreamConsumer {

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

  /** The call gax would return, reduced to nothing. */
  static final class NoopCall implements StreamingCall {

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
}
