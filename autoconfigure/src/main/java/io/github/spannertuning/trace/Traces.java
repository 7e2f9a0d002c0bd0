package io.github.spannertuning.trace;

import com.google.cloud.spanner.SpannerOptions;
import io.grpc.Context;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.TracerProvider;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * The attributes spanner-tuning puts on the client's OpenTelemetry span of a call it routes or
 * guards, and the spans of a hedged read's attempts. Only where the client traces with
 * OpenTelemetry ({@link #on}), decided once when its rpc is built; elsewhere none of this runs.
 * Channels are named by their index in the client's pool, as the meters and the endpoint name them.
 *
 * <p>The span is the one the client has current when it makes the call: its {@code
 * CloudSpannerOperation.ExecuteStreamingQuery} or {@code ExecuteStreamingRead} span of a stream,
 * its {@code ExecuteUpdate}, {@code BatchUpdate}, {@code Commit} or {@code BeginTransaction} span
 * of a unary call. A span that records nothing (not sampled) is left alone.
 */
public final class Traces {

  /** Picked by expected latency: a single-use read, a transaction's first call, a hedge. */
  public static final String LATENCY = "latency";

  /** A later call of a transaction whose first call was routed: it went to that call's channel. */
  public static final String TRANSACTION = "transaction";

  /** A call routing picks for when its feature is on, left to the client: off, native or not. */
  public static final String CLIENT = "client";

  /** A call routing never picks for: it follows where the client sent its transaction. */
  public static final String NOT_ROUTED = "not-routed";

  /** Closed without a cancel: the stream had finished, and completes with its trailers. */
  public static final String DRAINED = "drained";

  /** A drained stream whose trailers did not come within the drain timeout: cancelled then. */
  public static final String DRAIN_TIMEOUT = "drain-timeout";

  /** Cancelled: closed before it finished, as the client does. */
  public static final String CANCELLED = "cancelled";

  /** Finished, but cancelled at once: its connection had no stream slot to spare. */
  public static final String RELEASED_AT_SLOT_LIMIT = "released-at-slot-limit";

  public static final AttributeKey<Long> CHANNEL = AttributeKey.longKey("spanner_tuning.channel");

  public static final AttributeKey<String> ROUTE = AttributeKey.stringKey("spanner_tuning.route");

  public static final AttributeKey<String> STREAM_END =
      AttributeKey.stringKey("spanner_tuning.stream_end");

  public static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("spanner_tuning.attempt");

  public static final AttributeKey<Boolean> HEDGE_WON =
      AttributeKey.booleanKey("spanner_tuning.hedge.won");

  /** A channel not known: nothing is written. */
  public static final int NO_CHANNEL = -1;

  /** The name of a hedged read's attempt span, a child of the client's span of the read. */
  public static final String ATTEMPT_SPAN = "spanner_tuning.attempt";

  private static final String INSTRUMENTATION_SCOPE = "io.github.spannertuning";

  /** The traced call being made on this thread, for the interceptor that sees it made. */
  private static final Context.Key<Call> CALL = Context.key("spanner-tuning-traced-call");

  private Traces() {}

  /**
   * Whether a client built now with this OpenTelemetry traces its calls: the client makes
   * OpenTelemetry spans only once the application chose them for the JVM ({@code
   * SpannerOptions.enableOpenTelemetryTraces()}, fixed when the first options are built), and their
   * tracer is the options' OpenTelemetry, {@code GlobalOpenTelemetry} when none was set.
   */
  public static boolean on(OpenTelemetry openTelemetry) {
    return openTelemetry != null
        && openTelemetryChosen()
        && openTelemetry.getTracerProvider() != TracerProvider.noop();
  }

  /** Whether the Spanner client makes OpenTelemetry spans in this JVM, not OpenCensus ones. */
  public static boolean openTelemetryChosen() {
    try {
      // The framework's type is package-private: compared by its name.
      return "OPEN_TELEMETRY".equals(Objects.toString(SpannerOptions.getActiveTracingFramework()));
    } catch (RuntimeException | LinkageError ex) {
      return false;
    }
  }

  /** The tracer of a hedged read's attempt spans. */
  public static Tracer tracer(OpenTelemetry openTelemetry) {
    return openTelemetry.getTracer(INSTRUMENTATION_SCOPE);
  }

  /** The client's span of the call being made on this thread, or {@code null} if none records. */
  public static Span current() {
    Span span = Span.current();
    return span.isRecording() ? span : null;
  }

  /**
   * Marks the call about to be made on this thread as traced on {@code span}, for the client's
   * channel interceptor to tell it the channel ({@link #madeOn}); returns the context to restore
   * once it is made.
   */
  public static Context open(Span span) {
    Context previous = Context.current();
    previous.withValue(CALL, new Call(span)).attach();
    return previous;
  }

  /** Restores the context {@link #open} returned, once the call is made. */
  public static void close(Context previous) {
    Context.current().detach(previous);
  }

  /**
   * A data-plane call is being made on {@code channel}: the first one made under a traced call's
   * context is that call. Calls made later in the same context (from its callbacks) are not.
   */
  public static void madeOn(int channel) {
    Call call = CALL.get();
    if (call != null && call.claim()) {
      call.span.setAttribute(CHANNEL, (long) channel);
    }
  }

  /** What chose the call's channel: {@link #LATENCY}, {@link #TRANSACTION} and so on. */
  public static void route(Span span, String route) {
    span.setAttribute(ROUTE, route);
  }

  /** The channel a call went on, unless it is {@link #NO_CHANNEL}. */
  public static void channel(Span span, int channel) {
    if (channel != NO_CHANNEL) {
      span.setAttribute(CHANNEL, (long) channel);
    }
  }

  /** The stream's end, on its span if that is still open. */
  public static void streamEnd(Span span, String end) {
    if (span != null && span.isRecording()) {
      span.setAttribute(STREAM_END, end);
    }
  }

  /** Now, as the epoch time a span starts at. */
  public static long epochNanos() {
    Instant now = Instant.now();
    return TimeUnit.SECONDS.toNanos(now.getEpochSecond()) + now.getNano();
  }

  /** The span of a hedged read's attempt, a child of the read's span, started at the time given. */
  public static Span attempt(
      Tracer tracer, Span read, int attempt, long startEpochNanos, int channel) {
    Span span =
        tracer
            .spanBuilder(ATTEMPT_SPAN)
            .setParent(io.opentelemetry.context.Context.root().with(read))
            .setStartTimestamp(startEpochNanos, TimeUnit.NANOSECONDS)
            .setAttribute(ATTEMPT, (long) attempt)
            .startSpan();
    channel(span, channel);
    return span;
  }

  /** A traced call being made; the first data-plane call made under it claims it. */
  private static final class Call {

    private static final AtomicIntegerFieldUpdater<Call> CLAIMED =
        AtomicIntegerFieldUpdater.newUpdater(Call.class, "claimed");

    final Span span;

    private volatile int claimed;

    Call(Span span) {
      this.span = span;
    }

    boolean claim() {
      return CLAIMED.compareAndSet(this, 0, 1);
    }
  }
}
