package io.github.spannertuning.autoconfigure;

import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.ExperimentResult;
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
 * <p>Logs one INFO line per tuned client, with its bean name. Fails open: if tuning a bean throws,
 * the bean is kept as it was and a warning is logged. A bad {@code spanner.tuning.*} value is not
 * failed open: it stops startup before the first Spanner bean is tuned.
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
    if (bean instanceof Spanner spanner) {
      register(spanner, beanName);
      return bean;
    }
    if (!(bean instanceof SpannerOptions.Builder) && !(bean instanceof SpannerOptions)) {
      return bean;
    }
    // Outside the fail-open block: a bad spanner.tuning value is the application's mistake, and
    // binding it fails startup here, before any client is built, with the failure analyzer's
    // report. Failing open is for client versions that lack a hook.
    SpannerTuning tuning = tuning();
    try {
      if (bean instanceof SpannerOptions.Builder builder) {
        tuning.applyTo(builder);
      } else {
        return tuning.tune((SpannerOptions) bean);
      }
    } catch (RuntimeException | LinkageError ex) {
      logger.warn(
          "spanner-tuning could not tune bean '" + beanName + "'; it is left as it was", ex);
    }
    return bean;
  }

  private void register(Spanner spanner, String beanName) {
    try {
      SpannerTuning.stateOf(spanner.getOptions())
          .ifPresent(
              (state) -> {
                this.registry.getObject().register(beanName, state);
                logger.info(
                    "spanner-tuning: tuned Spanner client '" + beanName + "' " + state.summary());
                startExperiment(beanName, state);
              });
    } catch (RuntimeException | LinkageError ex) {
      logger.warn("spanner-tuning could not record Spanner bean '" + beanName + "'", ex);
    }
  }

  /**
   * Starts the experiment {@code spanner.tuning.experiment.*} asks for. Fails open: a client with
   * nothing to compare runs on tuned, with a warning.
   */
  private void startExperiment(String beanName, SpannerTuningState state) {
    SpannerTuningProperties.Experiment experiment = this.properties.getObject().getExperiment();
    if (!experiment.startsAtStartup()) {
      return;
    }
    try {
      ExperimentPlan plan = state.experimentPlan(experiment.getDuration(), experiment.getSlice());
      ExperimentResult started = state.startExperiment(plan);
      logger.info(
          "spanner-tuning: experiment of "
              + plan.pairs()
              + " pairs of "
              + started.slice()
              + " slices started on Spanner client '"
              + beanName
              + "' (spanner.tuning.experiment.*); its result is in the spannertuning endpoint");
    } catch (IllegalStateException ex) {
      logger.warn(
          "spanner-tuning: no experiment on Spanner client '" + beanName + "': " + ex.getMessage());
    }
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
