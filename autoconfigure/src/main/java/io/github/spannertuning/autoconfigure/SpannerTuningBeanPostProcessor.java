package io.github.spannertuning.autoconfigure;

import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.ExperimentResult;
import io.opentelemetry.api.OpenTelemetry;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.Ordered;
import org.springframework.util.ClassUtils;

/**
 * Tunes Spanner clients as their configuration beans are created: {@link SpannerOptions.Builder}
 * beans (spring-cloud-gcp's prototype builder, after the application's {@code
 * SpannerOptionsCustomizer} ran) are tuned in place, {@link SpannerOptions} beans built elsewhere
 * (spring-cloud-gcp's emulator path, or an application's own) are rebuilt tuned. {@link Spanner}
 * beans are recorded in the {@link SpannerTuningRegistry} under their bean name.
 *
 * <p>Logs one INFO line per tuned client, with its bean name. A {@link Spanner} bean built from a
 * builder or options that are not beans is out of its reach: it gets one warning naming it and what
 * would tune it, and is recorded untuned, with every feature {@code unsupported} and that reason.
 * Fails open: if tuning a bean throws, the bean is kept as it was and a warning is logged. A bad
 * {@code spanner.tuning.*} value is not failed open: it stops startup before the first Spanner bean
 * is tuned.
 *
 * <p>Where Spring Boot traces with OpenTelemetry (an {@code SdkTracerProvider} bean, which Boot
 * makes for Micrometer Tracing's OpenTelemetry bridge) and the application chose OpenTelemetry
 * traces for the Spanner client, a builder given no OpenTelemetry is given the application's {@link
 * OpenTelemetry} bean, so that the client's spans join Boot's traces. spring-cloud-gcp does not
 * pass it, and without it the client traces with {@code GlobalOpenTelemetry}, which Boot does not
 * set.
 */
class SpannerTuningBeanPostProcessor implements BeanPostProcessor, BeanFactoryAware, Ordered {

  private static final Log logger = LogFactory.getLog(SpannerTuningBeanPostProcessor.class);

  /** The tracer provider of Boot's OpenTelemetry when Boot traces with it. */
  static final String SDK_TRACER_PROVIDER = "io.opentelemetry.sdk.trace.SdkTracerProvider";

  /** Why a Spanner bean built from a builder or options that are not beans is not tuned. */
  static final String UNTUNED =
      "not tuned: built from a SpannerOptions.Builder or SpannerOptions that is not a bean, which"
          + " spanner-tuning does not see";

  static final String UNTUNED_REMEDY =
      "To tune it, declare the builder or the options as a @Bean and build the Spanner from that"
          + " bean, or call SpannerTuning.applyTo on the builder before build()"
          + " (spannerTuningProperties.toTuning().applyTo(builder) applies the spanner.tuning.*"
          + " settings)";

  private final ObjectProvider<SpannerTuningProperties> properties;

  private final ObjectProvider<SpannerTuningRegistry> registry;

  private final ObjectProvider<OpenTelemetry> openTelemetry;

  private final ObjectProvider<CallObserver.Factory> observations;

  private ListableBeanFactory beanFactory;

  private volatile SpannerTuning tuning;

  /**
   * Set when tuning a builder or options bean failed: a client built from it would look as if it
   * had not been reached, and the warning already logged names that bean.
   */
  private volatile boolean failedOpen;

  private final Set<String> warnedUntuned = ConcurrentHashMap.newKeySet();

  SpannerTuningBeanPostProcessor(
      ObjectProvider<SpannerTuningProperties> properties,
      ObjectProvider<SpannerTuningRegistry> registry,
      ObjectProvider<OpenTelemetry> openTelemetry,
      ObjectProvider<CallObserver.Factory> observations) {
    this.properties = properties;
    this.observations = observations;
    this.registry = registry;
    this.openTelemetry = openTelemetry;
  }

