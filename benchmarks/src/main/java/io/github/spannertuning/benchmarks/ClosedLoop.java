package io.github.spannertuning.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;

/**
 * Runs one measurement window closed loop: each thread sends its next point select as soon as the
 * last one returned, so the window measures how many queries the client gets through, and latency
 * is taken from each query's start. The threads are started before the window and stopped only on
 * {@link #close()}, as {@link OpenLoop}'s are.
 */
final class ClosedLoop implements AutoCloseable {

  private final int threads;

  private final ExecutorService pool;

  ClosedLoop(int threads) {
    this.threads = threads;
    AtomicInteger threadNumber = new AtomicInteger();
    this.pool =
        Executors.newFixedThreadPool(
            threads,
            (runnable) -> {
              Thread thread = new Thread(runnable, "closed-loop-" + threadNumber.incrementAndGet());
              thread.setDaemon(true);
              return thread;
            });
    List<Future<?>> started = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      started.add(this.pool.submit(() -> {}));
    }
    started.forEach(ClosedLoop::join);
  }

  /** Runs the task once on each of the loop's threads, before the window. */
  void onEachThread(Runnable task) throws InterruptedException {
    OpenLoop.onEachThread(this.pool, this.threads, task);
  }

  OpenLoop.Window run(BenchClient client, double seconds, double bucketSeconds)
      throws InterruptedException {
    return run(client, seconds, bucketSeconds, null);
  }

  /**
   * As {@link #run(BenchClient, double, double)}; with phases, the threads past the low phase's
   * count stop at the end of the high phase, and the window lasts both.
   */
  OpenLoop.Window run(
      BenchClient client, double seconds, double bucketSeconds, Workload.Phases phases)
      throws InterruptedException {
    Histogram latency = new Histogram(3);
    Histogram[] series = new Histogram[(int) Math.ceil(seconds / bucketSeconds)];
    for (int i = 0; i < series.length; i++) {
      series[i] = new Histogram(2);
    }
    AtomicLong ops = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    String[] firstError = new String[1];
    long bucketNanos = (long) (bucketSeconds * 1e9);
    long origin = System.nanoTime();
    long end = origin + (long) (seconds * 1e9);
    long highEnd = (phases == null) ? end : origin + (long) (phases.highSeconds() * 1e9);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < this.threads; t++) {
      long threadEnd = (phases == null || t < phases.lowThreads()) ? end : highEnd;
      workers.add(
          this.pool.submit(
              () -> {
                long start;
                while ((start = System.nanoTime()) - threadEnd < 0) {
                  try {
                    client.pointSelect();
                    long micros = Math.max(1, (System.nanoTime() - start) / 1000);
                    ops.incrementAndGet();
                    int bucket = (int) Math.min(series.length - 1, (start - origin) / bucketNanos);
                    synchronized (latency) {
                      latency.recordValue(micros);
                      series[bucket].recordValue(micros);
                    }
                  } catch (RuntimeException ex) {
                    synchronized (latency) {
                      if (errors.getAndIncrement() == 0) {
                        firstError[0] = ex.toString();
                      }
                    }
                  }
                }
              }));
    }
    workers.forEach(ClosedLoop::join);
    long wallNanos = System.nanoTime() - origin;
    synchronized (latency) {
      Histogram[] copy = new Histogram[series.length];
      for (int i = 0; i < series.length; i++) {
        copy[i] = series[i].copy();
      }
      return new OpenLoop.Window(
          latency.copy(),
          copy,
          new Histogram(3),
          ops.get(),
          errors.get(),
          firstError[0],
          wallNanos,
          0,
          0,
          origin);
    }
  }

  private static void join(Future<?> future) {
    try {
      future.get();
    } catch (Exception ex) {
      throw new IllegalStateException("a closed-loop thread failed", ex);
    }
  }

  @Override
  public void close() {
    this.pool.shutdownNow();
  }
}
