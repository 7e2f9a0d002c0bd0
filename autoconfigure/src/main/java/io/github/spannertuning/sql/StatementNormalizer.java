package io.github.spannertuning.sql;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Optional;

/**
 * A statement as it may be shown: every literal value replaced by {@code ?} and every comment
 * dropped, as PostgreSQL's pg_stat_statements shows a statement, and a fingerprint of that text.
 *
 * <p>JDBC and JPA send statements with their values written in, so a statement's text can hold an
 * application's data: an email, an id. What is dropped, by GoogleSQL's lexical rules:
 *
 * <ul>
 *   <li>string and bytes literals, in {@code '...'} or {@code "..."}, triple-quoted or not, with
 *       GoogleSQL's {@code r}, {@code b}, {@code rb} and {@code br} prefixes (and PostgreSQL's
 *       {@code E} and {@code X}), a backslash escaping the character after it and a doubled quote
 *       standing for one; PostgreSQL's dollar-quoted strings ({@code $$...$$}, {@code
 *       $tag$...$tag$}) too;
 *   <li>numeric literals: integers, decimals, exponents, hexadecimal ({@code 0x1F}); a minus sign
 *       written against a number is part of it where it cannot be a subtraction (after an operator,
 *       a comma, an opening parenthesis or bracket, or at the start): {@code x = -42} becomes
 *       {@code x = ?}. Digits in a word stay: {@code t1}, {@code @p1}, {@code $1};
 *   <li>comments: {@code -- ...} and {@code # ...} to the end of the line, {@code /* ... *}{@code
 *       /}.
 * </ul>
 *
 * <p>What stays: keywords (so {@code TRUE}, {@code FALSE} and {@code NULL}, which identify no one,
 * and read better in {@code IS NULL} than a {@code ?}), identifiers (backquoted ones included),
 * query parameters ({@code @name}, {@code @p1}, PostgreSQL's {@code $1}, JDBC's {@code ?}), which
 * carry no value in the text, and the length of a list: {@code IN (1, 2, 3)} becomes {@code IN (?,
 * ?, ?)}. Runs of whitespace and comments become one space.
 *
 * <p>A statement is read twice, with a backslash in a literal escaping the next character
 * (GoogleSQL) and without (PostgreSQL's standard strings, such as {@code 'C:\'}): where the two
 * readings disagree, or neither reaches the statement's end with every literal closed and no
 * backslash outside one, the text is withheld, since a value might stand outside the literals one
 * reading found. Its fingerprint is then taken over the GoogleSQL reading.
 */
public final class StatementNormalizer {

  /** Hex digits of a fingerprint: the first 64 bits of the SHA-256 of the normalized text. */
  public static final int FINGERPRINT_DIGITS = 16;

  private static final HexFormat HEX = HexFormat.of();

  private StatementNormalizer() {}

  /**
   * Normalizes a statement and fingerprints it: for the endpoint, never on a call's path.
   *
   * @param sql the statement as the application sent it
   */
  public static Normalized normalize(String sql) {
    Reading google = read(sql, true);
    Reading postgres = read(sql, false);
    String text = null;
    if (google.complete() && (!postgres.complete() || postgres.text().equals(google.text()))) {
      text = google.text();
    } else if (!google.complete() && postgres.complete()) {
      text = postgres.text();
    }
    return new Normalized(
        fingerprint((text != null) ? text : google.text()), Optional.ofNullable(text));
  }

  /**
   * A statement as it may be shown.
   *
   * @param fingerprint {@value StatementNormalizer#FINGERPRINT_DIGITS} hex digits of the SHA-256 of
   *     the normalized text: the same in every JVM for the same statement, and the same for
   *     statements that differ only in their values, whitespace or comments
   * @param text the normalized statement; empty when it could not be read unambiguously
   */
  public record Normalized(String fingerprint, Optional<String> text) {}

