package io.github.spannertuning.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The threads of a test's closed-loop load: each thread runs its own loop, for a time, a number of
 * times, or in the background until the test stops it. Each load has a pool of its own, is bounded
 * in time, and its threads are always stopped; a failure in any thread fails the test with its
 * cause.
 */
public final class Loops {

  /** How long a load may take, unless its caller says otherwise, before the test fails. */
  public static final Duration TIMEOUT = Duration.ofSeconds(60);

  private Loops() {}

  /** One thread's whole loop, returning what it measured. */
  @FunctionalInterface
  public interface Loop<T> {
    T run(int thread) throws Exception;
  }

  /** One turn of a thread's loop. */
  @FunctionalInterface
  public interface Step {
    void run(int thread, int iteration) throws Exception;
  }

  /** Runs {@code loop} on each of {@code threads} threads; returns what each gave, in order. */
  public static <T> List<T> onThreads(int threads, Loop<T> loop) {
    return onThreads(threads, TIMEOUT, loop);
  }

  /** As {@link #onThreads(int, Loop)}, failing when the load takes longer than {@code timeout}. */
  public static <T> List<T> onThreads(int threads, Duration timeout, Loop<T> loop) {
    return run(threads, timeout, loop, false);
  }

  /**
   * {@code threads} threads, released together once all are ready, each running {@code step} {@code
   * times} times.
   */
  public static void together(int threads, int times, Step step) {
    run(threads, TIMEOUT, repeat(times, step), true);
  }

  /** {@code threads} threads, each running {@code step} {@code times} times. */
  public static void times(int threads, int times, Step step) {
    onThreads(threads, repeat(times, step));
  }

  /** {@code threads} threads, each running {@code step} over and over until {@code time} passed. */
  public static void forTime(int threads, Duration time, Step step) {
    long end = System.nanoTime() + time.toNanos();
    onThreads(
        threads,
        (thread) -> {
          for (int i = 0; System.nanoTime() - end < 0; i++) {
            step.run(thread, i);
          }
          return null;
        });
  }

  /**
   * Runs {@code task} on a thread of its own (not a pool's: the tasks given here block for seconds)
   * and returns its outcome, for two measured runs at once.
   */
  public static <T> CompletableFuture<T> onItsOwnThread(Callable<T> task) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Thread thread =
        new Thread(
            () -> {
              try {
                result.complete(task.call());
              } catch (Throwable ex) {
                result.completeExceptionally(ex);
              }
            },
            "loops-own-thread");
    thread.start();
    return result;
  }

  /**
   * {@code threads} threads, started now, each running {@code step} over and over until the load is
   * closed.
   */
  public static Background inBackground(int threads, Step step) {
    return new Background(threads, step);
  }

  /** A load running beside what the test does: {@link #close()} stops it and waits for it. */
  public static final class Background implements AutoCloseable {

    private final AtomicBoolean running = new AtomicBoolean(true);

    private final ExecutorService pool;

    private final List<Future<Object>> futures = new ArrayList<>();

    private Background(int threads, Step step) {
      this.pool = Executors.newFixedThreadPool(threads);
      for (int t = 0; t < threads; t++) {
        int thread = t;
        this.futures.add(
            this.pool.submit(
                () -> {
                  for (int i = 0; this.running.get(); i++) {
                    step.run(thread, i);
                  }
                  return null;
                }));
      }
    }

    /** Stops every thread after its current turn, and fails if any of them failed. */
    @Override
    public void close() {
      this.running.set(false);
      try {
        await(this.futures, TIMEOUT);
      } finally {
        shutdown(this.pool);
      }
    }
  }

  private static Loop<Object> repeat(int times, Step step) {
    return (thread) -> {
      for (int i = 0; i < times; i++) {
        step.run(thread, i);
      }
      return null;
    };
  }

  private static <T> List<T> run(int threads, Duration timeout, Loop<T> loop, boolean together) {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(together ? 1 : 0);
      List<Future<T>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        futures.add(
            pool.submit(
                () -> {
                  ready.countDown();
                  go.await();
                  return loop.run(thread);
                }));
      }
      if (together) {
        if (!ready.await(30, TimeUnit.SECONDS)) {
          throw new AssertionError(threads + " threads not ready within 30 s");
        }
        go.countDown();
      }
      return await(futures, timeout);
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", ex);
    } finally {
      shutdown(pool);
    }
  }

  private static <T> List<T> await(List<Future<T>> futures, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<T> results = new ArrayList<>();
    for (Future<T> future : futures) {
      try {
        results.add(future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
      } catch (ExecutionException ex) {
        throw new AssertionError("workload failed: " + ex.getCause(), ex.getCause());
      } catch (TimeoutException ex) {
        throw new AssertionError("workload did not finish within " + timeout, ex);
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", ex);
      }
    }
    return results;
  }

  private static void shutdown(ExecutorService pool) {
    pool.shutdownNow();
    try {
      if (!pool.awaitTermination(10, TimeUnit.SECONDS)) {
        throw new AssertionError("worker threads did not stop");
      }
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
    }
  }
}
