package io.github.spannertuning.client;

import com.google.cloud.spanner.ErrorCode;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * The operations of streams that ended with an error the client may resume them after, by the
 * request id object the client hands each attempt of one stream ({@code ResumableStreamIterator}
 * keeps one per stream and counts its attempts on it). The next attempt of such a stream takes its
 * operation back, so that a resumed stream is one operation of several attempts. An operation no
 * attempt takes back within {@link #ABANDONED_NANOS} ends with its error. The happy path pays one
 * volatile read: the table is looked at only while it holds something.
 */
final class ResumedStreams {

  /** How long an error's operation waits for the stream's next attempt. */
  static final long ABANDONED_NANOS = 60_000_000_000L;

  private final Map<Object, Parked> parked = new IdentityHashMap<>();

  private volatile int size;

  /** Whether the client resumes or retries a stream after an error of this code. */
  static boolean mayResume(ErrorCode code) {
    return code == ErrorCode.UNAVAILABLE
        || code == ErrorCode.INTERNAL
        || code == ErrorCode.RESOURCE_EXHAUSTED;
  }

  /** Keeps an operation for the stream's next attempt; false where it cannot be kept. */
  synchronized boolean park(Object requestId, CallObserver.Call operation, String errorType) {
    long now = System.nanoTime();
    endAbandoned(now);
    this.parked.put(requestId, new Parked(operation, errorType, now));
    this.size = this.parked.size();
    return true;
  }

  /** The operation a stream's earlier attempt left for this one; {@code null} for a new stream. */
  CallObserver.Call resume(Object requestId) {
    if (this.size == 0 || requestId == null) {
      return null;
    }
    synchronized (this) {
      Parked parked = this.parked.remove(requestId);
      endAbandoned(System.nanoTime());
      this.size = this.parked.size();
      return (parked != null) ? parked.operation : null;
    }
  }

  /**
   * Ends the operation an errored attempt of this stream left, with its error: the application
   * closed the stream rather than wait for another attempt. Returns whether there was one.
   */
  boolean endParked(Object requestId) {
    if (this.size == 0 || requestId == null) {
      return false;
    }
    Parked parked;
    synchronized (this) {
      parked = this.parked.remove(requestId);
      this.size = this.parked.size();
    }
    if (parked == null) {
      return false;
    }
    parked.operation.stop(parked.errorType);
    return true;
  }

  private void endAbandoned(long now) {
    Iterator<Parked> iterator = this.parked.values().iterator();
    while (iterator.hasNext()) {
      Parked parked = iterator.next();
      if (now - parked.sinceNanos >= ABANDONED_NANOS) {
        iterator.remove();
        parked.operation.stop(parked.errorType);
      }
    }
  }

  private record Parked(CallObserver.Call operation, String errorType, long sinceNanos) {}
}