  private record Reading(String text, boolean complete) {}

  private static Reading read(String sql, boolean backslashEscapes) {
    int n = sql.length();
    StringBuilder out = new StringBuilder(n);
    boolean space = false;
    int i = 0;
    while (i < n) {
      char c = sql.charAt(i);
      char next = (i + 1 < n) ? sql.charAt(i + 1) : 0;
      if (Character.isWhitespace(c)) {
        space = true;
        i++;
        continue;
      }
      if ((c == '-' && next == '-') || c == '#') {
        int end = sql.indexOf('\n', i);
        i = (end < 0) ? n : end + 1;
        space = true;
        continue;
      }
      if (c == '/' && next == '*') {
        int end = sql.indexOf("*/", i + 2);
        if (end < 0) {
          return incomplete(out);
        }
        i = end + 2;
        space = true;
        continue;
      }
      if (space && out.length() > 0) {
        out.append(' ');
      }
      space = false;
      int end;
      if (c == '\'' || c == '"') {
        end = endOfString(sql, i, backslashEscapes);
        if (end < 0) {
          return incomplete(out);
        }
        out.append('?');
      } else if (c == '`') {
        end = endOfIdentifier(sql, i);
        if (end < 0) {
          return incomplete(out);
        }
        out.append(sql, i, end);
      } else if (Character.isLetter(c) || c == '_') {
        end = endOfWord(sql, i);
        if (end < n && isQuote(sql.charAt(end)) && isStringPrefix(sql, i, end)) {
          end = endOfString(sql, end, backslashEscapes);
          if (end < 0) {
            return incomplete(out);
          }
          out.append('?');
        } else {
          out.append(sql, i, end);
        }
      } else if (c == '@') {
        end = i + 1;
        while (end < n && (isWordPart(sql.charAt(end)) || sql.charAt(end) == '@')) {
          end++;
        }
        out.append(sql, i, end);
      } else if (c == '$') {
        end = endOfDollar(sql, i);
        if (end < 0) {
          return incomplete(out);
        }
        boolean parameter = isDigit(next) || end == i + 1;
        if (parameter) {
          out.append(sql, i, end);
        } else {
          out.append('?');
        }
      } else if (isDigit(c) || (c == '.' && isDigit(next) && !endsOperand(sql, i))) {
        end = endOfNumber(sql, i);
        foldSign(out);
        out.append('?');
      } else if (c == '\\') {
        // Outside a literal: this reading lost the bounds of the literals.
        return incomplete(out);
      } else {
        end = i + 1;
        out.append(c);
      }
      i = end;
    }
    return new Reading(out.toString(), true);
  }

  /** What was read, the rest counted as one literal. */
  private static Reading incomplete(StringBuilder out) {
    return new Reading(out.append('?').toString(), false);
  }

  /** Past the string literal whose quote is at {@code open}, or -1 if it does not end. */
  private static int endOfString(String sql, int open, boolean backslashEscapes) {
    int n = sql.length();
    char quote = sql.charAt(open);
    boolean triple = open + 2 < n && sql.charAt(open + 1) == quote && sql.charAt(open + 2) == quote;
    int i = open + (triple ? 3 : 1);
    while (i < n) {
      char c = sql.charAt(i);
      if (c == '\\' && backslashEscapes) {
        i += 2;
      } else if (c != quote) {
        i++;
      } else if (triple) {
        if (i + 2 < n && sql.charAt(i + 1) == quote && sql.charAt(i + 2) == quote) {
          return i + 3;
        }
        i++;
      } else if (i + 1 < n && sql.charAt(i + 1) == quote) {
        i += 2;
      } else {
        return i + 1;
      }
    }
    return -1;
  }

  /** Past the backquoted identifier opened at {@code open}, or -1 if it does not end. */
  private static int endOfIdentifier(String sql, int open) {
    int i = open + 1;
    while (i < sql.length()) {
      char c = sql.charAt(i);
      if (c == '`') {
        return i + 1;
      }
      i += (c == '\\') ? 2 : 1;
    }
    return -1;
  }

