package io.github.spannertuning.client;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.spanner.v1.PartialResultSet;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.pool.StreamLink;
import io.github.spannertuning.pool.TuningTimer;
import io.github.spannertuning.trace.Traces;
import io.grpc.Context;
import io.opentelemetry.api.trace.Span;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

/**
 * Sits between a streaming call and the client's consumer of it, and drops the cancel of a stream
 * that has already finished.
 *
 * <p>The client cancels every stream it closes before reading its end-of-stream marker: a point
 * select that reads one row and closes cancels a call the server has finished. Spanner marks the
 * final message of a stream with {@code last = true} and sends the trailers a little later, and the
 * client ends the result set at {@code last}, so that cancel reaches the wire as an RST_STREAM,
 * counts against the server's reset limit and costs gax about six {@code CancellationException}s. A
 * stream is finished here once its consumer received {@code last}, or the transport closed the call
 * with status OK, or the consumer was told it completed or failed.
 *
 * <p>Closing a stream at {@code last} sends no cancel: the call drains, completing when its
 * trailers arrive, and is cancelled only if they have not come within the drain timeout. After the
 * close, whatever the call still delivers is dropped instead of handed to the closed consumer: the
 * client's consumer puts into a bounded queue nobody reads any more, which could block a gRPC
 * thread. A cancel of a stream that has not finished always goes through at once.
 *
 * <p>A draining stream holds one of its connection's concurrent-stream slots until the trailers
 * come. That costs nothing while the connection has slots to spare, and a call waits when it has
 * none. So a close at {@code last} drains only while its sub-channel has at most the stream limit
 * less a margin of calls in flight, its own included; past that it cancels at once, as the client
 * would, and the slot goes to a call that needs it. A draining stream is one of the calls in
 * flight, so however many closes decide at once, no more than the limit less the margin drain on
 * one connection. With trailers as prompt as Spanner's a connection has next to nothing draining,
 * even when it is full of queries. A stream whose sub-channel is not known (a later attempt of a
 * retried stream, or a client whose interceptors could not be extended) drains as before.
 *
 * <p>From google-cloud-spanner 6.125 the client drops its call when its iterator takes the message
 * marked {@code last}, and a close after that sends no cancel: the skip is the client's own, and
 * the close never reaches this class. There ({@link SpannerTuningState#guardFinishesAtLast()}) the
 * guard acts when the consumer is handed {@code last}, not at the close: the stream is finished,
 * the client has the message queued with its end of stream, and only the trailers are missing. It
 * cancels the call at once when its sub-channel has no stream slot to spare, by the same rule as a
 * close, and otherwise lets it drain, cancelling it if its trailers have not come within the drain
 * timeout. Such a release is a reset the stock client would not send there, and servers limit
 * resets per connection: at most {@link SpannerTuning#releaseResets()} per connection and window
 * are sent, and past that budget finished streams drain as they do stock. A stream the client
 * closes before it took {@code last} is then already draining or cancelled: its cancel is dropped.
 */
final class GuardedStream implements ResultStreamConsumer, StreamingCall, StreamLink {

  /** Starts a stream on the client's own rpc, with the consumer and options given. */
  @FunctionalInterface
  interface Starter {
    StreamingCall start(ResultStreamConsumer consumer, Map<Option, ?> options);
  }

  /** Neither the application nor the call has ended the stream. */
  private static final int OPEN = 0;

  /** The consumer received the message marked {@code last}; the trailers have not arrived. */
  private static final int LAST = 1;

  /** The call has ended: trailers arrived, or the consumer was told it completed or failed. */
  private static final int ENDED = 2;

  /** Closed by the application at {@code last}, without a cancel; waiting for the trailers. */
  private static final int DRAINING = 3;

  /** Closed by the application, and nothing more to wait for. */
  private static final int CLOSED = 4;

