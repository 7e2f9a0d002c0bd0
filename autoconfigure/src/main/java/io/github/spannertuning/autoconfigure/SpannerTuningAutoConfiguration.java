package io.github.spannertuning.autoconfigure;

import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.CallObserver;
import io.opentelemetry.api.OpenTelemetry;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * Tunes the Spanner clients the application builds from beans: spring-cloud-gcp's, on its regular
 * and its emulator path, the application's own {@link SpannerOptions} and {@code
 * SpannerOptions.Builder} beans, and the client Google's JDBC driver builds for each {@code
 * jdbc:cloudspanner:} DataSource. A {@code Spanner} bean built from a builder or options that are
 * not beans is out of reach: it is named in one warning and listed as not tuned. Registers no
 * {@code SpannerOptionsCustomizer}: spring-cloud-gcp allows one, and it belongs to the application.
 */
@AutoConfiguration(
    beforeName = {
      "com.google.cloud.spring.autoconfigure.spanner.GcpSpannerEmulatorAutoConfiguration",
      "com.google.cloud.spring.autoconfigure.spanner.GcpSpannerAutoConfiguration"
    })
@ConditionalOnClass(SpannerOptions.class)
@ConditionalOnSpannerTuningEnabled
@EnableConfigurationProperties(SpannerTuningProperties.class)
public class SpannerTuningAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  static SpannerTuningRegistry spannerTuningRegistry() {
    return new SpannerTuningRegistry();
  }

  @Bean
  static SpannerTuningBeanPostProcessor spannerTuningBeanPostProcessor(
      ObjectProvider<SpannerTuningProperties> properties,
      ObjectProvider<SpannerTuningRegistry> registry,
      ObjectProvider<OpenTelemetry> openTelemetry,
      ObjectProvider<CallObserver.Factory> observations) {
    return new SpannerTuningBeanPostProcessor(properties, registry, openTelemetry, observations);
  }

  /** Advice on settings that do nothing or harm on this client line; changes none of them. */
  @Bean
  @ConditionalOnMissingBean
  SpannerTuningAdvice spannerTuningAdvice(Environment environment) {
    return new SpannerTuningAdvice(environment);
  }

  @Bean
  @ConditionalOnProperty(name = "spanner.tuning.warm-up.enabled", matchIfMissing = true)
  SpannerTuningWarmUp spannerTuningWarmUp(
      SpannerTuningRegistry registry,
      SpannerTuningProperties properties,
      BeanFactory beans,
      Environment environment) {
    return new SpannerTuningWarmUp(
        registry, properties.getWarmUp().getTimeout(), beans, environment);
  }

  /** The JDBC driver's clients, where the driver and a DataSource are on the classpath. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"javax.sql.DataSource", "com.google.cloud.spanner.jdbc.JdbcDriver"})
  static class Jdbc {

    @Bean
    static SpannerTuningJdbcBeanPostProcessor spannerTuningJdbcBeanPostProcessor(
        ObjectProvider<SpannerTuningProperties> properties,
        ObjectProvider<SpannerTuningRegistry> registry,
        ObjectProvider<CallObserver.Factory> observations) {
      return new SpannerTuningJdbcBeanPostProcessor(properties, registry, observations);
    }
  }
}
