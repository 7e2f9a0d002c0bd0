package io.github.spannertuning.client;

import static io.github.spannertuning.client.StarterOverheadBenchmark.LAST_ROW;
import static io.github.spannertuning.client.StarterOverheadBenchmark.SINGLE_USE;

import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.observation.SpannerCallMeterObservationHandler;
import io.github.spannertuning.observation.SpannerCallObservations;
import io.github.spannertuning.observation.SpannerObservationDocumentation;
import io.github.spannertuning.routing.HedgeDelay;
import io.grpc.Metadata;
import io.micrometer.common.KeyValues;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler.FirstMatchingCompositeObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
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
 * What observing a point select costs (ns/op, and B/op with {@code -prof gc}): the observation work
 * the starter's hooks do for one single-use query, on its real classes.
 *
 * <p>{@code pointSelect} runs, in the hooks' order: {@code TunedSpannerRpc.executeQuery}'s
 * operation (the resumed streams' look-up, {@code observer.operation(..)}, a real {@link
 * ObservedStream} around a no-op consumer, started through a supplier that captures what the rpc's
 * does); {@code CountingInterceptor}'s attempt ({@code observer.attempt(..)}, {@code on(session)}
 * at the request, the {@code server-timing} header read from gRPC's {@link Metadata} and parsed as
 * {@code gfet4t7; dur=2.5} at the headers); the row marked {@code last}, which stops the operation;
 * the application's close at {@code last} (the stream's cancel, which finds the operation stopped);
 * the attempt's stop at the trailers. The stand-in call and consumer do nothing.
 *
 * <ul>
 *   <li>{@code off}: no observer, the client's state without {@code observations(..)}: each hook's
 *       null check, and nothing else.
 *   <li>{@code on}: {@link SpannerCallObservations} on an {@link ObservationRegistry} as Spring
 *       Boot configures it with the starter on a {@link PrometheusMeterRegistry}: the meter
 *       handlers grouped in a first-matching composite, the starter's {@link
 *       SpannerCallMeterObservationHandler} ahead of Micrometer's {@link
 *       DefaultMeterObservationHandler}. Per call, two timers and the server-duration timer.
 *   <li>{@code on-default-handler}: the same with Micrometer's handler alone (an application with
 *       its own meter handler, or tracing): per call also two long task timers.
 *   <li>{@code on-noop}: the same observer on {@link ObservationRegistry#NOOP} (the frontend's time
 *       still recorded on the Prometheus registry): the starter's own part without Micrometer's
 *       handler.
 * </ul>
 *
 * <p>{@code bareObservations} is the floor Micrometer itself needs on the same registry: two
 * observations (operation and attempt) with plain contexts and the same five keys, started and
 * stopped, nothing else. {@code pointSelect} minus {@code bareObservations} is the starter's own
 * part.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
