package io.github.spannertuning.testing;

import com.google.spanner.v1.PartialResultSet;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Ends streams the way Spanner does: the final message carries {@code last = true} and the trailers
 * follow after a delay. Counts the streams that have sent their final message and wait for their
 * trailers, each holding a stream slot of its connection.
 */
final class StreamEndings {

  private final ScheduledExecutorService scheduler;

  private final AtomicInteger awaitingTrailers = new AtomicInteger();

  private final AtomicInteger maxAwaitingTrailers = new AtomicInteger();

  private volatile boolean markLast;

  private volatile long trailersDelayNanos;

  StreamEndings(ScheduledExecutorService scheduler, boolean markLast, Duration trailersDelay) {
    this.scheduler = scheduler;
    this.markLast = markLast;
    setTrailersDelay(trailersDelay);
  }

  void setMarkLast(boolean markLast) {
    this.markLast = markLast;
  }

  /** {@link MockSpannerServer#TRAILERS_NEVER} keeps the trailers back until the client cancels. */
  void setTrailersDelay(Duration delay) {
    this.trailersDelayNanos = delay.equals(MockSpannerServer.TRAILERS_NEVER) ? -1 : delay.toNanos();
  }

  int awaitingTrailers() {
    return this.awaitingTrailers.get();
  }

  int maxAwaitingTrailers() {
    return this.maxAwaitingTrailers.get();
  }

  /** The most awaiting at once counts again from the streams awaiting now. */
  void reset() {
    this.maxAwaitingTrailers.set(this.awaitingTrailers.get());
  }

  <ReqT, RespT> StreamEnding<ReqT, RespT> wrap(ServerCall<ReqT, RespT> call) {
    return new StreamEnding<>(call);
  }

  /**
   * One stream. It holds back one message so that it can mark the final one when the stream closes;
   * the trailers are sent from the scheduler, holding no thread meanwhile.
   */
  final class StreamEnding<ReqT, RespT> extends SimpleForwardingServerCall<ReqT, RespT> {

    private RespT held;

    /** Counted in {@link #awaitingTrailers}: ended OK, trailers neither sent nor cancelled. */
    private final AtomicBoolean awaiting = new AtomicBoolean();

    private StreamEnding(ServerCall<ReqT, RespT> delegate) {
      super(delegate);
    }

    @Override
    public void sendMessage(RespT message) {
      if (this.held != null) {
        super.sendMessage(this.held);
      }
      this.held = message;
    }

    @Override
    public void close(Status status, Metadata trailers) {
      RespT last = this.held;
      this.held = null;
      boolean ended = status.isOk();
      long delay = trailersDelayNanos;
      // Counted before the final message goes out: the client may cancel as soon as it has it.
      if (ended && delay != 0) {
        this.awaiting.set(true);
        maxAwaitingTrailers.accumulateAndGet(awaitingTrailers.incrementAndGet(), Math::max);
      }
      if (last != null) {
        super.sendMessage((ended && markLast) ? markedLast(last) : last);
      }
      if (ended && delay > 0) {
        scheduler.schedule(
            () -> {
              trailersDone();
              super.close(status, trailers);
            },
            delay,
            TimeUnit.NANOSECONDS);
      } else if (!ended || delay == 0) {
        super.close(status, trailers);
      }
    }

    /** The trailers went out, or the client cancelled: the stream no longer waits for them. */
    void trailersDone() {
      if (this.awaiting.compareAndSet(true, false)) {
        awaitingTrailers.decrementAndGet();
      }
    }

    @SuppressWarnings("unchecked")
    private RespT markedLast(RespT message) {
      return (message instanceof PartialResultSet results)
          ? (RespT) results.toBuilder().setLast(true).build()
          : message;
    }
  }
}
