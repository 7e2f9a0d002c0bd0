package io.github.spannertuning.pool;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The one timer thread behind every client's drain timeouts and imbalance windows. A stream that
 * drains normally gets its trailers well within the timeout, and its timer is removed from the
 * queue when they arrive: the thread only runs a drain task for a stream whose trailers never came.
 * Each open client's imbalance window moves on every 30 seconds; the thread goes away once no
 * client is open and no drain is pending.
 */
public final class TuningTimer {

  /** Longer than the imbalance window's period, so an open client's thread is not recreated. */
  private static final long KEEP_ALIVE_SECONDS = 60;

  private static final ScheduledThreadPoolExecutor EXECUTOR = newExecutor();

  private TuningTimer() {}

  public static ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
    return EXECUTOR.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
  }

  /** Runs the task every period, the first time one period from now. */
  public static ScheduledFuture<?> every(Runnable task, long periodNanos) {
    return EXECUTOR.scheduleAtFixedRate(task, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
  }

  private static ScheduledThreadPoolExecutor newExecutor() {
    ScheduledThreadPoolExecutor executor =
        new ScheduledThreadPoolExecutor(
            1,
            (runnable) -> {
              Thread thread = new Thread(runnable, "spanner-tuning-timer");
              thread.setDaemon(true);
              return thread;
            });
    executor.setRemoveOnCancelPolicy(true);
    executor.setKeepAliveTime(KEEP_ALIVE_SECONDS, TimeUnit.SECONDS);
    executor.allowCoreThreadTimeOut(true);
    return executor;
  }
}