  @Override
  public void setBeanFactory(BeanFactory beanFactory) {
    if (beanFactory instanceof ListableBeanFactory listable) {
      this.beanFactory = listable;
    }
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
        traceWithBootsOpenTelemetry(builder, beanName);
        tuning.applyTo(builder);
      } else {
        return tuning.tune((SpannerOptions) bean);
      }
    } catch (RuntimeException | LinkageError ex) {
      this.failedOpen = true;
      logger.warn(
          "spanner-tuning could not tune bean '" + beanName + "'; it is left as it was", ex);
    }
    return bean;
  }

  private void traceWithBootsOpenTelemetry(SpannerOptions.Builder builder, String beanName) {
    if (!bootTracesWithOpenTelemetry()) {
      return;
    }
    OpenTelemetry openTelemetry = this.openTelemetry.getIfUnique();
    if (openTelemetry != null && SpannerTuning.traceWithIfUnset(builder, openTelemetry)) {
      logger.info(
          "spanner-tuning: the Spanner client of bean '"
              + beanName
              + "' traces with the application's OpenTelemetry bean");
    }
  }

  private boolean bootTracesWithOpenTelemetry() {
    ClassLoader loader = getClass().getClassLoader();
    return this.beanFactory != null
        && ClassUtils.isPresent(SDK_TRACER_PROVIDER, loader)
        && this.beanFactory.getBeanNamesForType(
                    ClassUtils.resolveClassName(SDK_TRACER_PROVIDER, loader), false, false)
                .length
            > 0;
  }

  private void register(Spanner spanner, String beanName) {
    try {
      SpannerOptions options = spanner.getOptions();
      Optional<SpannerTuningState> state = SpannerTuning.stateOf(options);
      if (state.isPresent()) {
        this.registry.getObject().register(beanName, state.get());
        logger.info(
            "spanner-tuning: tuned Spanner client '" + beanName + "' " + state.get().summary());
        startExperiment(beanName, state.get());
      } else if (!this.failedOpen && SpannerTuning.untunedButReachable(options)) {
        registerUntuned(spanner, options, beanName);
      }
    } catch (RuntimeException | LinkageError ex) {
      logger.warn("spanner-tuning could not record Spanner bean '" + beanName + "'", ex);
    }
  }

  /**
   * A client built from a builder or options this post-processor never saw: its {@code @Bean}
   * method made them itself. The client runs as it is; only the application can bring it in reach.
   * No {@code spanner.tuning.*} value applies to it, so none is bound for it.
   */
  private void registerUntuned(Spanner spanner, SpannerOptions options, String beanName) {
    this.registry
        .getObject()
        .registerUntuned(beanName, spanner, SpannerTuning.defaults().unsupported(UNTUNED, options));
    if (this.warnedUntuned.add(beanName)) {
      logger.warn(
          "spanner-tuning: Spanner client '"
              + beanName
              + "' is "
              + UNTUNED
              + ". "
              + UNTUNED_REMEDY
              + ". Spanner traffic is not affected.");
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
      ExperimentPlan plan =
          state
              .experimentPlan(experiment.getDuration(), experiment.getSlice())
              .inFleet(experiment.getFleet());
      ExperimentResult started = state.startExperiment(plan);
      logger.info(
          "spanner-tuning: experiment of "
              + plan.pairs()
              + " pairs of "
              + started.slice()
              + " slices started on Spanner client '"
              + beanName
              + "' (spanner.tuning.experiment.*)"
              + started.scope()
              + "; its result is in the spannertuning endpoint");
    } catch (IllegalStateException ex) {
      logger.warn(
          "spanner-tuning: no experiment on Spanner client '" + beanName + "': " + ex.getMessage());
    }
  }

  private SpannerTuning tuning() {
    SpannerTuning tuning = this.tuning;
    if (tuning == null) {
      tuning = this.properties.getObject().toTuning(this.observations.getIfAvailable());
      this.tuning = tuning;
    }
    return tuning;
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }
}
