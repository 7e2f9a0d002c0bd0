package io.github.spannertuning.experiment;

/**
 * A plan refused, naming the part of it that is wrong, so that whoever asked can say which field or
 * property to change.
 */
public final class InvalidExperimentPlanException extends IllegalArgumentException {

  private static final long serialVersionUID = 1L;

  private final String field;

  /**
   * @param field {@code duration}, {@code slice}, {@code fleet} or {@code feature}: the endpoint's
   *     request field and the last part of the property key
   * @param message what is wrong and what the field accepts
   */
  public InvalidExperimentPlanException(String field, String message) {
    super(message);
    this.field = field;
  }

  /**
   * The part of the plan refused: {@code duration}, {@code slice}, {@code fleet}, {@code feature}.
   */
  public String field() {
    return this.field;
  }
}
