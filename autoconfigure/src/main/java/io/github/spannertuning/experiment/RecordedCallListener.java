package io.github.spannertuning.experiment;

/**
 * Told of each call an experiment records, as it records it: a call that started after its slice's
 * carry-over, in the arm then in force. For figures that add up across processes, such as a latency
 * histogram per arm, which the slices' own percentiles cannot give.
 *
 * <p>Called on the thread that ends the call, on every recorded call, while the slice's window
 * waits for it to return before it closes: it must not block, take a lock or allocate.
 */
@FunctionalInterface
public interface RecordedCallListener {

  /** A listener that does nothing. */
  RecordedCallListener NONE = (kind, arm, latencyNanos) -> {};

  /**
   * @param kind the call's kind
   * @param arm the arm of the slice that recorded it
   * @param latencyNanos how long it ran, failed calls too; never negative
   */
  void recorded(CallKind kind, Arm arm, long latencyNanos);
}
