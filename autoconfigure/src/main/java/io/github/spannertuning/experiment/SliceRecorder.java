package io.github.spannertuning.experiment;

import io.github.spannertuning.experiment.SliceSummary.KindSlice;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.HdrHistogram.AtomicHistogram;
import org.HdrHistogram.WriterReaderPhaser;

/**
 * Records the calls of the slice being run, on every RPC, with no lock and no allocation: one
 * histogram record per call, a counter increment for a failed one, and a word to its {@link
 * RecordedCallListener}.
 *
 * <p>One window of counters is reused for every slice. The timer thread opens it once a slice's
 * carry-over is over, and closes it at the slice's end: it unpublishes the window, waits through
 * HdrHistogram's {@link WriterReaderPhaser} for any record already under way (a wait-free enter and
 * exit per record, two atomic increments), and reads it. Records during the carry-over find no
 * window and cost one volatile read; a call that began before its window opened is dropped, so no
 * call that started in the other arm or in the carry-over is counted, however long it ran.
 *
 * <p>Why HdrHistogram, and not Micrometer's {@code Timer}: a slice needs the exact P50 and P99 of
 * its own calls, from its window's opening to its end. A {@code Timer}'s client-side percentiles
 * come from a ring of three HdrHistogram recorders rotated every 40 s by default ({@code expiry} 2
 * min over {@code bufferLength} 3), each value recorded in all three, at one significant digit: a
 * snapshot at a slice's end covers a window that does not line up with the slice and includes the
 * previous arm's calls, and the percentile values it gives cannot be merged or split by slice. Its
 * percentile histogram has fixed buckets, nine to a power of four, up to a third of their value
 * wide. Here an {@link AtomicHistogram} of two significant digits (within 1 %) per kind holds
 * exactly one slice.
 */
final class SliceRecorder {

  /** Latencies are told apart from 1 µs; anything shorter counts as that. */
  static final long LOWEST_NANOS = TimeUnit.MICROSECONDS.toNanos(1);

  /** Latencies above an hour count as an hour. */
  static final long HIGHEST_NANOS = TimeUnit.HOURS.toNanos(1);

  /** Two significant digits: values within 1 %, in about 26 KB per histogram. */
  static final int SIGNIFICANT_DIGITS = 2;

  /** gRPC's status codes, OK (0) to UNAUTHENTICATED (16). */
  static final int STATUS_CODES = 17;

  /** Where a status code outside gRPC's is counted: UNKNOWN. */
  private static final int UNKNOWN = 2;

  private final WriterReaderPhaser phaser = new WriterReaderPhaser();

  private final Window window = new Window();

  private final RecordedCallListener listener;

  /** The window being recorded, or {@code null} between slices and in a carry-over. */
  private volatile Window active;

  /**
   * @param listener told of each call a window records, before the window can close: what it was
   *     told of is exactly what the slices hold
   */
  SliceRecorder(RecordedCallListener listener) {
    this.listener = listener;
  }

  /**
   * A call of {@code kind} that ran from {@code startNanos} to {@code endNanos} ({@link
   * System#nanoTime()}, the clock the experiment runs on) and ended with gRPC status code {@code
   * statusCode} (0 for OK).
   */
  void record(CallKind kind, long startNanos, long endNanos, int statusCode) {
    if (this.active == null) {
      return;
    }
    long phase = this.phaser.writerCriticalSectionEnter();
    try {
      Window recording = this.active;
      if (recording != null && startNanos - recording.fromNanos >= 0) {
        long nanos = Math.min(Math.max(endNanos - startNanos, 0), HIGHEST_NANOS);
        recording.kinds[kind.ordinal()].record(nanos, statusCode);
        this.listener.recorded(kind, recording.arm, nanos);
      }
    } finally {
      this.phaser.writerCriticalSectionExit(phase);
    }
  }

