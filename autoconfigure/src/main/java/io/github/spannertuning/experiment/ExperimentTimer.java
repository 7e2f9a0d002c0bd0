package io.github.spannertuning.experiment;

import java.util.concurrent.Future;

/**
 * Runs an experiment's steps: a slice's switch, the end of its carry-over, its end. Three steps per
 * slice, each short (the analysis at the end of a pair sorts at most {@code n(n+1)/2} averages of
 * {@code n} pairs), so one thread serves every client: {@link #shared()}.
 */
@FunctionalInterface
public interface ExperimentTimer {

  /** The one thread every client's experiments run their steps on, and nothing else does. */
  static ExperimentTimer shared() {
    return ExperimentThread::schedule;
  }

  /**
   * Runs {@code task} once, {@code delayNanos} from now.
   *
   * @return the scheduled run, which the experiment cancels when it ends first
   */
  Future<?> schedule(Runnable task, long delayNanos);
}
