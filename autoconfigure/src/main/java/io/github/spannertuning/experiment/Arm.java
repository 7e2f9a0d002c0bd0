package io.github.spannertuning.experiment;

/** The two ways a client runs during a switchback experiment. */
public enum Arm {

  /** Every feature in the state the configuration gave it. */
  TUNED("tuned"),

  /** Every feature that can be switched at run time switched off: the client's own behaviour. */
  STOCK("stock");

  private final String id;

  Arm(String id) {
    this.id = id;
  }

  /** The arm's name in the endpoint's answer and in meter tags. */
  public String id() {
    return this.id;
  }

  Arm other() {
    return (this == TUNED) ? STOCK : TUNED;
  }
}
