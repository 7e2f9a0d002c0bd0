package io.github.spannertuning.experiment;

/** Where an experiment is. Every state but {@link #RUNNING} is final. */
public enum ExperimentState {

  /** Slices are being run and recorded. */
  RUNNING("running"),

  /** Every planned slice ran. */
  DONE("done"),

  /** Stopped by a user before the end. */
  STOPPED("stopped"),

  /**
   * Ended by something else than a user's stop: a feature switched by hand, the guard rail, a
   * switch that failed, the client closed. The reason says which.
   */
  ABORTED("aborted");

  private final String id;

  ExperimentState(String id) {
    this.id = id;
  }

  /** The state's name in the endpoint's answer. */
  public String id() {
    return this.id;
  }
}
