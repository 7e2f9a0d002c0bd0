package io.github.spannertuning.client;

import io.github.spannertuning.testing.Loops;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Worker threads for the load checks, released together, bounded in time, always stopped: the
 * shapes of {@link Loops} this package's checks use.
 */
final class Workers {

  private Workers() {}

  @FunctionalInterface
  interface IndexedTask {
    void run(int index) throws Exception;
  }

  /** {@code threads} threads, released together, each running the task {@code perThread} times. */
  static void concurrently(int threads, int perThread, Loops.Step task) {
    Loops.together(threads, perThread, task);
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
}
