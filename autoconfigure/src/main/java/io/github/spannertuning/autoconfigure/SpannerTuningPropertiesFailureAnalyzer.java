package io.github.spannertuning.autoconfigure;

import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.origin.Origin;
import org.springframework.core.Ordered;

/**
 * Explains a bad {@code spanner.tuning.*} value: which property, where the value came from, and
 * what it accepts. Ordered first so that it, not Boot's generic binding analyzers, reports these.
 */
class SpannerTuningPropertiesFailureAnalyzer extends AbstractFailureAnalyzer<BindException>
    implements Ordered {

  private static final String PREFIX = "spanner.tuning";

  static final Map<String, String> ALLOWED =
      Map.of(
          "spanner.tuning.enabled", "true or false",
          "spanner.tuning.channels", SpannerTuningProperties.CHANNELS_ALLOWED,
          "spanner.tuning.single-use-distribution.enabled", "true or false",
          "spanner.tuning.stream-end-guard.enabled", "true or false",
          "spanner.tuning.stream-end-guard.drain-timeout",
              SpannerTuningProperties.DRAIN_TIMEOUT_ALLOWED,
          "spanner.tuning.stream-end-guard.max-concurrent-streams",
              SpannerTuningProperties.MAX_CONCURRENT_STREAMS_ALLOWED,
          "spanner.tuning.grpc-gcp.enabled", "true or false",
          "spanner.tuning.metrics.enabled", "true or false");

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, BindException cause) {
    String name = cause.getName().toString();
    if (!name.startsWith(PREFIX)) {
      return null;
    }
    if (cause.getCause() instanceof UnboundConfigurationPropertiesException unbound) {
      String unknown =
          unbound.getUnboundProperties().stream()
              .sorted()
              .map((property) -> property.getName() + from(property.getOrigin()))
              .collect(Collectors.joining(", "));
      return new FailureAnalysis(
          "Unknown spanner-tuning propert" + (unbound.getUnboundProperties().size() > 1 ? "ies" : "y")
              + ": " + unknown,
          "Use only these properties: " + String.join(", ", ALLOWED.keySet().stream().sorted().toList()),
          cause);
    }
    if (cause.getCause() instanceof BindValidationException invalid) {
      return analyzeInvalid(invalid, cause);
    }
    ConfigurationProperty property = cause.getProperty();
    String value = (property != null) ? String.valueOf(property.getValue()) : "?";
    String allowed = ALLOWED.getOrDefault(name, "see the spanner-tuning README");
    return new FailureAnalysis(
        "Invalid value '" + value + "' for property '" + name + "'"
            + from((property != null) ? property.getOrigin() : null) + ": " + rootMessage(cause),
        "Set '" + name + "' to " + allowed + ".",
        cause);
  }

  private static FailureAnalysis analyzeInvalid(BindValidationException invalid, BindException cause) {
    StringBuilder description = new StringBuilder();
    StringBuilder action = new StringBuilder();
    for (ObjectError error : invalid.getValidationErrors().getAllErrors()) {
      String name = PREFIX;
      Object value = null;
      if (error instanceof FieldError field) {
        name = PREFIX + "." + kebabCase(field.getField());
        value = field.getRejectedValue();
      }
      description.append(String.format("Invalid value '%s' for property '%s'%s: %s%n",
          value, name, from(Origin.from(error)), error.getDefaultMessage()));
      action.append(String.format("Set '%s' to %s.%n", name,
          ALLOWED.getOrDefault(name, "a valid value")));
    }
    return new FailureAnalysis(description.toString().trim(), action.toString().trim(), cause);
  }

  /** A bean path such as {@code streamEndGuard.drainTimeout} as its property name. */
  private static String kebabCase(String path) {
    return path.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
  }

  private static String rootMessage(Throwable failure) {
    Throwable root = failure;
    while (root.getCause() != null) {
      root = root.getCause();
    }
    return root.getMessage();
  }

  /** Where a value came from, as Boot's own binding report names it. */
  private static String from(Origin origin) {
    return (origin != null) ? " (from " + origin + ")" : "";
  }
}
