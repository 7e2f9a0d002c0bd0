package io.github.spannertuning.advice;

import java.util.Objects;

/**
 * One finding: a setting that does nothing or harms on this client line, and what to do.
 *
 * @param property the property (or, for a dependency, its Maven coordinates) the finding is about;
 *     never its value
 * @param reason why it does nothing or harms on this line, with the source
 * @param fix what to change
 */
public record Advice(String property, String reason, String fix) {

  public Advice {
    Objects.requireNonNull(property, "property");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(fix, "fix");
  }

  /** The one-line form the startup warning uses. */
  @Override
  public String toString() {
    return this.property + ": " + this.reason + ". Fix: " + this.fix;
  }
}
