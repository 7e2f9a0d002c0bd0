package io.github.spannertuning.autoconfigure;

import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.SpannerTuning;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.Ordered;

/**
 * Tunes Spanner clients as their configuration beans are created: {@link SpannerOptions.Builder}
 * beans (spring-cloud-gcp's prototype builder, after the application's {@code
 * SpannerOptionsCustomizer} ran) are tuned in place, {@link SpannerOptions} beans built elsewhere
 * (spring-cloud-gcp's emulator path, or an application's own) are rebuilt tuned. {@link Spanner}
 * beans are recorded in the {@link SpannerTuningRegistry} under their bean name.
 *
 * <p>Fails open: if tuning a bean throws, the bean is kept as it was and a warning is logged.
 */
class SpannerTuningBeanPostProcessor implements BeanPostProcessor, Ordered {

  private static final Log logger = LogFactory.getLog(SpannerTuningBeanPostProcessor.class);

  private final ObjectProvider<SpannerTuningProperties> properties;

  private final ObjectProvider<SpannerTuningRegistry> registry;

  private volatile SpannerTuning tuning;

  SpannerTuningBeanPostProcessor(
      ObjectProvider<SpannerTuningProperties> properties,
      ObjectProvider<SpannerTuningRegistry> registry) {
    this.properties = properties;
    this.registry = registry;
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    try {
      if (bean instanceof SpannerOptions.Builder builder) {
        tuning().applyTo(builder);
      } else if (bean instanceof SpannerOptions options) {
        return tuning().tune(options);
      } else if (bean instanceof Spanner spanner) {
        SpannerTuning.stateOf(spanner.getOptions())
            .ifPresent((state) -> this.registry.getObject().register(beanName, state));
      }
    } catch (RuntimeException | LinkageError ex) {
      logger.warn(
          "spanner-tuning could not tune bean '" + beanName + "'; it is left as it was", ex);
    }
    return bean;
  }

  private SpannerTuning tuning() {
    SpannerTuning tuning = this.tuning;
    if (tuning == null) {
      tuning = this.properties.getObject().toTuning();
      this.tuning = tuning;
    }
    return tuning;
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }
}
