package io.github.spannertuning.client;

/**
 * Reads the frontend's times from Spanner's {@code server-timing} response header, as the client's
 * own {@code HeaderInterceptor} does ({@code gfet4t7; dur=12.5, afe; dur=3}): {@code gfet4t7} is
 * the Google front end's time, {@code afe} the application front end's, which Spanner sends only
 * where the client asks for it. Whatever the value, reading it never throws and allocates nothing:
 * an entry that is missing or malformed reads as {@link #MISSING}.
 */
public final class ServerTiming {

  /** The header's name. */
  public static final String HEADER = "server-timing";

  /** The Google front end's entry. */
  public static final String GFE = "gfet4t7";

  /** The application front end's entry. */
  public static final String AFE = "afe";

  /** An entry that is not there, or not a duration. */
  public static final long MISSING = -1;

  /** Longer than any call: a value past it is taken as malformed rather than overflowed. */
  private static final double MAX_MILLIS = 86_400_000;

  private ServerTiming() {}

  /**
   * The duration of the entry {@code metric} of a {@code server-timing} value, in nanoseconds, or
   * {@link #MISSING}. An entry is the metric's name, {@code ;}, optional spaces, {@code dur=} and a
   * number of milliseconds with an optional fraction; entries are separated by commas.
   */
  public static long durationNanos(String header, String metric) {
    if (header == null) {
      return MISSING;
    }
    int length = header.length();
    int from = 0;
    while (from < length) {
      int end = header.indexOf(',', from);
      if (end < 0) {
        end = length;
      }
      int start = skipSpaces(header, from, end);
      if (header.startsWith(metric, start)) {
        int after = start + metric.length();
        if (after < end && header.charAt(after) == ';') {
          return parseDuration(header, skipSpaces(header, after + 1, end), end);
        }
      }
      from = end + 1;
    }
    return MISSING;
  }

  private static long parseDuration(String header, int at, int end) {
    if (!header.startsWith("dur=", at)) {
      return MISSING;
    }
    int i = at + 4;
    long whole = 0;
    int digits = 0;
    while (i < end && isDigit(header.charAt(i))) {
      if (digits++ < 12) {
        whole = whole * 10 + (header.charAt(i) - '0');
      }
      i++;
    }
    if (digits == 0 || digits > 12) {
      return MISSING;
    }
    double millis = whole;
    if (i < end && header.charAt(i) == '.') {
      i++;
      double scale = 0.1;
      int fraction = 0;
      while (i < end && isDigit(header.charAt(i))) {
        millis += (header.charAt(i) - '0') * scale;
        scale /= 10;
        fraction++;
        i++;
      }
      if (fraction == 0) {
        return MISSING;
      }
    }
    i = skipSpaces(header, i, end);
    if (i < end && header.charAt(i) != ';') {
      return MISSING;
    }
    return (millis > MAX_MILLIS) ? MISSING : Math.round(millis * 1_000_000);
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private static int skipSpaces(String header, int from, int end) {
    int i = from;
    while (i < end && (header.charAt(i) == ' ' || header.charAt(i) == '\t')) {
      i++;
    }
    return i;
  }
}
