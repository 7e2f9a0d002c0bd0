package io.github.spannertuning.benchmarks;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * {@code --name value} or {@code --name=value} flags. Every flag a main reads is recorded with the
 * value it used, so the report can print all of them; a flag no main reads is an error, not a
 * silent no-op.
 */
final class Flags {

  private final Map<String, String> given = new LinkedHashMap<>();

  private final Map<String, String> used = new LinkedHashMap<>();

  private final Set<String> known = new LinkedHashSet<>();

  private Flags() {}

  static Flags parse(String... args) {
    Flags flags = new Flags();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (!arg.startsWith("--")) {
        throw new IllegalArgumentException("Expected a flag such as --rounds 2, got '" + arg + "'");
      }
      int eq = arg.indexOf('=');
      if (eq > 0) {
        flags.given.put(arg.substring(2, eq), arg.substring(eq + 1));
      } else if (i + 1 < args.length) {
        flags.given.put(arg.substring(2), args[++i]);
      } else {
        throw new IllegalArgumentException("Flag " + arg + " needs a value");
      }
    }
    return flags;
  }

  String string(String name, String defaultValue) {
    this.known.add(name);
    String value = this.given.getOrDefault(name, defaultValue);
    this.used.put(name, value);
    return value;
  }

  /** The value given, or {@code null}; not listed among the used flags when absent. */
  String optional(String name) {
    this.known.add(name);
    String value = this.given.get(name);
    if (value != null) {
      this.used.put(name, value);
    }
    return value;
  }

  double number(String name, double defaultValue) {
    String value = string(name, Double.toString(defaultValue));
    try {
      return Double.parseDouble(value);
    } catch (NumberFormatException ex) {
      throw new IllegalArgumentException("--" + name + " must be a number, was '" + value + "'");
    }
  }

  double positive(String name, double defaultValue) {
    double value = number(name, defaultValue);
    if (!(value >= 0)) {
      throw new IllegalArgumentException("--" + name + " must be 0 or more, was " + value);
    }
    return value;
  }

  boolean bool(String name, boolean defaultValue) {
    String value = string(name, Boolean.toString(defaultValue));
    if (!value.equals("true") && !value.equals("false")) {
      throw new IllegalArgumentException(
          "--" + name + " must be true or false, was '" + value + "'");
    }
    return Boolean.parseBoolean(value);
  }

  int integer(String name, int defaultValue, int min, int max) {
    String value = string(name, Integer.toString(defaultValue));
    try {
      int parsed = Integer.parseInt(value);
      if (parsed < min || parsed > max) {
        throw new NumberFormatException();
      }
      return parsed;
    } catch (NumberFormatException ex) {
      throw new IllegalArgumentException(
          "--" + name + " must be an integer from " + min + " to " + max + ", was '" + value + "'");
    }
  }

  /** Fails on any flag that no getter asked for. */
  void rejectUnknown() {
    for (String name : this.given.keySet()) {
      if (!this.known.contains(name)) {
        throw new IllegalArgumentException(
            "Unknown flag --" + name + "; known flags: --" + String.join(", --", this.known));
      }
    }
  }

  /** Every flag read, with the value used (given or default). */
  Map<String, String> used() {
    return new LinkedHashMap<>(this.used);
  }

  /** The flags as given on the command line, to pass on to a child process. */
  Map<String, String> given() {
    return new LinkedHashMap<>(this.given);
  }
}
