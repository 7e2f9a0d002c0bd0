package io.github.spannertuning.experiment;

/**
 * Puts the client in an arm: for {@link Arm#STOCK} every feature that can be switched at run time
 * off, for {@link Arm#TUNED} every feature back in its configured state; or, in an experiment on
 * one feature, that feature off or on and the others as they were.
 *
 * <p>An experiment calls {@link #switchTo} at each slice's start, and {@link #restore} once when it
 * ends, however it ends. It calls them from the timer thread, or from the thread that stops or
 * aborts it, one call at a time, holding the experiment's lock: they must not wait for a thread
 * that may be stopping or aborting that experiment. A switch that throws aborts the experiment,
 * with the exception's message in the reason.
 */
@FunctionalInterface
public interface ArmSwitch {

  /** Puts the client in {@code arm}; a call for the arm it is already in changes nothing. */
  void switchTo(Arm arm);

  /**
   * Puts the client back in the states it had before the experiment started: by default the tuned
   * arm, which is the client as configured.
   */
  default void restore() {
    switchTo(Arm.TUNED);
  }
}
