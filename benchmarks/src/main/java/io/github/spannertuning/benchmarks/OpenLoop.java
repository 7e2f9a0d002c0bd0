package io.github.spannertuning.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;

/**
 * Runs one measurement window open loop: arrivals follow a Poisson schedule at the workload's rate,
 * each is handed to a fixed pool of client threads (queued when all are busy), and latency is taken
 * from the scheduled arrival, so time spent waiting for a thread or behind a slow call counts. The
 * schedule is fixed by the seed, the same for every variant. The pool's threads are started before
 * the window and stop only on {@link #close()}, so that the window's cost can be read from them
 * first.
 */
final class OpenLoop implements AutoCloseable {

  /** Time a window's late queries get to finish before they are counted as errors. */
  private static final long DRAIN_NANOS = TimeUnit.SECONDS.toNanos(30);

  /**
   * The histograms' range, fixed: an auto-resizing histogram grows by catching an
   * ArrayIndexOutOfBoundsException, which the window's throwables count would take for the
   * client's.
   */
  private static final long MAX_MICROS = TimeUnit.MINUTES.toMicros(10);

  private final ThreadPoolExecutor pool;

  OpenLoop(int threads) {
    AtomicInteger threadNumber = new AtomicInteger();
    this.pool =
        new ThreadPoolExecutor(
            threads,
            threads,
            0,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            (runnable) -> {
              Thread thread = new Thread(runnable, "load-" + threadNumber.incrementAndGet());
              thread.setDaemon(true);
              return thread;
            });
    this.pool.prestartAllCoreThreads();
  }

  /** Runs the task once on each of the pool's threads, before the window. */
  void onEachThread(Runnable task) throws InterruptedException {
    onEachThread(this.pool, this.pool.getCorePoolSize(), task);
  }

  /**
   * Runs the task once on each of the executor's {@code threads} threads: every copy waits until
   * all have started, so no thread takes two.
   */
  static void onEachThread(ExecutorService pool, int threads, Runnable task)
      throws InterruptedException {
    CountDownLatch started = new CountDownLatch(threads);
    List<Future<?>> copies = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      copies.add(
          pool.submit(
              () -> {
                started.countDown();
                try {
                  started.await();
                } catch (InterruptedException ex) {
                  Thread.currentThread().interrupt();
                  return;
                }
                task.run();
              }));
    }
    for (Future<?> copy : copies) {
      try {
        copy.get();
      } catch (ExecutionException ex) {
        throw new IllegalStateException("readying a load thread failed", ex.getCause());
      }
    }
  }

  /**
   * What one window produced; latencies in microseconds. {@code latency}, {@code series} and {@code
   * ops} are the point selects'; {@code reports}, the latencies of the reports a mixed workload
   * sends ({@link Workload#reportEvery()}), kept apart so that a report's own cost does not pass
   * for a slow point select (empty where none were sent). {@code errors}: failed queries of either
   * kind. {@code unsent}: arrivals not issued because more than the queue limit were already
   * waiting, the client having fallen behind. {@code originNanos}: the window's start on {@link
   * System#nanoTime()}, where {@code series}' first bucket begins.
   */
  record Window(
      Histogram latency,
      Histogram[] series,
      Histogram reports,
      long ops,
      long errors,
      String firstError,
      long wallNanos,
      int maxQueued,
      long unsent,
      long originNanos) {

    /** Every query the window sent and saw end: point selects, reports and failures. */
    long queries() {
      return this.ops + this.reports.getTotalCount() + this.errors;
    }
  }

  Window run(BenchClient client, Workload workload, double seconds, double bucketSeconds, long seed)
      throws InterruptedException {
    return run(client, workload, seconds, bucketSeconds, seed, Integer.MAX_VALUE);
  }

  /**
   * As above; once more than {@code queueLimit} arrivals wait for a thread, the rest of the
   * schedule is counted as unsent instead of issued, so that a window past the client's capacity
   * ends in about its own length instead of draining a backlog that only grows.
   */
  Window run(
      BenchClient client,
      Workload workload,
      double seconds,
      double bucketSeconds,
      long seed,
      int queueLimit)
      throws InterruptedException {
    Histogram latency = new Histogram(1, MAX_MICROS, 3);
    Histogram reports = new Histogram(1, MAX_MICROS, 3);
    Histogram[] series = new Histogram[(int) Math.ceil(seconds / bucketSeconds)];
    for (int i = 0; i < series.length; i++) {
      series[i] = new Histogram(1, MAX_MICROS, 2);
    }
    AtomicLong ops = new AtomicLong();
    AtomicLong errors = new AtomicLong();
    AtomicLong done = new AtomicLong();
    String[] firstError = new String[1];
    Random random = new Random(seed);
    long bucketNanos = (long) (bucketSeconds * 1e9);
    long origin = System.nanoTime() + 20_000_000L;
    long submitted = 0;
    int maxQueued = 0;
    long unsent = 0;
    double at = 0;
    long arrivals = 0;
    while (true) {
      at += -Math.log(1 - random.nextDouble()) / workload.rateAt(at);
      if (at >= seconds) {
        break;
      }
      // The same arrivals are reports for every variant: the schedule's every reportEvery-th.
      boolean report = workload.reportEvery() > 0 && ++arrivals % workload.reportEvery() == 0;
      if (maxQueued > queueLimit) {
        unsent++;
        continue;
      }
      long scheduled = origin + (long) (at * 1e9);
      long wait;
      while ((wait = scheduled - System.nanoTime()) > 0) {
        LockSupport.parkNanos(wait);
      }
      submitted++;
      this.pool.execute(
          () -> {
            try {
              if (report) {
                client.report();
              } else {
                client.pointSelect();
              }
              long micros =
                  Math.min(MAX_MICROS, Math.max(1, (System.nanoTime() - scheduled) / 1000));
              int bucket = (int) Math.min(series.length - 1, (scheduled - origin) / bucketNanos);
              synchronized (latency) {
                if (report) {
                  reports.recordValue(micros);
                } else {
                  ops.incrementAndGet();
                  latency.recordValue(micros);
                  series[bucket].recordValue(micros);
                }
              }
            } catch (RuntimeException ex) {
              synchronized (latency) {
                if (errors.getAndIncrement() == 0) {
                  firstError[0] = ex.toString();
                }
              }
            } finally {
              done.incrementAndGet();
            }
          });
      maxQueued = Math.max(maxQueued, this.pool.getQueue().size());
    }
    long deadline = System.nanoTime() + DRAIN_NANOS;
    while (done.get() < submitted && System.nanoTime() < deadline) {
      Thread.sleep(2);
    }
    long wallNanos = System.nanoTime() - origin;
    long unfinished = submitted - done.get();
    synchronized (latency) {
      if (unfinished > 0) {
        errors.addAndGet(unfinished);
        if (firstError[0] == null) {
          firstError[0] = unfinished + " queries unfinished 30 s after the window";
        }
      }
      return new Window(
          latency.copy(),
          copy(series),
          reports.copy(),
          ops.get(),
          errors.get(),
          firstError[0],
          wallNanos,
          maxQueued,
          unsent,
          origin);
    }
  }

  private static Histogram[] copy(Histogram[] series) {
    Histogram[] copy = new Histogram[series.length];
    for (int i = 0; i < series.length; i++) {
      copy[i] = series[i].copy();
    }
    return copy;
  }

  @Override
  public void close() {
    this.pool.shutdownNow();
  }
}
