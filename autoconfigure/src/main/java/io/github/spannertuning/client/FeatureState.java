package io.github.spannertuning.client;

import java.util.Objects;

/**
 * What a feature does on one client, and why.
 *
 * @param status the effective status
 * @param reason why the feature is off, unsupported or native, or what it does where the client
 *     has its own way that it replaces; {@code null} when it is simply on
 */
public record FeatureState(Status status, String reason) {

  /** The effective status of a feature. */
  public enum Status {
    /** spanner-tuning applies the feature. */
    ON,
    /** The client on the classpath already does this itself; spanner-tuning leaves it alone. */
    NATIVE,
    /** Switched off by configuration. */
    OFF,
    /** The client on the classpath lacks the hook the feature needs. */
    UNSUPPORTED
  }

  /** The reason of a feature switched off by the configuration spanner-tuning was given. */
  public static final String DISABLED_BY_CONFIGURATION = "disabled by configuration";

  public FeatureState {
    Objects.requireNonNull(status, "status");
  }

  static FeatureState on() {
    return new FeatureState(Status.ON, null);
  }

  static FeatureState on(String reason) {
    return new FeatureState(Status.ON, reason);
  }

  static FeatureState nativeIn(String reason) {
    return new FeatureState(Status.NATIVE, reason);
  }

  static FeatureState off(String reason) {
    return new FeatureState(Status.OFF, reason);
  }

  static FeatureState unsupported(String reason) {
    return new FeatureState(Status.UNSUPPORTED, reason);
  }

  /** Whether spanner-tuning itself does the work of this feature. */
  public boolean isApplied() {
    return this.status == Status.ON;
  }

  @Override
  public String toString() {
    return (this.reason != null)
        ? this.status.name().toLowerCase() + " (" + this.reason + ")"
        : this.status.name().toLowerCase();
  }
}
