package io.github.spannertuning.experiment;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The schedule every instance of a fleet derives on its own, from the fleet's id, the slice length
 * and its wall clock, with no coordinator:
 *
 * <ul>
 *   <li>slice {@code k} starts {@code k × slice} after the epoch (1970-01-01T00:00:00Z);
 *   <li>slices {@code 2p} and {@code 2p + 1} are pair {@code p};
 *   <li>pair {@code p} starts with the tuned arm when the first byte of SHA-256 of the UTF-8 bytes
 *       of {@code <fleet id>/<p>} ({@code p} in decimal) is even, else with the stock arm; its
 *       other slice runs the other arm.
 * </ul>
 *
 * <p>SHA-256 rather than a seeded {@code Random}: its output is fixed by a standard, so instances
 * on different JDKs, or a service in another language, draw the same order. Each pair's coin is
 * fair and independent of the others' as far as the order of arms is concerned.
 *
 * <p>An instance that starts between boundaries takes the arm of the slice in force at once and
 * records from the first pair that starts after it joined. Times are nanoseconds since the epoch.
 */
final class FleetSchedule {

  private final String fleet;

  private final long sliceNanos;

  FleetSchedule(String fleet, long sliceNanos) {
    this.fleet = fleet;
    this.sliceNanos = sliceNanos;
  }

  /** The slice in force at {@code epochNanos}. */
  long sliceAt(long epochNanos) {
    return Math.floorDiv(epochNanos, this.sliceNanos);
  }

  /** When slice {@code index} starts. */
  long startOf(long index) {
    return Math.multiplyExact(index, this.sliceNanos);
  }

  /** The arm of slice {@code index}. */
  Arm armOf(long index) {
    Arm first = firstArm(this.fleet, Math.floorDiv(index, 2));
    return (Math.floorMod(index, 2) == 0) ? first : first.other();
  }

  /** The first slice an instance that joined in slice {@code joined} records: the next pair's. */
  static long firstRecorded(long joined) {
    long next = joined + 1;
    return (Math.floorMod(next, 2) == 0) ? next : next + 1;
  }

  /** The arm that pair {@code pair} of fleet {@code fleet} starts with; see the class comment. */
  static Arm firstArm(String fleet, long pair) {
    byte[] digest = sha256().digest((fleet + "/" + pair).getBytes(StandardCharsets.UTF_8));
    return ((digest[0] & 1) == 0) ? Arm.TUNED : Arm.STOCK;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException ex) {
      throw new IllegalStateException("every Java platform has SHA-256", ex);
    }
  }
}
