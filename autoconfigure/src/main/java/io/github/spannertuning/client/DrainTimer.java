package io.github.spannertuning.client;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The one timer thread behind every client's drain timeouts. A stream that drains normally gets
 * its trailers well within the timeout, and its timer is removed from the queue when they arrive;
 * the thread only runs a task for a stream whose trailers never came, and goes away when idle.
 */
final class DrainTimer {

  private static final ScheduledThreadPoolExecutor EXECUTOR = newExecutor();

  private DrainTimer() {}

  static ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
    return EXECUTOR.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
  }

  private static ScheduledThreadPoolExecutor newExecutor() {
    ScheduledThreadPoolExecutor executor =
        new ScheduledThreadPoolExecutor(
            1,
            (runnable) -> {
              Thread thread = new Thread(runnable, "spanner-tuning-drain-timer");
              thread.setDaemon(true);
              return thread;
            });
    executor.setRemoveOnCancelPolicy(true);
    executor.setKeepAliveTime(30, TimeUnit.SECONDS);
    executor.allowCoreThreadTimeOut(true);
    return executor;
  }
}
