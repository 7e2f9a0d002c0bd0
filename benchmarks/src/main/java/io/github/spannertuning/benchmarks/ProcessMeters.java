package io.github.spannertuning.benchmarks;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import jdk.jfr.consumer.RecordingStream;

/**
 * What the client JVM spends over a measurement window: process CPU time (all threads, from the
 * OS), bytes allocated ({@code com.sun.management.ThreadMXBean} per-thread counters, summed over
 * the threads alive at the window's end), and throwables created (JFR {@code
 * jdk.ExceptionStatistics}, a JVM-wide counter sampled every 20 ms). The frontend runs in another
 * JVM, so none of this is the server's.
 *
 * <p>A JFR stream delivers its events in batches about once a second, so the newest sample
 * delivered can be a second old: the counter is read from the samples taken just before the
 * window's start and just after its end, by their timestamps, never as "the latest one seen".
 */
final class ProcessMeters implements AutoCloseable {

  /**
   * Lets the throwables of what came just before the window (a warm-up's pool) be created first.
   */
  private static final long SETTLE_MILLIS = 50;

  /** Samples older than this are dropped; a window and its drain are far shorter. */
  private static final Duration KEEP = Duration.ofMinutes(10);

  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private final com.sun.management.ThreadMXBean threads =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** {@code jdk.ExceptionStatistics} samples in time order: when, and the counter then. */
  private final Deque<Sample> samples = new ArrayDeque<>();

  private record Sample(Instant time, long throwables) {}

  private final RecordingStream stream = new RecordingStream();

  ProcessMeters() {
    this.threads.setThreadAllocatedMemoryEnabled(true);
    this.stream.enable("jdk.ExceptionStatistics").withPeriod(Duration.ofMillis(20));
    this.stream.onEvent(
        "jdk.ExceptionStatistics",
        (event) -> add(new Sample(event.getStartTime(), event.getLong("throwables"))));
    this.stream.startAsync();
  }

  /** What a window cost; {@link #NOT_MEASURED} throwables where JFR gave no sample to count by. */
  record Reading(long cpuNanos, long allocatedBytes, long throwables) {

    Reading plus(Reading other) {
      return new Reading(
          this.cpuNanos + other.cpuNanos,
          this.allocatedBytes + other.allocatedBytes,
          (this.throwables < 0 || other.throwables < 0)
              ? NOT_MEASURED
              : this.throwables + other.throwables);
    }
  }

  /** A count that could not be taken: reported as missing, never as a number. */
  static final long NOT_MEASURED = -1;

  static final Reading ZERO = new Reading(0, 0, 0);

  /** The counters at a window's start. */
  record Snapshot(long cpuNanos, Map<Long, Long> allocatedByThread, Instant time) {}

  /** At a window's start. */
  Snapshot start() throws InterruptedException {
    Thread.sleep(SETTLE_MILLIS);
    return new Snapshot(this.os.getProcessCpuTime(), allocatedByThread(), Instant.now());
  }

  /**
   * At a window's end: what the window cost. Allocation is summed per thread over the threads alive
   * at the end (a thread started in the window counts from zero), so the caller keeps its load
   * threads alive until this returns; a thread that ended inside the window is not counted.
   */
  Reading end(Snapshot start) throws InterruptedException {
    long cpu = this.os.getProcessCpuTime();
    Instant end = Instant.now();
    long allocated = 0;
    for (Map.Entry<Long, Long> thread : allocatedByThread().entrySet()) {
      allocated += thread.getValue() - start.allocatedByThread().getOrDefault(thread.getKey(), 0L);
    }
    return new Reading(cpu - start.cpuNanos(), allocated, throwablesBetween(start.time(), end));
  }

  /**
   * From the last sample at or before {@code from} to the first at or after {@code to}; {@link
   * #NOT_MEASURED} when JFR delivers none after {@code to} within 5 s (its periodic events can
   * starve on a saturated core), so that one missing figure does not end the run.
   */
  private long throwablesBetween(Instant from, Instant to) throws InterruptedException {
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (true) {
      synchronized (this.samples) {
        if (!this.samples.isEmpty() && !this.samples.getLast().time().isBefore(to)) {
          Sample before = this.samples.getFirst();
          Sample after = null;
          for (Sample sample : this.samples) {
            if (!sample.time().isAfter(from)) {
              before = sample;
            }
            if (after == null && !sample.time().isBefore(to)) {
              after = sample;
            }
          }
          return after.throwables() - before.throwables();
        }
      }
      if (System.nanoTime() > deadline) {
        System.err.println(
            "JFR delivered no jdk.ExceptionStatistics event within 5 s after "
                + to
                + ": this window's throwables are reported as n/a");
        return NOT_MEASURED;
      }
      Thread.sleep(20);
    }
  }

  private void add(Sample sample) {
    synchronized (this.samples) {
      this.samples.addLast(sample);
      Instant oldest = sample.time().minus(KEEP);
      while (this.samples.getFirst().time().isBefore(oldest)) {
        this.samples.removeFirst();
      }
    }
  }

  private Map<Long, Long> allocatedByThread() {
    long[] ids = this.threads.getAllThreadIds();
    long[] bytes = this.threads.getThreadAllocatedBytes(ids);
    Map<Long, Long> byThread = new HashMap<>();
    for (int i = 0; i < ids.length; i++) {
      if (bytes[i] >= 0) {
        byThread.put(ids[i], bytes[i]);
      }
    }
    return byThread;
  }

  @Override
  public void close() {
    this.stream.close();
  }
}
