package io.github.spannertuning.testing;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Collection;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * How one method of {@link MockSpannerService} behaves beyond its result: a time it takes before
 * answering (scheduled, no thread is held) and errors it returns, each once, at the start of a call
 * or after a stream's first messages. On top of the server's own {@link
 * MockSpannerServer.ServiceTime service time}.
 */
public final class SimulatedExecutionTime {

  private static final long NO_STREAM_INDEX = -1;

  private final int minimumMillis;

  private final int randomMillis;

  private final Queue<Exception> exceptions;

  private final long streamIndex;

  private SimulatedExecutionTime(
      int minimumMillis,
      int randomMillis,
      Collection<? extends Exception> exceptions,
      long streamIndex) {
    this.minimumMillis = minimumMillis;
    this.randomMillis = randomMillis;
    this.exceptions = new ConcurrentLinkedQueue<>(exceptions);
    this.streamIndex = streamIndex;
  }

  /** Answers at once, without errors. */
  public static SimulatedExecutionTime none() {
    return new SimulatedExecutionTime(0, 0, List.of(), NO_STREAM_INDEX);
  }

  /** Answers after {@code minimumMillis} plus up to {@code randomMillis}, drawn per call. */
  public static SimulatedExecutionTime ofMinimumAndRandomTime(int minimumMillis, int randomMillis) {
    return new SimulatedExecutionTime(minimumMillis, randomMillis, List.of(), NO_STREAM_INDEX);
  }

  /**
   * The next stream of the method sends {@code streamIndex} messages and then fails with {@code
   * exception}; later streams succeed.
   */
  public static SimulatedExecutionTime ofStreamException(Exception exception, long streamIndex) {
    return new SimulatedExecutionTime(0, 0, List.of(exception), streamIndex);
  }

  /** The next calls of the method fail, one with each of these exceptions, in order. */
  public static SimulatedExecutionTime ofExceptions(Collection<? extends Exception> exceptions) {
    return new SimulatedExecutionTime(0, 0, exceptions, NO_STREAM_INDEX);
  }

  long delayNanos() {
    long millis =
        this.minimumMillis
            + ((this.randomMillis == 0)
                ? 0
                : ThreadLocalRandom.current().nextInt(this.randomMillis));
    return TimeUnit.MILLISECONDS.toNanos(millis);
  }

  /** The error this call fails with at its start, or {@code null}. */
  StatusRuntimeException takeCallException() {
    return (this.streamIndex == NO_STREAM_INDEX) ? status(this.exceptions.poll()) : null;
  }

  /** The error a stream fails with instead of its message {@code index}, or {@code null}. */
  StatusRuntimeException takeStreamException(long index) {
    return (index == this.streamIndex) ? status(this.exceptions.poll()) : null;
  }

  private static StatusRuntimeException status(Exception exception) {
    if (exception == null || exception instanceof StatusRuntimeException) {
      return (StatusRuntimeException) exception;
    }
    return Status.INTERNAL
        .withDescription(exception.getMessage())
        .withCause(exception)
        .asRuntimeException();
  }
}