  private static final AtomicIntegerFieldUpdater<GuardedStream> PHASE =
      AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "phase");

  private static final AtomicIntegerFieldUpdater<GuardedStream> TRANSPORT_LINKED =
      AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "transportLinked");

  private final ResultStreamConsumer consumer;

  private final SpannerTuningState tuning;

  private volatile int phase;

  private volatile int transportLinked;

  private volatile ScheduledFuture<?> drainTimer;

  /** The sub-channel whose stream slot the first attempt's call holds; set as that call is made. */
  private volatile ChannelStats channel;

  private volatile StreamingCall call;

  /** Whether this stream drains because it finished at {@code last}, not because it was closed. */
  private volatile boolean drainingAtLast;

  /** Whether this stream lost a hedged read's race: its drain is not the guard's. */
  private volatile boolean abandoned;

  /** Whether this stream lost a hedged read's race, whatever became of it. */
  private volatile boolean lost;

  /** Whether the application closed this stream while it was open, with the guard on. */
  private volatile boolean closedOpen;

  /**
   * What a loser left to run to its end asks for: more messages than a read that is not a full
   * table scan sends, and far from the overflow of gax's count of requests.
   */
  private static final int READ_TO_END = 1 << 20;

  /** Whether this is an attempt of a hedged read, which records itself in an experiment. */
  private final boolean hedgeAttempt;

  private static final AtomicReferenceFieldUpdater<GuardedStream, Object> TRACE =
      AtomicReferenceFieldUpdater.newUpdater(GuardedStream.class, Object.class, "trace");

  /**
   * A traced hedged read's attempt, until it wins or loses: a decision at {@code last} is kept for
   * the span it is given if it wins.
   */
  private static final Object AWAITING_SPAN = new Object();

  /**
   * The client's {@link Span} of this stream, which its end is recorded on ({@link
   * Traces#STREAM_END}); {@code null} where the client does not trace, once the stream failed, and
   * on a hedged read's attempt that lost. A traced hedged read's attempt holds {@link
   * #AWAITING_SPAN} until it wins, or, if it decided at {@code last} meanwhile, that decision, a
   * {@link String}. One field, so that a client that does not trace has streams no larger than
   * before, and reads only this field, {@code null}, where it would tell a span.
   */
  private volatile Object trace;

  GuardedStream(ResultStreamConsumer consumer, SpannerTuningState tuning) {
    this(consumer, tuning, false);
  }

  GuardedStream(ResultStreamConsumer consumer, SpannerTuningState tuning, boolean hedgeAttempt) {
    this.consumer = consumer;
    this.tuning = tuning;
    this.hedgeAttempt = hedgeAttempt;
  }

  /**
   * Whether this is an attempt of a hedged read: an experiment records the read, from its first
   * attempt's start to the winner's end, not each attempt.
   */
  @Override
  public boolean hedgeAttempt() {
    return this.hedgeAttempt;
  }

  /**
   * Starts a stream with the guard between it and its consumer. The channel's counting interceptor
   * reads the stream from the context to report the end of its call: gax creates the first
   * attempt's gRPC call on this thread, before the starter returns.
   */
  static StreamingCall start(
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      SpannerTuningState tuning,
      Starter starter) {
    return new GuardedStream(consumer, tuning).start(options, starter);
  }

  /** Starts this guarded stream's call, as {@link #start(ResultStreamConsumer, Map, ...)}. */
  StreamingCall start(Map<Option, ?> options, Starter starter) {
    Context context = Context.current().withValue(StreamLink.STARTING, this);
    Context previous = context.attach();
    StreamingCall call;
    try {
      call = starter.start(this, options);
    } finally {
      context.detach(previous);
    }
    return attach(call);
  }

  StreamingCall attach(StreamingCall call) {
    this.call = call;
    this.transportLinked = 1;
    return this;
  }

  /**
   * A cancel this stream sent is dropped once its call has closed: the guard's own (a close of an
   * open stream, a release, a drain's timeout) or a hedge's loser's. The close of an open stream
   * then counts as a skipped cancel: the stream had finished when the cancel would have gone out.
   * With the guard off, the application's close goes through as it does on the client.
   */
  @Override
  public boolean dropCancelOfClosedCall() {
    if (this.lost) {
      return true;
    }
    if (!this.tuning.isActive(Feature.STREAM_END_GUARD)) {
      return false;
    }
    if (this.closedOpen) {
      this.tuning.streamEndGuardSkipped();
    }
    return true;
  }

  /**
   * Whether the gRPC call now being created is this stream's first attempt, the one the interceptor
   * should report the end of. True once, and only while the stream is being started: a retry
   * attempt, or any call started later from a callback that runs in this stream's context, is not
   * linked, so an end seen on another call can never mark this stream finished.
   */
  @Override
  public boolean linkTransport() {
    return TRANSPORT_LINKED.compareAndSet(this, 0, 1);
  }

  /** This stream is a traced hedged read's attempt, before its call is made: see {@link #trace}. */
  void awaitSpan() {
    this.trace = AWAITING_SPAN;
  }

  /** Records how this stream ends on the client's span of it. */
  void trace(Span span) {
    if (TRACE.getAndSet(this, span) instanceof String decided) {
      Traces.streamEnd(span, decided);
    }
  }

  /** The client's span of this stream, or {@code null}. */
  private Span span() {
    return (this.trace instanceof Span span) ? span : null;
  }

  /**
   * Records how this stream ends, decided at {@code last}; a hedged read's attempt that has not won
   * yet keeps it for the span it is given when it does.
   */
  private void endedAtLast(String end) {
    Object trace = this.trace;
    if (trace == AWAITING_SPAN && TRACE.compareAndSet(this, AWAITING_SPAN, end)) {
      return;
    }
    Traces.streamEnd(span(), end);
  }

  /** The sub-channel the linked call was made on, or {@code null} before that or if unknown. */
  ChannelStats channel() {
    return this.channel;
  }

  /** The index of {@link #channel()}, as a span names it; {@link Traces#NO_CHANNEL} if none. */
  int channelIndex() {
    ChannelStats stats = this.channel;
    return (stats != null) ? stats.index() : Traces.NO_CHANNEL;
  }

  @Override
  public void onChannel(ChannelStats stats) {
    this.channel = stats;
  }

  /**
   * The linked gRPC call closed with status OK. An OK close ends a gax stream for good (gax retries
   * only failed attempts), so the stream is finished, though gax tells the consumer a little later.
   * Failed closes are not reported: a retry or resume may follow on a new call.
   */
  @Override
  public void transportClosedOk() {
    ended();
  }

  @Override
  public void onPartialResultSet(PartialResultSet results) {
    int current = this.phase;
    if (current >= DRAINING) {
      return;
    }
    // Before the consumer sees it: once it has, the application may close at once.
    if (results.getLast() && current == OPEN && PHASE.compareAndSet(this, OPEN, LAST)) {
      if (!this.tuning.guardFinishesAtLast()) {
        this.consumer.onPartialResultSet(results);
        return;
      }
      boolean release = releasesAtLast();
      // On the span before the consumer has the message too: the application may then close the
      // result set, and the client end its span, before this thread goes on. A hedged read's
      // attempt learns its span as it wins, while the consumer is handed the message.
      if (this.phase == LAST) {
        endedAtLast(release ? Traces.RELEASED_AT_SLOT_LIMIT : Traces.DRAINED);
      }
      this.consumer.onPartialResultSet(results);
      finishedAtLast(release);
      return;
    }
    if (current == ENDED && results.getLast() && this.tuning.guardFinishesAtLast()) {
      // gax hands on the last message after the trailers: nothing was left to drain.
      endedAtLast(Traces.DRAINED);
    }
    this.consumer.onPartialResultSet(results);
  }

  /**
   * Whether a stream that finished at {@code last} is released at once rather than drained: its
   * connection has no stream slot to spare, and its budget of resets allows one.
   */
  private boolean releasesAtLast() {
    ChannelStats stats = this.channel;
    return this.call != null
        && stats != null
        && stats.activeStreams() > this.tuning.drainWhileInFlightAtMost()
        && this.tuning.mayRelease(stats);
  }

  /**
   * The consumer holds the message marked {@code last}, on a client that will not cancel this call
   * once its iterator takes it: release the stream's slot at once if it was decided to ({@link
   * #releasesAtLast()}), or else drain it with the timeout.
   */
  private void finishedAtLast(boolean release) {
    ChannelStats stats = this.channel;
    if (release) {
      if (PHASE.compareAndSet(this, LAST, CLOSED)) {
        this.tuning.streamEndGuardCancelledAtLimit();
        this.call.cancel(
            "spanner-tuning: the stream finished at its last message and its connection has no"
                + " stream slot to spare");
      } else {
        endedMeanwhile();
      }
      return;
    }
    this.drainingAtLast = true;
    if (stats != null) {
      stats.incrementDraining();
    }
    if (PHASE.compareAndSet(this, LAST, DRAINING)) {
      startDraining();
    } else {
      // The call ended, or the client closed the stream before it took last, meanwhile: that
      // close decided, and a drain it started skipped the client's cancel.
      this.drainingAtLast = false;
      if (stats != null) {
        stats.decrementDraining();
      }
      endedMeanwhile();
    }
  }

  /**
   * The stream left {@code LAST} while it was being decided at {@code last}: a close by the client
   * recorded its own decision; trailers that came meant nothing was left to drain.
   */
  private void endedMeanwhile() {
    if (this.phase == ENDED) {
      Traces.streamEnd(span(), Traces.DRAINED);
    }
  }

  @Override
  public void onCompleted() {
    if (ended()) {
      this.consumer.onCompleted();
    }
  }

  @Override
  public void onError(SpannerException e) {
    if (this.trace != null) {
      // A failed stream's close ends nothing.
      this.trace = null;
    }
    if (ended()) {
      this.consumer.onError(e);
    }
  }

  @Override
  public boolean cancelQueryWhenClientIsClosed() {
    return this.consumer.cancelQueryWhenClientIsClosed();
  }

  @Override
  public ApiCallContext getCallContext() {
    return this.call.getCallContext();
  }

  /**
   * The client's iterator asks for more messages as it takes each one. A draining or closed stream
   * has none to come.
   */
  @Override
  public void request(int numMessages) {
    if (this.phase < DRAINING) {
      this.call.request(numMessages);
    }
  }

  /**
   * The application closed the stream. Only the first close counts: the client's iterator is not
   * read after it, so later callbacks are dropped.
   */
  @Override
  public void cancel(String message) {
    close(message, this.tuning.isActive(Feature.STREAM_END_GUARD));
  }

  /**
   * This stream lost a hedged read's race: the application reads the other attempt, and nothing
   * more of this one reaches it. A stream that finished at {@code last} drains as the guard's close
   * there does, whatever the guard's switch. One still running is cancelled if its connection's
   * budget of resets allows ({@link SpannerTuningState#mayRelease}, the budget the guard's releases
   * take from too); otherwise it is left to run to its end, what it still sends dropped, and
   * cancelled only at the drain timeout, as a finished stream whose trailers never come is. So
   * hedging brings no server's reset limit closer than the guard does.
   */
  void abandon() {
    this.lost = true;
    if (this.trace != null) {
      // The application reads the other attempt: this one's end is not the read's.
      this.trace = null;
    }
    while (true) {
      int current = this.phase;
      if (current == LAST) {
        close("spanner-tuning: another attempt of this hedged read answered first", true);
        return;
      }
      if (current == ENDED) {
        if (PHASE.compareAndSet(this, ENDED, CLOSED)) {
          return;
        }
        continue;
      }
      if (current != OPEN) {
        return;
      }
      ChannelStats stats = this.channel;
      if (stats != null && this.tuning.mayRelease(stats)) {
        if (PHASE.compareAndSet(this, OPEN, CLOSED)) {
          this.tuning.hedging().loserCancelled();
          this.call.cancel("spanner-tuning: another attempt of this hedged read answered first");
          return;
        }
        continue;
      }
      this.abandoned = true;
      if (stats != null) {
        stats.incrementDraining();
      }
      if (PHASE.compareAndSet(this, OPEN, DRAINING)) {
        this.call.request(READ_TO_END);
        startDraining();
        return;
      }
      this.abandoned = false;
      if (stats != null) {
        stats.decrementDraining();
      }
    }
  }

  /** A close by the application, or of a hedge's loser, with the guard on or off. */
  private void close(String message, boolean guard) {
    while (true) {
      int current = this.phase;
      if (current >= DRAINING) {
        return;
      }
      if (current == LAST && guard) {
        ChannelStats stats = this.channel;
        if (stats != null && stats.activeStreams() > this.tuning.drainWhileInFlightAtMost()) {
          if (PHASE.compareAndSet(this, LAST, CLOSED)) {
            this.tuning.streamEndGuardCancelledAtLimit();
            Traces.streamEnd(span(), Traces.RELEASED_AT_SLOT_LIMIT);
            this.call.cancel(message);
            return;
          }
          continue;
        }
        // Counted before the phase moves: the trailers may end the drain at once.
        if (stats != null) {
          stats.incrementDraining();
        }
        if (PHASE.compareAndSet(this, LAST, DRAINING)) {
          Traces.streamEnd(span(), Traces.DRAINED);
          startDraining();
          return;
        }
        if (stats != null) {
          // The call ended meanwhile: the loop skips its cancel without draining.
          stats.decrementDraining();
        }
      } else if (PHASE.compareAndSet(this, current, CLOSED)) {
        if (current == ENDED && guard) {
          this.tuning.streamEndGuardSkipped();
          // Its trailers came before the close: a drain that was over at once.
          Traces.streamEnd(span(), Traces.DRAINED);
        } else {
          Traces.streamEnd(span(), Traces.CANCELLED);
          this.closedOpen = guard;
          this.call.cancel(message);
        }
        return;
      }
    }
  }

  /**
   * Records that the call ended, and whether to tell the consumer. A stream that was draining is
   * done: its cancel was skipped for good.
   */
  private boolean ended() {
    while (true) {
      int current = this.phase;
      if (current == ENDED) {
        return true;
      }
      if (current == CLOSED) {
        return false;
      }
      if (current == DRAINING) {
        if (PHASE.compareAndSet(this, DRAINING, CLOSED)) {
          ScheduledFuture<?> timer = this.drainTimer;
          if (timer != null) {
            timer.cancel(false);
          }
          drainingEnded();
          if (!this.abandoned) {
            if (!this.drainingAtLast) {
              // At last on a client that drops its call there, the skip was the client's.
              this.tuning.streamEndGuardSkipped();
            }
            this.tuning.streamEndGuardDrained();
          }
          return false;
        }
      } else if (PHASE.compareAndSet(this, current, ENDED)) {
        return true;
      }
    }
  }

  private void startDraining() {
    ScheduledFuture<?> timer =
        TuningTimer.schedule(this::drainTimedOut, this.tuning.drainTimeoutNanos());
    this.drainTimer = timer;
    // The trailers may have arrived while the timer was being scheduled.
    if (this.phase != DRAINING) {
      timer.cancel(false);
    }
  }

  private void drainTimedOut() {
    if (PHASE.compareAndSet(this, DRAINING, CLOSED)) {
      drainingEnded();
      if (!this.abandoned) {
        this.tuning.streamEndGuardDrainTimedOut();
        // Where the client ended its span at the close, only the meter counts this.
        Traces.streamEnd(span(), Traces.DRAIN_TIMEOUT);
      }
      StreamingCall started = this.call;
      if (started != null) {
        started.cancel("spanner-tuning: no trailers within the stream-end guard's drain timeout");
      }
    }
  }

  /** Leaving DRAINING happens once, by a compare and set: so does this. */
  private void drainingEnded() {
    ChannelStats stats = this.channel;
    if (stats != null) {
      stats.decrementDraining();
    }
  }
}
