package io.github.spannertuning.client;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerExceptionFactory;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.spanner.v1.PartialResultSet;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.pool.ChannelReservation;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.routing.HedgeDelay;
import io.github.spannertuning.routing.HedgeRace;
import io.github.spannertuning.routing.HedgeTimer;
import io.github.spannertuning.trace.Traces;
import io.grpc.Context;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A read that may be hedged: the stream the client reads, in front of the read's first attempt and,
 * once its delay passed with no response, a second attempt on another channel. Which attempt the
 * client reads is the {@link HedgeRace}'s decision; this class carries it out on the two attempts'
 * {@link GuardedStream}s.
 *
 * <ul>
 *   <li>The client's requests for messages go to both attempts until one wins, then to the winner;
 *       a hedge that starts late is given what was asked of the first attempt until then.
 *   <li>The winner's messages, completion and failure reach the client; once its first answer has,
 *       the loser is {@link GuardedStream#abandon() abandoned}: drained if it finished, cancelled
 *       within its connection's budget of resets if not, and otherwise left to run to its end.
 *   <li>The hedge is one more call of the same request, with the same request id object: the
 *       client's own interceptor numbers it as the next attempt, as it numbers its retries.
 *   <li>The hedge is made in the context the read was made in, so a deadline or cancellation of the
 *       application's reaches it too.
 * </ul>
 *
 * <p>A read costs this object, one timer entry in it and no lock; a read that answers within its
 * delay sends nothing more. The hedge is due on the {@link HedgeTimer}'s one thread, which sends
 * it.
 *
 * <p>Where the client traces, a read that sends a hedge gets a child span per attempt ({@link
 * Traces#attempt}), from the attempt's start to the race's end, and its own span tells whether the
 * hedge won; the winner's channel and its end are the read's.
 */
final class HedgedStream extends HedgeRace implements StreamingCall, ResultStreamConsumer {

  private static final Logger logger = Logger.getLogger(HedgedStream.class.getName());

  private static final int OK = 0;

  private static final int CANCELLED = 1;

  private final ResultStreamConsumer consumer;

  private final SpannerTuningState state;

  private final PoolRouting routing;

  private final HedgeDelay.Shape shape;

  private final GuardedStream.Starter starter;

  private final Map<Option, ?> options;

  /** The application's context when it made the read, which the hedge is made in too. */
  private final Context context;

  private final long startNanos;

  private final GuardedStream first;

  /** Set once the hedge's call was made; {@code null} until then or without a hedge. */
  private volatile GuardedStream second;

  /** The kind an experiment records the read as. */
  private final CallKind kind;

  /** Whether the read was recorded in a running experiment, which it is once. */
  private volatile boolean recorded;

  /** The first attempt's failure, for the client should the hedge fail too. */
  private volatile SpannerException firstError;

  /** This read's spans where the client traces; else {@code null}. */
  private final ReadTrace trace;

  /**
   * @param options the client's options of the read: the hedge's reservation makes from them the
   *     options that send it to the channel picked
   */
  private HedgedStream(
      ResultStreamConsumer consumer,
      SpannerTuningState state,
      PoolRouting routing,
      HedgeDelay.Shape shape,
      GuardedStream.Starter starter,
      Map<Option, ?> options,
      CallKind kind,
      long startNanos,
      Span span) {
    this.consumer = consumer;
    this.kind = kind;
    this.state = state;
    this.routing = routing;
    this.shape = shape;
    this.starter = starter;
    this.options = options;
    this.context = Context.current();
    this.startNanos = startNanos;
    this.first = new GuardedStream(this, state, true);
    this.trace = (span != null) ? new ReadTrace(span) : null;
    if (span != null) {
      this.first.awaitSpan();
    }
  }

  /**
   * A hedgeable read, before its first attempt is made: the caller makes it with {@link #first()},
   * routed as the client's rpc routes it, then calls {@link #started()}.
   *
   * @param options the client's options of the read
   * @param kind what an experiment records the read as
   * @param span the client's span of the read where the client traces; else {@code null}
   */
  static HedgedStream create(
      ResultStreamConsumer consumer,
      SpannerTuningState state,
      PoolRouting routing,
      HedgeDelay.Shape shape,
      GuardedStream.Starter starter,
      Map<Option, ?> options,
      CallKind kind,
      long nowNanos,
      Span span) {
    HedgedStream stream =
        new HedgedStream(consumer, state, routing, shape, starter, options, kind, nowNanos, span);
    state.hedging().onRead();
    return stream;
  }

  /** The first attempt's stream, to make its call with. */
  GuardedStream first() {
    return this.first;
  }

  /** The first attempt's call was made: the hedge is due after the shape's delay. */
  StreamingCall started() {
    long delay = this.state.hedging().delayNanos(this.shape);
    if (delay != HedgeDelay.NONE) {
      HedgeTimer.SHARED.schedule(this, this.startNanos + delay);
    }
    return this;
  }

  /**
   * The hedge's delay passed: send it, if the read has still not answered and the budget allows.
   */
  @Override
  protected void hedgeDue() {
    if (!hedgeable() || !this.state.hedging().tryAcquire(System.nanoTime())) {
      return;
    }
    if (!hedge()) {
      this.state.hedging().giveBack();
      return;
    }
    GuardedStream hedge = new GuardedStream(new Second(), this.state, true);
    ReadTrace trace = this.trace;
    if (trace != null) {
      hedge.awaitSpan();
    }
    long sentAtEpochNanos = (trace != null) ? Traces.epochNanos() : 0;
    long sentAtNanos = (trace != null) ? System.nanoTime() : 0;
    Context previous = this.context.attach();
    try {
      ChannelReservation reservation =
          this.routing.reserveExcept(this.first.channel(), this.options, hedge);
      if (reservation == null) {
        hedge.start(this.options, this.starter);
      } else {
        try (reservation) {
          hedge.attach(this.starter.start(hedge, reservation.options()));
        }
      }
    } catch (RuntimeException ex) {
      logger.log(Level.FINE, "spanner-tuning: a hedge could not be sent", ex);
      onError(SECOND, ex);
      return;
    } finally {
      this.context.detach(previous);
    }
    this.second = hedge;
    if (trace != null) {
      traceAttempts(trace, hedge, sentAtEpochNanos, sentAtNanos);
    }
    catchUpSecond();
    int winner = winner();
    if (winner == FIRST) {
      hedge.abandon();
    } else if (winner < 0 && over()) {
      hedge.cancel("spanner-tuning: the hedged read was closed");
    }
  }

  /**
   * Starts a span per attempt, the first one's at the read's start. Should the race have ended
   * while they were being made, they end at once.
   */
  private void traceAttempts(
      ReadTrace trace, GuardedStream hedge, long sentAtEpochNanos, long sentAtNanos) {
    Tracer tracer = this.state.tracer();
    Span first =
        Traces.attempt(
            tracer,
            trace.read,
            1,
            sentAtEpochNanos - (sentAtNanos - this.startNanos),
            this.first.channelIndex());
    Span second = Traces.attempt(tracer, trace.read, 2, sentAtEpochNanos, hedge.channelIndex());
    trace.attempts = new Span[] {first, second};
    int winner = winner();
    if (winner >= 0) {
      endAttempts(winner);
    }
  }

  /**
   * The race ended: {@code winner} answered first, or neither did ({@code -1}). The attempts' spans
   * end, once; the read's span tells whether the hedge won, and then carries its channel.
   */
  private void endAttempts(int winner) {
    ReadTrace trace = this.trace;
    Span[] attempts = (trace != null) ? trace.takeAttempts() : null;
    if (attempts == null) {
      return;
    }
    GuardedStream hedge = this.second;
    if (winner >= 0) {
      trace.read.setAttribute(Traces.HEDGE_WON, winner == SECOND);
      if (winner == SECOND && hedge != null) {
        Traces.route(trace.read, Traces.LATENCY);
        Traces.channel(trace.read, hedge.channelIndex());
        hedge.trace(trace.read);
      }
    }
    attempts[FIRST].end();
    attempts[SECOND].end();
  }

  private void onError(int attempt, RuntimeException ex) {
    SpannerException error =
        (ex instanceof SpannerException spanner)
            ? spanner
            : SpannerExceptionFactory.newSpannerException(ex);
    onError(attempt, error);
  }

  // The first attempt's consumer.

  @Override
  public void onPartialResultSet(PartialResultSet results) {
    onMessage(FIRST, results);
  }

  @Override
  public void onCompleted() {
    onCompleted(FIRST);
  }

  @Override
  public void onError(SpannerException e) {
    onError(FIRST, e);
  }

  @Override
  public boolean cancelQueryWhenClientIsClosed() {
    return this.consumer.cancelQueryWhenClientIsClosed();
  }

  private void onMessage(int attempt, PartialResultSet results) {
    switch (respond(attempt)) {
      case WIN -> {
        won(attempt);
        try {
          forward(results);
        } finally {
          abandonLoser(attempt);
        }
      }
      case FORWARD -> forward(results);
      default -> {}
    }
  }

  private void forward(PartialResultSet results) {
    if (results.getLast()) {
      // Before the consumer sees it: it may close the stream at once.
      recorded(OK);
    }
    this.consumer.onPartialResultSet(results);
  }

  private void onCompleted(int attempt) {
    switch (respond(attempt)) {
      case WIN -> {
        won(attempt);
        recorded(OK);
        try {
          this.consumer.onCompleted();
        } finally {
          abandonLoser(attempt);
        }
      }
      case FORWARD -> {
        recorded(OK);
        this.consumer.onCompleted();
      }
      default -> {}
    }
  }

  /**
   * Records the read in a running experiment, once: from its first attempt's start to the winner's
   * message marked {@code last}, or else its end, as the counting interceptor records any other
   * call.
   */
  private void recorded(int statusCode) {
    if (!this.recorded) {
      this.recorded = true;
      this.state.experimentSlot().record(this.kind, this.startNanos, System.nanoTime(), statusCode);
    }
  }

  private void onError(int attempt, SpannerException e) {
    if (attempt == FIRST) {
      this.firstError = e;
    }
    switch (fail(attempt, isTerminal(e))) {
      case FORWARD -> failed(e);
      case END_ALL -> {
        attempt(1 - attempt).cancel("spanner-tuning: the other attempt of this read ended it");
        failed(e);
      }
      case FORWARD_FIRST_ERROR -> failed(this.firstError);
      default -> {}
    }
  }

  private void failed(SpannerException e) {
    if (this.trace != null) {
      endAttempts(-1);
    }
    recorded(e.getErrorCode().getGrpcStatusCode().value());
    this.consumer.onError(e);
  }

  /** A failure of the application's own making ends every attempt. */
  private static boolean isTerminal(SpannerException e) {
    return e.getErrorCode() == ErrorCode.CANCELLED
        || e.getErrorCode() == ErrorCode.DEADLINE_EXCEEDED;
  }

  /**
   * The attempt answered first: its time is the read's. What happens to the other one waits for
   * {@link #abandonLoser}, once the application has the winner's answer.
   */
  private void won(int attempt) {
    long now = System.nanoTime();
    // The first attempt's time to first response, or a lower bound of it past the delay.
    this.state.hedging().answered(this.shape, now - this.startNanos, now);
    if (attempt == SECOND) {
      this.state.hedging().hedgeWon();
    }
    ReadTrace trace = this.trace;
    if (trace != null) {
      // Before the winner's last message is handed on: the application may close at once. A
      // hedge that answers before its call was recorded as made is traced when it is.
      GuardedStream winner = (attempt == SECOND) ? this.second : this.first;
      if (winner != null) {
        winner.trace(trace.read);
      }
      endAttempts(attempt);
    }
  }

  /**
   * Drains or cancels the attempt that lost, after the winner's answer was handed on: the loser's
   * cancel, a gRPC call's first in this read, is not made on the path of the answer the application
   * waits for. A hedge whose call is still being made is abandoned by the timer, which finds the
   * race won.
   */
  private void abandonLoser(int winner) {
    if (winner == SECOND) {
      this.first.abandon();
    } else {
      GuardedStream hedge = this.second;
      if (hedge != null) {
        hedge.abandon();
      }
    }
  }

  /** An attempt's stream, the hedge's {@code null} until its call is made. */
  private StreamingCall attempt(int attempt) {
    StreamingCall stream = (attempt == FIRST) ? this.first : this.second;
    return (stream != null) ? stream : NOT_MADE;
  }

  // The stream the client reads.

  @Override
  public ApiCallContext getCallContext() {
    GuardedStream hedge = this.second;
    return ((winner() == SECOND && hedge != null) ? hedge : this.first).getCallContext();
  }

  @Override
  public void request(int numMessages) {
    int winner = winner();
    if (winner == FIRST) {
      this.first.request(numMessages);
      return;
    }
    GuardedStream hedge = this.second;
    if (winner == SECOND && hedge != null) {
      hedge.request(numMessages);
      return;
    }
    asked(numMessages);
    if (winner != SECOND) {
      this.first.request(numMessages);
    }
    catchUpSecond();
  }

  /** Gives the hedge what was asked of the first attempt and not of it yet. */
  private void catchUpSecond() {
    GuardedStream hedge = this.second;
    if (hedge != null) {
      int owed = owedToHedge();
      if (owed > 0) {
        hedge.request(owed);
      }
    }
  }

  @Override
  public void cancel(String message) {
    recorded(CANCELLED);
    switch (close()) {
      case CLOSE_WINNER -> attempt(winner()).cancel(message);
      case CANCEL_ALL -> {
        ReadTrace trace = this.trace;
        if (trace != null) {
          Traces.streamEnd(trace.read, Traces.CANCELLED);
          endAttempts(-1);
        }
        this.first.cancel(message);
        attempt(SECOND).cancel(message);
      }
      default -> {}
    }
  }

  /** The hedge's consumer. */
  private final class Second implements ResultStreamConsumer {

    @Override
    public void onPartialResultSet(PartialResultSet results) {
      onMessage(SECOND, results);
    }

    @Override
    public void onCompleted() {
      HedgedStream.this.onCompleted(SECOND);
    }

    @Override
    public void onError(SpannerException e) {
      HedgedStream.this.onError(SECOND, e);
    }

    @Override
    public boolean cancelQueryWhenClientIsClosed() {
      return HedgedStream.this.consumer.cancelQueryWhenClientIsClosed();
    }
  }

  /** A traced read's spans. */
  private static final class ReadTrace {

    private static final AtomicReferenceFieldUpdater<ReadTrace, Span[]> ATTEMPTS =
        AtomicReferenceFieldUpdater.newUpdater(ReadTrace.class, Span[].class, "attempts");

    /** The client's span of the read. */
    final Span read;

    /** The two attempts' spans, once the hedge was sent, until the race ends. */
    volatile Span[] attempts;

    ReadTrace(Span read) {
      this.read = read;
    }

    /** The attempts' spans, to end: once. */
    Span[] takeAttempts() {
      return (this.attempts != null) ? ATTEMPTS.getAndSet(this, null) : null;
    }
  }

  /** Stands for a hedge whose call was not made: nothing to ask or cancel. */
  private static final StreamingCall NOT_MADE =
      new StreamingCall() {
        @Override
        public ApiCallContext getCallContext() {
          return null;
        }

        @Override
        public void request(int numMessages) {}

        @Override
        public void cancel(String message) {}
      };
}
