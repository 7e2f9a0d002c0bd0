package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.advice.Advice;
import io.github.spannertuning.advice.AdviceRules;
import io.github.spannertuning.advice.ClientLine;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.Environment;

/**
 * The advice on this application's Spanner configuration ({@link AdviceRules}): one WARN line per
 * finding once the application's singletons exist, and the list the {@code spannertuning} endpoint
 * shows. It asks the environment only whether each property a rule looks at is set, in any of
 * Boot's relaxed forms, never for its value, and changes nothing. It never fails startup: a rule
 * that throws leaves the advice empty.
 */
public class SpannerTuningAdvice implements SmartInitializingSingleton {

  private static final Log logger = LogFactory.getLog(SpannerTuningAdvice.class);

  private final Environment environment;

  private final Supplier<ClientLine> line;

  private volatile List<Advice> advice;

  /**
   * Advice for the client line on the classpath.
   *
   * @param environment the application's environment
   */
  public SpannerTuningAdvice(Environment environment) {
    this(environment, ClientLine::detected);
  }

  /** Advice for a given line: the tests' seam, since a test classpath holds one line. */
  SpannerTuningAdvice(Environment environment, Supplier<ClientLine> line) {
    this.environment = environment;
    this.line = line;
  }

  /** The findings, in the rules' order; empty for a clean configuration. */
  public List<Advice> advice() {
    List<Advice> advice = this.advice;
    if (advice == null) {
      advice = evaluate();
      this.advice = advice;
    }
    return advice;
  }

  @Override
  public void afterSingletonsInstantiated() {
    for (Advice finding : advice()) {
      logger.warn("spanner-tuning advice: " + finding);
    }
  }

  private List<Advice> evaluate() {
    try {
      return AdviceRules.advise(this.line.get(), setProperties());
    } catch (RuntimeException | LinkageError ex) {
      // Advice is a courtesy: a client line it cannot read must not stop the application.
      logger.debug("spanner-tuning: no advice, the configuration could not be judged", ex);
      return List.of();
    }
  }

  private Set<String> setProperties() {
    Iterable<ConfigurationPropertySource> sources =
        ConfigurationPropertySources.get(this.environment);
    return AdviceRules.PROPERTIES.stream()
        .filter((name) -> isSet(sources, ConfigurationPropertyName.of(name)))
        .collect(Collectors.toSet());
  }

  private static boolean isSet(
      Iterable<ConfigurationPropertySource> sources, ConfigurationPropertyName name) {
    for (ConfigurationPropertySource source : sources) {
      if (source.getConfigurationProperty(name) != null) {
        return true;
      }
    }
    return false;
  }
}