  private static int endOfWord(String sql, int start) {
    int i = start + 1;
    while (i < sql.length() && isWordPart(sql.charAt(i))) {
      i++;
    }
    return i;
  }

  /**
   * Past what a {@code $} at {@code start} begins: a parameter ({@code $1}), a lone {@code $}, or a
   * dollar-quoted string; -1 for such a string that does not end.
   */
  private static int endOfDollar(String sql, int start) {
    int n = sql.length();
    int i = start + 1;
    if (i < n && isDigit(sql.charAt(i))) {
      while (i < n && isDigit(sql.charAt(i))) {
        i++;
      }
      return i;
    }
    while (i < n && (Character.isLetterOrDigit(sql.charAt(i)) || sql.charAt(i) == '_')) {
      i++;
    }
    if (i >= n || sql.charAt(i) != '$') {
      return start + 1;
    }
    String tag = sql.substring(start, i + 1);
    int close = sql.indexOf(tag, i + 1);
    return (close < 0) ? -1 : close + tag.length();
  }

  private static int endOfNumber(String sql, int start) {
    int n = sql.length();
    int i = start;
    if (sql.charAt(i) == '0'
        && i + 1 < n
        && (sql.charAt(i + 1) == 'x' || sql.charAt(i + 1) == 'X')) {
      i += 2;
    } else {
      while (i < n && isDigit(sql.charAt(i))) {
        i++;
      }
      if (i < n && sql.charAt(i) == '.') {
        i++;
        while (i < n && isDigit(sql.charAt(i))) {
          i++;
        }
      }
      if (i < n && (sql.charAt(i) == 'e' || sql.charAt(i) == 'E')) {
        int j = i + 1;
        if (j < n && (sql.charAt(j) == '+' || sql.charAt(j) == '-')) {
          j++;
        }
        if (j < n && isDigit(sql.charAt(j))) {
          i = j;
          while (i < n && isDigit(sql.charAt(i))) {
            i++;
          }
        }
      }
    }
    // Hex digits, or what a malformed number runs into: part of the literal either way.
    while (i < n && isWordPart(sql.charAt(i))) {
      i++;
    }
    return i;
  }

  /** Drops a minus sign just written that cannot be a subtraction: it is the number's own. */
  private static void foldSign(StringBuilder out) {
    int sign = out.length() - 1;
    if (sign < 0 || out.charAt(sign) != '-') {
      return;
    }
    int before = sign - 1;
    if (before >= 0 && out.charAt(before) == ' ') {
      before--;
    }
    if (before < 0 || "(,=<>+-*/%|&^~![{:".indexOf(out.charAt(before)) >= 0) {
      out.setLength(sign);
    }
  }

  /** Whether the character before {@code i} ends an operand, so a dot there is a field's. */
  private static boolean endsOperand(String sql, int i) {
    if (i == 0) {
      return false;
    }
    char before = sql.charAt(i - 1);
    return isWordPart(before) || before == ')' || before == ']' || before == '`';
  }

  private static boolean isStringPrefix(String sql, int start, int end) {
    String word = sql.substring(start, end);
    return switch (word.toLowerCase(Locale.ROOT)) {
      case "r", "b", "rb", "br", "e", "x" -> true;
      default -> false;
    };
  }

  private static boolean isQuote(char c) {
    return c == '\'' || c == '"';
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private static boolean isWordPart(char c) {
    return Character.isLetterOrDigit(c) || c == '_' || c == '$';
  }

  private static String fingerprint(String text) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HEX.formatHex(digest, 0, FINGERPRINT_DIGITS / 2);
    } catch (NoSuchAlgorithmException ex) {
      throw new IllegalStateException("every Java platform has SHA-256", ex);
    }
  }
}
