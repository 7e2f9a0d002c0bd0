package io.github.spannertuning.benchmarks;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import jdk.jfr.consumer.RecordingStream;

/**
 * What the client JVM spends over a measurement window: process CPU time (all threads, from the
 * OS), bytes allocated (sum of {@code com.sun.management.ThreadMXBean} per-thread counters over all
 * live threads), and throwables created (JFR {@code jdk.ExceptionStatistics}, a JVM-wide counter
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

  /** A reading at one instant; the difference of two is a window's cost. */
  record Reading(long cpuNanos, long allocatedBytes, long throwables) {

    Reading minus(Reading start) {
      return new Reading(
          this.cpuNanos - start.cpuNanos,
          this.allocatedBytes - start.allocatedBytes,
          this.throwables - start.throwables);
    }

    Reading plus(Reading other) {
      return new Reading(
          this.cpuNanos + other.cpuNanos,
          this.allocatedBytes + other.allocatedBytes,
          this.throwables + other.throwables);
    }
  }

  static final Reading ZERO = new Reading(0, 0, 0);

  /** At a window's start: waits for a throwables sample that covers everything before it. */
  Reading start() throws InterruptedException {
    long throwables = settledThrowables();
    return new Reading(this.os.getProcessCpuTime(), allocated(), throwables);
  }

  /** At a window's end: CPU and allocation now, throwables from the next sample. */
  Reading end() throws InterruptedException {
    long cpu = this.os.getProcessCpuTime();
    long allocated = allocated();
    return new Reading(cpu, allocated, settledThrowables());
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

  private long allocated() {
    long[] ids = this.threads.getAllThreadIds();
    long total = 0;
    for (long bytes : this.threads.getThreadAllocatedBytes(ids)) {
      if (bytes > 0) {
        total += bytes;
      }
    }
    return total;
  }

  @Override
  public void close() {
    this.stream.close();
  }
}
