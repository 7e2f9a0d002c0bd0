package io.github.spannertuning.experiment;

import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The thread that runs every client's experiment steps, and nothing else. The client's own timer
 * takes a drain timeout for every stream closed at its {@code last} message and cancels it when the
 * trailers come, thousands a second under load, all through one queue lock: a step queued there
 * waits behind them, and waits longer still when a thread holding that lock is descheduled on a
 * busy machine. Here a slice's switch runs at its boundary. The thread goes away a minute after the
 * last step; a running experiment schedules one at least every slice.
 */
final class ExperimentThread {

  private static final long KEEP_ALIVE_SECONDS = 60;

  private static final ScheduledThreadPoolExecutor EXECUTOR = newExecutor();

  private ExperimentThread() {}

  static Future<?> schedule(Runnable task, long delayNanos) {
    return EXECUTOR.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
  }

  private static ScheduledThreadPoolExecutor newExecutor() {
    ScheduledThreadPoolExecutor executor =
        new ScheduledThreadPoolExecutor(
            1,
            (runnable) -> {
              Thread thread = new Thread(runnable, "spanner-tuning-experiment");
              thread.setDaemon(true);
              return thread;
            });
    executor.setRemoveOnCancelPolicy(true);
    executor.setKeepAliveTime(KEEP_ALIVE_SECONDS, TimeUnit.SECONDS);
    executor.allowCoreThreadTimeOut(true);
    return executor;
  }
}
