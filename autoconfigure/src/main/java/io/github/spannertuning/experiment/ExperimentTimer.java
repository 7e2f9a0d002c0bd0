package io.github.spannertuning.experiment;

import java.util.concurrent.Future;

/**
 * Runs an experiment's steps: a slice's switch, the end of its carry-over, its end. Three steps per
 * slice, each short (the analysis at the end of a pair sorts at most {@code n(n+1)/2} averages of
 * {@code n} pairs), so a shared timer thread serves; in production the client's own.
 */
@FunctionalInterface
public interface ExperimentTimer {

  /**
   * Runs {@code task} once, {@code delayNanos} from now.
   *
   * @return the scheduled run, which the experiment cancels when it ends first
   */
  Future<?> schedule(Runnable task, long delayNanos);
}
