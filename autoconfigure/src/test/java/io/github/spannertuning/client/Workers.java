package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/** Worker threads for the load checks: released together, bounded in time, always stopped. */
final class Workers {

  /** Bound on how long any concurrent workload may take before the test fails. */
  private static final long WORKLOAD_TIMEOUT_SECONDS = 60;

  private Workers() {}

  @FunctionalInterface
  interface Task {
    void run(int thread, int iteration) throws Exception;
  }

  @FunctionalInterface
  interface IndexedTask {
    void run(int index) throws Exception;
  }

  /** {@code threads} threads, released together, each running the task {@code perThread} times. */
  static void concurrently(int threads, int perThread, Task task) {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch ready = new CountDownLatch(threads);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        futures.add(
            pool.submit(
                () -> {
                  ready.countDown();
                  go.await();
                  for (int i = 0; i < perThread; i++) {
                    task.run(thread, i);
                  }
                  return null;
                }));
      }
      assertThat(ready.await(30, TimeUnit.SECONDS)).as("%d threads ready", threads).isTrue();
      go.countDown();
      await(futures);
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", ex);
    } finally {
      shutdown(pool);
    }
  }

  /** {@code tasks} indexed tasks on {@code threads} threads, released together. */
  static void concurrentTasks(int threads, int tasks, IndexedTask task) {
    AtomicInteger next = new AtomicInteger();
    concurrently(
        threads,
        1,
        (thread, iteration) -> {
          int index;
          while ((index = next.getAndIncrement()) < tasks) {
            task.run(index);
          }
        });
  }

  static void await(List<Future<?>> futures) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WORKLOAD_TIMEOUT_SECONDS);
    for (Future<?> future : futures) {
      try {
        future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (ExecutionException ex) {
        throw new AssertionError("workload failed: " + ex.getCause(), ex.getCause());
      } catch (TimeoutException ex) {
        throw new AssertionError(
            "workload did not finish within " + WORKLOAD_TIMEOUT_SECONDS + " s", ex);
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", ex);
      }
    }
  }

  static void shutdown(ExecutorService pool) {
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