  /** The client sent a cancel for a stream that had finished. */
  void cancelOfFinishedStream() {
    if (this.active == null) {
      return;
    }
    long phase = this.phaser.writerCriticalSectionEnter();
    try {
      Window recording = this.active;
      if (recording != null) {
        recording.cancelsOfFinishedStreams.incrementAndGet();
      }
    } finally {
      this.phaser.writerCriticalSectionExit(phase);
    }
  }

  /** The client saw a GOAWAY. */
  void goAway() {
    if (this.active == null) {
      return;
    }
    long phase = this.phaser.writerCriticalSectionEnter();
    try {
      Window recording = this.active;
      if (recording != null) {
        recording.goAways.incrementAndGet();
      }
    } finally {
      this.phaser.writerCriticalSectionExit(phase);
    }
  }

  /**
   * Starts recording, for a slice of {@code arm}, calls that start from {@code nowNanos} on. Only
   * from the thread that closes; the window is closed, so no record is under way in it.
   */
  void open(long nowNanos, Arm arm) {
    this.window.reset(nowNanos, arm);
    this.active = this.window;
  }

  /** Stops recording, and returns what the window holds; {@code null} when none was open. */
  SliceSummary close(int index, long nowNanos) {
    this.phaser.readerLock();
    try {
      Window closing = this.active;
      this.active = null;
      this.phaser.flipPhase();
      return (closing != null) ? closing.summarize(index, nowNanos) : null;
    } finally {
      this.phaser.readerUnlock();
    }
  }

  private static final class Window {

    private final KindCounts[] kinds = new KindCounts[CallKind.values().length];

    private final AtomicLong cancelsOfFinishedStreams = new AtomicLong();

    private final AtomicLong goAways = new AtomicLong();

    /** Written before the window is published, read after it is; so is {@link #arm}. */
    private long fromNanos;

    private Arm arm;

    Window() {
      for (int i = 0; i < this.kinds.length; i++) {
        this.kinds[i] = new KindCounts();
      }
    }

    void reset(long nowNanos, Arm arm) {
      for (KindCounts counts : this.kinds) {
        counts.reset();
      }
      this.cancelsOfFinishedStreams.set(0);
      this.goAways.set(0);
      this.fromNanos = nowNanos;
      this.arm = arm;
    }

    SliceSummary summarize(int index, long nowNanos) {
      List<KindSlice> summaries = new ArrayList<>(this.kinds.length);
      for (KindCounts counts : this.kinds) {
        summaries.add(counts.summarize());
      }
      return new SliceSummary(
          index,
          this.arm,
          nowNanos - this.fromNanos,
          summaries,
          this.cancelsOfFinishedStreams.get(),
          this.goAways.get());
    }
  }

  private static final class KindCounts {

    private final AtomicHistogram latency =
        new AtomicHistogram(LOWEST_NANOS, HIGHEST_NANOS, SIGNIFICANT_DIGITS);

    private final AtomicLongArray failedByCode = new AtomicLongArray(STATUS_CODES);

    void record(long nanos, int statusCode) {
      this.latency.recordValue(nanos);
      if (statusCode != 0) {
        this.failedByCode.incrementAndGet(
            (statusCode > 0 && statusCode < STATUS_CODES) ? statusCode : UNKNOWN);
      }
    }

    void reset() {
      this.latency.reset();
      for (int code = 0; code < STATUS_CODES; code++) {
        this.failedByCode.set(code, 0);
      }
    }

    KindSlice summarize() {
      long calls = this.latency.getTotalCount();
      long[] byCode = new long[STATUS_CODES];
      long failed = 0;
      for (int code = 1; code < STATUS_CODES; code++) {
        byCode[code] = this.failedByCode.get(code);
        failed += byCode[code];
      }
      if (calls == 0) {
        return new KindSlice(0, 0, 0, 0, failed, byCode);
      }
      long p50 = this.latency.getValueAtPercentile(50);
      long p99 = this.latency.getValueAtPercentile(99);
      long tail = calls - this.latency.getCountBetweenValues(0, p99);
      return new KindSlice(calls, p50, p99, tail, failed, byCode);
    }
  }
}