// Micrometer's observation path takes the JIT longer than the other benchmarks' paths: on two
// busy cores, 3 s of warm-up left it partly interpreted.
@Warmup(iterations = 10, time = 2)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class ObservationBenchmark {

  private static final String METHOD = "ExecuteStreamingSql";

  private static final String SESSION =
      "projects/bench-project/instances/bench-instance/databases/bench-db/sessions/session-1";

  /** What Spanner's frontend sends on a point select's response headers. */
  static final String SERVER_TIMING = "gfet4t7; dur=2.5";

  private static final Metadata.Key<String> SERVER_TIMING_KEY =
      Metadata.Key.of(ServerTiming.HEADER, Metadata.ASCII_STRING_MARSHALLER);

  private static final ExecuteSqlRequest POINT_SELECT =
      ExecuteSqlRequest.newBuilder()
          .setSession(SESSION)
          .setSql("SELECT id, name FROM Singers WHERE id = 1")
          .setTransaction(SINGLE_USE)
          .build();

  /** The keys the starter puts on a successful point select's observations. */
  private static final KeyValues KEYS =
      KeyValues.of(
          "db.system.name", "gcp.spanner",
          "db.operation.name", METHOD,
          "db.namespace", "bench-db",
          "spanner.client", "spanner",
          "error.type", CallObserver.NO_ERROR);

  /**
   * {@code off}, {@code on} (Prometheus, as the starter configures Boot), {@code
   * on-default-handler} (Prometheus, Micrometer's default handler only), {@code on-noop} ({@code
   * ObservationRegistry.NOOP}).
   */
  @Param({"off", "on", "on-default-handler", "on-noop"})
  public String observations;

  private CallObserver observer;

  private ObservationRegistry registry;

  private PrometheusMeterRegistry meters;

  private final ResumedStreams resumed = new ResumedStreams();

  /** The client's request id of the stream, one object per stream. */
  private final Object requestId = new Object();

  private final Metadata headers = new Metadata();

  private final StarterOverheadBenchmark.NoopConsumer consumer =
      new StarterOverheadBenchmark.NoopConsumer();

  private final TunedSpannerRpc.Route route = TunedSpannerRpc.Route.of(true, SINGLE_USE);

  private final Map<Option, Object> options = StarterOverheadBenchmark.clientOptions();

  @Setup(Level.Trial)
  public void setUp() {
    this.headers.put(SERVER_TIMING_KEY, SERVER_TIMING);
    switch (this.observations) {
      case "off" -> {
        this.observer = null;
        this.registry = null;
      }
      case "on" -> {
        this.meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        this.registry = bootLike(this.meters, true);
        this.observer =
            new SpannerCallObservations(this.registry, this.meters).forClient(() -> "spanner");
      }
      case "on-default-handler" -> {
        this.meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        this.registry = bootLike(this.meters, false);
        this.observer =
            new SpannerCallObservations(this.registry, this.meters).forClient(() -> "spanner");
      }
      case "on-noop" -> {
        this.meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        this.registry = ObservationRegistry.NOOP;
        this.observer =
            new SpannerCallObservations(this.registry, this.meters).forClient(() -> "spanner");
      }
      default -> throw new IllegalArgumentException("observations: " + this.observations);
    }
  }

  /**
   * An observation registry as Spring Boot's {@code ObservationAutoConfiguration} makes it with
   * metrics and no tracing: the default meter handler, long task timers included, in a
   * first-matching group of the meter handlers; with the starter, its Spanner calls' handler ahead
   * of the default.
   */
  static ObservationRegistry bootLike(MeterRegistry meters, boolean starter) {
    ObservationRegistry registry = ObservationRegistry.create();
    registry
        .observationConfig()
        .observationHandler(
            starter
                ? SpannerCallMeterObservationHandler.withDefault(meters)
                : new FirstMatchingCompositeObservationHandler(
                    new DefaultMeterObservationHandler(meters)));
    return registry;
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (this.observer != null) {
      // A check that the calls were timed, and that they were timed as point selects.
      for (CallObserver.OperationSummary summary : this.observer.operations()) {
        System.out.println("# " + this.observations + ": " + summary);
      }
    }
    if (this.meters != null) {
      this.meters.close();
    }
  }

  @Benchmark
  public Object pointSelect() {
    CallObserver observer = this.observer;
    ResultStreamConsumer consumer = this.consumer;
    StreamingCall call = StarterOverheadBenchmark.NoopCall.INSTANCE;
    // TunedSpannerRpc.executeQuery: the operation, where calls are observed.
    if (observer != null) {
      CallObserver.Call operation = this.resumed.resume(this.requestId);
      if (operation == null) {
        operation = observer.operation(METHOD, POINT_SELECT.getSession());
      }
      ObservedStream observed =
          new ObservedStream(consumer, operation, this.requestId, this.resumed);
      TunedSpannerRpc.Route route = this.route;
      HedgeDelay.Shape shape = null;
      Map<Option, Object> options = this.options;
      GuardedStream.Starter starter = StarterOverheadBenchmark.STARTER;
      // Captures what the rpc's supplier captures: the rpc, route, shape, stream, options, starter.
      call = observed.start(() -> stream(route, shape, observed, options, starter));
      consumer = observed;
    }
    // CountingInterceptor.interceptCall: the attempt, where calls are observed.
    CallObserver.Attempt attempt = (observer != null) ? observer.attempt(METHOD) : null;
    // sendMessage: the request names the session.
    if (attempt != null) {
      attempt.on(POINT_SELECT.getSession());
    }
    // onHeaders: the frontend's times.
    if (attempt != null) {
      String timing = this.headers.get(SERVER_TIMING_KEY);
      attempt.serverTiming(
          ServerTiming.durationNanos(timing, ServerTiming.GFE),
          ServerTiming.durationNanos(timing, ServerTiming.AFE));
    }
    // The row marked last ends the operation; the application closes the result set at once.
    consumer.onPartialResultSet(LAST_ROW);
    call.cancel("closed");
    // onClose: the trailers end the attempt.
    if (attempt != null) {
      attempt.stop(CallObserver.NO_ERROR);
    }
    return call;
  }

  /** Stands for {@code TunedSpannerRpc.stream(..)}, which hands back gax's call. */
  private StreamingCall stream(
      TunedSpannerRpc.Route route,
      HedgeDelay.Shape shape,
      ResultStreamConsumer consumer,
      Map<Option, Object> options,
      GuardedStream.Starter starter) {
    return starter.start(consumer, options);
  }

  @Benchmark
  public Object bareObservations() {
    ObservationRegistry registry = this.registry;
    if (registry == null) {
      return null;
    }
    Observation operation =
        Observation.createNotStarted(
                SpannerObservationDocumentation.OPERATION.getName(),
                Observation.Context::new,
                registry)
            .lowCardinalityKeyValues(KEYS)
            .start();
    Observation attempt =
        Observation.createNotStarted(
                SpannerObservationDocumentation.ATTEMPT.getName(),
                Observation.Context::new,
                registry)
            .lowCardinalityKeyValues(KEYS)
            .start();
    operation.stop();
    attempt.stop();
    return attempt;
  }
}
