package io.github.spannertuning.experiment;

/**
 * What an experiment found for one call kind. The rule is {@link ExperimentAnalysis}'s: the P99
 * ratio's 95 % interval and the failed-rate difference's 99 % interval.
 */
public enum Verdict {

  /** The tuned arm is faster at P99, or fails less, and is not worse on the other. */
  BETTER("better"),

  /** The tuned arm is slower at P99, or fails more. */
  WORSE("worse"),

  /** Neither interval excludes "no difference", or there are too few pairs for an interval. */
  NO_DETECTABLE_DIFFERENCE("no-detectable-difference");

  private final String id;

  Verdict(String id) {
    this.id = id;
  }

  /** The verdict's name in the endpoint's answer. */
  public String id() {
    return this.id;
  }
}
