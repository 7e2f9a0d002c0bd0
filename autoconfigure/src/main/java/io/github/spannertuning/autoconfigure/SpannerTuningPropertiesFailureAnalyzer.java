package io.github.spannertuning.autoconfigure;

import java.beans.PropertyDescriptor;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.bind.validation.ValidationErrors;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.origin.Origin;
import org.springframework.core.Ordered;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

/**
 * Explains a bad {@code spanner.tuning.*} or {@code management.endpoint.spannertuning.*} value:
 * which property, where the value came from, and what it accepts. Ordered first so that it, not
 * Boot's generic binding analyzers, reports these.
 */
class SpannerTuningPropertiesFailureAnalyzer extends AbstractFailureAnalyzer<BindException>
    implements Ordered {

  private static final String PREFIX = "spanner.tuning";

  /**
   * Every key under {@code spanner.tuning}, sorted, with what it accepts: read from the bean
   * properties of {@link SpannerTuningProperties}, the class Boot binds, so that no list of keys is
   * kept beside it.
   */
  static final Map<String, String> ALLOWED = allowedValues();

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, BindException cause) {
    String name = cause.getName().toString();
    if (name.startsWith(SpannerTuningEndpointProperties.PREFIX + ".")) {
      return analyzeEndpoint(name, cause);
    }
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
          "Unknown spanner-tuning propert"
              + (unbound.getUnboundProperties().size() > 1 ? "ies" : "y")
              + ": "
              + unknown,
          "Use only these properties: " + String.join(", ", ALLOWED.keySet()),
          cause);
    }
    if (cause.getCause() instanceof BindValidationException invalid) {
      return analyzeInvalid(invalid, cause);
    }
    ConfigurationProperty property = cause.getProperty();
    String value = (property != null) ? String.valueOf(property.getValue()) : "?";
    String allowed = ALLOWED.getOrDefault(name, "a valid value");
    return new FailureAnalysis(
        "Invalid value '"
            + value
            + "' for property '"
            + name
            + "'"
            + from((property != null) ? property.getOrigin() : null)
            + ": "
            + rootMessage(cause),
        "Set '" + name + "' to " + allowed + ".",
        cause);
  }

  /** The endpoint's own keys: Boot binds them leniently, so only a value can be wrong. */
  private static FailureAnalysis analyzeEndpoint(String name, BindException cause) {
    String allowed = SpannerTuningEndpointProperties.ACCEPTS.get(name);
    if (allowed == null) {
      return null;
    }
    ConfigurationProperty property = cause.getProperty();
    String value = (property != null) ? String.valueOf(property.getValue()) : "?";
    return new FailureAnalysis(
        "Invalid value '"
            + value
            + "' for property '"
            + name
            + "'"
            + from((property != null) ? property.getOrigin() : null)
            + ": must be "
            + allowed,
        "Set '" + name + "' to " + allowed + ".",
        cause);
  }

  private static FailureAnalysis analyzeInvalid(
      BindValidationException invalid, BindException cause) {
    StringBuilder description = new StringBuilder();
    StringBuilder action = new StringBuilder();
    ValidationErrors errors = invalid.getValidationErrors();
    for (ObjectError error : errors.getAllErrors()) {
      String name = PREFIX;
      Object value = null;
      Origin origin = Origin.from(error);
      if (error instanceof FieldError field) {
        name = PREFIX + "." + kebabCase(field.getField());
        value = field.getRejectedValue();
        // As the user wrote it ("0s", not the bound PT0S), and from where.
        ConfigurationProperty bound = boundProperty(errors, name);
        if (bound != null) {
          value = bound.getValue();
          origin = (origin != null) ? origin : bound.getOrigin();
        }
      }
      description.append(
          String.format(
              "Invalid value '%s' for property '%s'%s: %s%n",
              value, name, from(origin), error.getDefaultMessage()));
      action.append(
          String.format("Set '%s' to %s.%n", name, ALLOWED.getOrDefault(name, "a valid value")));
    }
    return new FailureAnalysis(description.toString().trim(), action.toString().trim(), cause);
  }

  private static ConfigurationProperty boundProperty(ValidationErrors errors, String name) {
    for (ConfigurationProperty property : errors.getBoundProperties()) {
      if (property.getName().toString().equals(name)) {
        return property;
      }
    }
    return null;
  }

  private static Map<String, String> allowedValues() {
    Map<String, String> allowed = new TreeMap<>();
    collect(SpannerTuningProperties.class, "", allowed);
    return Collections.unmodifiableMap(allowed);
  }

  /**
   * Bound leaves are the properties with a setter; a getter-only property whose type is declared in
   * {@link SpannerTuningProperties} is a group of further keys.
   */
  private static void collect(Class<?> type, String beanPath, Map<String, String> allowed) {
    for (PropertyDescriptor property : BeanUtils.getPropertyDescriptors(type)) {
      if (property.getReadMethod() == null || "class".equals(property.getName())) {
        continue;
      }
      String path = beanPath.isEmpty() ? property.getName() : beanPath + "." + property.getName();
      Class<?> propertyType = property.getPropertyType();
      if (propertyType.getDeclaringClass() == SpannerTuningProperties.class) {
        collect(propertyType, path, allowed);
      } else if (property.getWriteMethod() != null) {
        allowed.put(PREFIX + "." + kebabCase(path), accepts(path, propertyType));
      }
    }
  }

  private static String accepts(String beanPath, Class<?> type) {
    String accepts = SpannerTuningProperties.ACCEPTS.get(beanPath);
    if (accepts != null) {
      return accepts;
    }
    return (type == boolean.class || type == Boolean.class) ? "true or false" : "a valid value";
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
