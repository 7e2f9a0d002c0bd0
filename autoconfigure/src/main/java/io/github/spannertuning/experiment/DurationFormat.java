package io.github.spannertuning.experiment;

import java.time.Duration;

/**
 * Durations as a user writes them in Boot's simple format ({@code 60s}, {@code 20m}, {@code
 * 500ms}), in the unit that reads best: seconds up to two minutes, minutes up to two hours.
 */
final class DurationFormat {

  private DurationFormat() {}

  static String format(Duration duration) {
    long seconds = duration.getSeconds();
    int nanos = duration.getNano();
    if (nanos != 0) {
      if (Math.abs(seconds) > 1_000_000) {
        return duration.toString();
      }
      long total = duration.toNanos();
      if (total % 1_000_000 == 0) {
        return (total / 1_000_000) + "ms";
      }
      return (total % 1_000 == 0) ? (total / 1_000) + "us" : total + "ns";
    }
    if (seconds % 3600 == 0 && Math.abs(seconds) >= 7200) {
      return (seconds / 3600) + "h";
    }
    if (seconds % 60 == 0 && Math.abs(seconds) >= 120) {
      return (seconds / 60) + "m";
    }
    return seconds + "s";
  }
}
