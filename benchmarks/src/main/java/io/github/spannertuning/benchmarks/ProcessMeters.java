package io.github.spannertuning.benchmarks;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.consumer.RecordingStream;

/**
 * What the client JVM spends over a measurement window: process CPU time (all threads, from the
 * OS), bytes allocated ({@code com.sun.management.ThreadMXBean} per-thread counters, summed over
 * the threads alive at the window's end), and throwables created (JFR {@code jdk.ExceptionStatistics}, a JVM-wide counter
 * sampled every 20 ms). The frontend runs in another JVM, so none of this is the server's.
 */
final class ProcessMeters implements AutoCloseable {

  /** Long enough for the next {@code jdk.ExceptionStatistics} sample to be delivered. */
  private static final long SETTLE_MILLIS = 120;

  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private final com.sun.management.ThreadMXBean threads =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  private final AtomicLong throwables = new AtomicLong(-1);

  private final RecordingStream stream = new RecordingStream();

  ProcessMeters() {
    this.threads.setThreadAllocatedMemoryEnabled(true);
    this.stream.enable("jdk.ExceptionStatistics").withPeriod(Duration.ofMillis(20));
    this.stream.onEvent(
        "jdk.ExceptionStatistics", (event) -> this.throwables.set(event.getLong("throwables")));
    this.stream.startAsync();
  }

  /** What a window cost. */
  record Reading(long cpuNanos, long allocatedBytes, long throwables) {

    Reading plus(Reading other) {
      return new Reading(
          this.cpuNanos + other.cpuNanos,
          this.allocatedBytes + other.allocatedBytes,
          this.throwables + other.throwables);
    }
  }

  static final Reading ZERO = new Reading(0, 0, 0);

  /** The counters at a window's start. */
  record Snapshot(long cpuNanos, Map<Long, Long> allocatedByThread, long throwables) {}

  /** At a window's start: waits for a throwables sample that covers everything before it. */
  Snapshot start() throws InterruptedException {
    long throwables = settledThrowables();
    return new Snapshot(this.os.getProcessCpuTime(), allocatedByThread(), throwables);
  }

  /**
   * At a window's end: what the window cost. Allocation is summed per thread over the threads
   * alive at the end (a thread started in the window counts from zero), so the caller keeps its
   * load threads alive until this returns; a thread that ended inside the window is not counted.
   */
  Reading end(Snapshot start) throws InterruptedException {
    long cpu = this.os.getProcessCpuTime();
    long allocated = 0;
    for (Map.Entry<Long, Long> thread : allocatedByThread().entrySet()) {
      allocated += thread.getValue() - start.allocatedByThread().getOrDefault(thread.getKey(), 0L);
    }
    return new Reading(
        cpu - start.cpuNanos(), allocated, settledThrowables() - start.throwables());
  }

  private long settledThrowables() throws InterruptedException {
    Thread.sleep(SETTLE_MILLIS);
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (this.throwables.get() < 0) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("JFR delivered no jdk.ExceptionStatistics event");
      }
      Thread.sleep(20);
    }
    return this.throwables.get();
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
