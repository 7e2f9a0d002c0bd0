package io.github.spannertuning.client;

import static io.github.spannertuning.client.StarterOverheadBenchmark.LAST_ROW;
import static io.github.spannertuning.client.StarterOverheadBenchmark.SINGLE_USE;
import static io.github.spannertuning.client.StarterOverheadBenchmark.STARTER;
import static io.github.spannertuning.client.StarterOverheadBenchmark.STREAM;

import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.protobuf.ByteString;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.routing.HedgeDelay;
import io.opentelemetry.api.trace.Span;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
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
 * What hedging adds to a single-use read (ns/op, and B/op with {@code -prof gc}), on the starter's
 * real classes with the same no-op stand-in for gax's call as {@link StarterOverheadBenchmark}.
 *
 * <ul>
 *   <li>{@code readHedgingOff} and {@code readHedgingOn}: a point select through {@code
 *       TunedSpannerRpc}'s own steps for a query (its route, whether it may be hedged, its shape,
 *       the stream path) on a tuned client with hedging off (the default) and on. The read answers
 *       at once, long before its delay (learned, so at the 1 ms floor here): no hedge is sent, and
 *       the difference is what a read that is not hedged pays for hedging being on: the {@link
 *       HedgedStream} in front of its guarded stream, the budget's count, the timer entry, the
 *       race's compare-and-sets and the delay's sample. The teardown prints the hedges the timer
 *       sent anyway (a read descheduled past 1 ms), which should be none.
 *   <li>{@code hedgeNotSent} and {@code hedgeSent}: the same read made as the rpc makes a hedged
 *       one, without the timer: {@code hedgeSent} sends the hedge on this thread when the first
 *       attempt has asked for its message, as the timer does once the delay has passed, then the
 *       first attempt answers and wins; the hedge, abandoned while still open, drains and then ends
 *       (the path of a loser past its connection's budget of resets, or one whose sub-channel is
 *       not known, as here). The difference is the starter's side of one hedge: its token, its
 *       guarded stream and consumer, its pick and context, its drain timer.
 * </ul>
 *
 * <p>What a hedge costs beyond that is the second call itself (gax, grpc-java, Netty: about what
 * one query allocates, see the load benchmark's bytes per query) and, for a loser cancelled within
 * its connection's budget, gax's cancel path. The load benchmark's stragglers workload measures
 * both in the hedging variant's bytes and CPU per query.
 *
 * <p>No lock on the path of a read that is not hedged, read from the code: {@code
 * HedgeBudget.onRead} is a {@code LongAdder} increment; {@code HedgeTimer.schedule} a
 * compare-and-set onto a list of new entries, and an unpark of the timer's thread only when it
 * waits with nothing pending or the read is due before its next wake-up; the race ({@code
 * HedgeRace}) and the demand are compare-and-sets; the shape's lookup two array reads; the delay's
 * sample two atomic increments per histogram (the shape's and the shared one). Two things there are
 * not lock-free, and are not per read: the histogram's window rolls under a monitor once per window
 * (1,000 samples, or 10 s), allocating the next window; and the budget's {@code tryAcquire} is
 * synchronized, taken only when a hedge is due. The guard's drain timer ({@code
 * ScheduledThreadPoolExecutor}, whose queue has a lock) is scheduled for a stream closed before its
 * trailers with hedging on or off alike.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class HedgingBenchmark {

  private static final ExecuteSqlRequest POINT_SELECT =
      ExecuteSqlRequest.newBuilder()
          .setSql("SELECT id, name FROM Singers WHERE id = 1")
          .setTransaction(SINGLE_USE)
          .build();

  private static final MethodHandle HEDGEABLE =
      method(
          TunedSpannerRpc.class,
          "hedgeable",
          TunedSpannerRpc.Route.class,
          Map.class,
          ByteString.class,
          ByteString.class);

  /** {@code TunedSpannerRpc.start(...)}: makes a guarded stream's call where routing sends it. */
  private static final MethodHandle START_ATTEMPT =
      method(
          TunedSpannerRpc.class,
          "start",
          TunedSpannerRpc.Route.class,
          GuardedStream.class,
          Map.class,
          GuardedStream.Starter.class,
          Span.class);

  /** {@code HedgedStream.hedgeDue()}: what the timer runs once a read's delay has passed. */
  private static final MethodHandle DUE = method(HedgedStream.class, "hedgeDue");

  private static final MethodHandle SECOND = getter(HedgedStream.class, "second");

  private static final MethodHandle PICKER = getter(TunedSpannerRpc.class, "pool");

  /** When the application closes the result set, as in {@link StarterOverheadBenchmark}. */
  @Param({"at-last", "after-end"})
  public String close;

  private boolean closeAtLast;

  private TunedSpannerRpc hedgingOff;

  private TunedSpannerRpc hedgingOn;

  /** Hedging on with a budget of one hedge per read, so every hedge due is sent. */
  private TunedSpannerRpc everyHedge;

  private PoolRouting everyHedgePicker;

  private Map<Option, Object> options;

  private final StarterOverheadBenchmark.NoopConsumer consumer =
      new StarterOverheadBenchmark.NoopConsumer();

  private long readsHedgingOn;

  @Setup(Level.Trial)
  public void setUp() throws Throwable {
    this.hedgingOff = StarterOverheadBenchmark.rpc(SpannerTuning.defaults());
    this.hedgingOn = StarterOverheadBenchmark.rpc(SpannerTuning.newBuilder().hedging(true).build());
    this.everyHedge =
        StarterOverheadBenchmark.rpc(
            SpannerTuning.newBuilder().hedging(true).hedgingMaxExtra(1.0).build());
    for (TunedSpannerRpc rpc : new TunedSpannerRpc[] {this.hedgingOn, this.everyHedge}) {
      if (!rpc.state.isActive(Feature.HEDGING)) {
        throw new IllegalStateException(
            "hedging is not on for this client: " + rpc.state.feature(Feature.HEDGING));
      }
    }
    if (this.hedgingOff.state.isActive(Feature.HEDGING)) {
      throw new IllegalStateException("hedging is on by default: update this benchmark");
    }
    this.everyHedgePicker = (PoolRouting) PICKER.invokeExact(this.everyHedge);
    this.options = StarterOverheadBenchmark.clientOptions();
    this.closeAtLast = this.close.equals("at-last");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    long sent = this.hedgingOn.state.hedging().sent();
    if (this.readsHedgingOn > 0) {
      System.out.printf(
          "%nhedging on: %d reads, %d hedges sent by the timer (%d denied)%n",
          this.readsHedgingOn, sent, this.hedgingOn.state.hedging().denied());
    }
    this.hedgingOff.shutdownNow();
    this.hedgingOn.shutdownNow();
    this.everyHedge.shutdownNow();
  }

  @Benchmark
  public Object readHedgingOff() throws Throwable {
    StreamingCall call = read(this.hedgingOff);
    return StarterOverheadBenchmark.pointSelect(
        (ResultStreamConsumer) call, call, this.closeAtLast);
  }

  @Benchmark
  public Object readHedgingOn() throws Throwable {
    StreamingCall call = read(this.hedgingOn);
    this.readsHedgingOn++;
    // gax answers the first attempt's guarded stream, which hands on to the hedged stream.
    return StarterOverheadBenchmark.pointSelect(
        ((HedgedStream) call).first(), call, this.closeAtLast);
  }

  @Benchmark
  public Object hedgeNotSent() throws Throwable {
    return hedgedRead(false);
  }

  @Benchmark
  public Object hedgeSent() throws Throwable {
    return hedgedRead(true);
  }

  /** As {@code TunedSpannerRpc.executeQuery} does for a point select, up to gax's call. */
  private StreamingCall read(TunedSpannerRpc rpc) throws Throwable {
    TunedSpannerRpc.Route route =
        TunedSpannerRpc.Route.of(POINT_SELECT.hasTransaction(), POINT_SELECT.getTransaction());
    boolean hedgeable =
        (boolean)
            HEDGEABLE.invokeExact(
                rpc,
                route,
                (Map<?, ?>) this.options,
                POINT_SELECT.getPartitionToken(),
                POINT_SELECT.getResumeToken());
    HedgeDelay.Shape shape =
        hedgeable ? rpc.state.hedging().queryShape(POINT_SELECT.getSql(), System.nanoTime()) : null;
    return (StreamingCall)
        STREAM.invokeExact(
            rpc,
            route,
            shape,
            (ResultStreamConsumer) this.consumer,
            (Map<?, ?>) this.options,
            STARTER);
  }

  /**
   * A hedgeable read made as the stream path makes one, but not handed to the timer: the hedge, if
   * any, is sent here. The first attempt answers first; a hedge sent is abandoned, drains, and its
   * trailers then end it.
   */
  private Object hedgedRead(boolean sendHedge) throws Throwable {
    HedgeDelay.Shape shape =
        this.everyHedge.state.hedging().queryShape(POINT_SELECT.getSql(), System.nanoTime());
    HedgedStream hedged =
        HedgedStream.create(
            this.consumer,
            this.everyHedge.state,
            this.everyHedgePicker,
            shape,
            STARTER,
            this.options,
            CallKind.SINGLE_USE,
            System.nanoTime(),
            (Span) null);
    GuardedStream first = hedged.first();
    StreamingCall started =
        (StreamingCall)
            START_ATTEMPT.invokeExact(
                this.everyHedge,
                TunedSpannerRpc.Route.SINGLE_USE,
                first,
                (Map<?, ?>) this.options,
                STARTER,
                (Span) null);
    hedged.request(1);
    if (sendHedge) {
      DUE.invokeExact(hedged);
    }
    first.onPartialResultSet(LAST_ROW);
    if (this.closeAtLast) {
      hedged.cancel("closed");
      first.onCompleted();
    } else {
      first.onCompleted();
      hedged.cancel("closed");
    }
    GuardedStream hedge = (GuardedStream) SECOND.invokeExact(hedged);
    if (sendHedge) {
      if (hedge == null) {
        throw new IllegalStateException("the hedge was not sent");
      }
      hedge.onCompleted();
    }
    return started;
  }

  private static MethodHandle method(Class<?> owner, String name, Class<?>... parameters) {
    try {
      Method method = owner.getDeclaredMethod(name, parameters);
      method.setAccessible(true);
      return MethodHandles.lookup().unreflect(method);
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException(
          owner.getSimpleName() + "." + name + "(...) changed: update this benchmark", ex);
    }
  }

  private static MethodHandle getter(Class<?> owner, String name) {
    try {
      Field field = owner.getDeclaredField(name);
      field.setAccessible(true);
      return MethodHandles.lookup().unreflectGetter(field);
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException(
          owner.getSimpleName() + "." + name + " changed: update this benchmark", ex);
    }
  }
}
