package io.github.spannertuning.client;

import java.util.Objects;

/**
 * What a feature does on one client, and why.
 *
 * @param status the effective status
 * @param reason why the feature is off, unsupported or native, or what it does where the client has
 *     its own way that it replaces; {@code null} when it is simply on
 * @param byConfiguration whether the feature is off because the configuration spanner-tuning was
 *     given switched it off (not a switch at runtime, not a missing hook)
 */
public record FeatureState(Status status, String reason, boolean byConfiguration) {

  /** The effective status of a feature. */
  public enum Status {
    /** spanner-tuning applies the feature. */
    ON,
    /** The client on the classpath already does this itself; spanner-tuning leaves it alone. */
    NATIVE,
    /** Switched off, by configuration or at runtime. */
    OFF,
    /** The client on the classpath lacks the hook the feature needs. */
    UNSUPPORTED
  }

  private static final String DISABLED_BY_CONFIGURATION = "disabled by configuration";

  public FeatureState {
    Objects.requireNonNull(status, "status");
    if (byConfiguration && status != Status.OFF) {
      throw new IllegalArgumentException("only an off feature is off by configuration");
    }
  }

  static FeatureState on() {
    return new FeatureState(Status.ON, null, false);
  }

  static FeatureState on(String reason) {
    return new FeatureState(Status.ON, reason, false);
  }

  static FeatureState nativeIn(String reason) {
    return new FeatureState(Status.NATIVE, reason, false);
  }

  static FeatureState off(String reason) {
    return new FeatureState(Status.OFF, reason, false);
  }

  static FeatureState offByConfiguration() {
    return new FeatureState(Status.OFF, DISABLED_BY_CONFIGURATION, true);
  }

  static FeatureState unsupported(String reason) {
    return new FeatureState(Status.UNSUPPORTED, reason, false);
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
