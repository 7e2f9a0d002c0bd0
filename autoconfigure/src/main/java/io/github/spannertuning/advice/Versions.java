package io.github.spannertuning.advice;

import java.util.ArrayList;
import java.util.List;

/**
 * Compares Maven release versions such as {@code 6.119.0} or {@code 1.9.2}. A version that does not
 * start with a number ({@code unknown}, {@code null}) compares as unknown, and a rule that needs it
 * does not fire: advice must not guess.
 */
final class Versions {

  private Versions() {}

  /** Whether {@code version} is known and at least {@code minimum}. */
  static boolean atLeast(String version, String minimum) {
    List<Integer> parts = parse(version);
    return !parts.isEmpty() && compare(parts, parse(minimum)) >= 0;
  }

  /** Whether both are known and {@code version} is older than {@code other}. */
  static boolean older(String version, String other) {
    List<Integer> parts = parse(version);
    List<Integer> otherParts = parse(other);
    return !parts.isEmpty() && !otherParts.isEmpty() && compare(parts, otherParts) < 0;
  }

  /**
   * The leading numeric segments: {@code 1.9.2-SNAPSHOT} is 1, 9, 2. A qualifier is ignored, which
   * is enough here: no rule draws a line between a release and its own snapshots.
   */
  private static List<Integer> parse(String version) {
    List<Integer> parts = new ArrayList<>();
    if (version == null) {
      return parts;
    }
    for (String segment : version.split("\\.")) {
      int end = 0;
      while (end < segment.length() && Character.isDigit(segment.charAt(end))) {
        end++;
      }
      if (end == 0 || end > 9) {
        break;
      }
      parts.add(Integer.parseInt(segment.substring(0, end)));
      if (end < segment.length()) {
        break;
      }
    }
    return parts;
  }

  private static int compare(List<Integer> a, List<Integer> b) {
    for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
      int x = (i < a.size()) ? a.get(i) : 0;
      int y = (i < b.size()) ? b.get(i) : 0;
      if (x != y) {
        return Integer.compare(x, y);
      }
    }
    return 0;
  }
}
