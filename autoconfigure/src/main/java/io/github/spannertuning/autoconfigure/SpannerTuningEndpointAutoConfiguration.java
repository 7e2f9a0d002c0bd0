package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.actuate.SpannerTuningEndpointWebExtension;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.endpoint.expose.EndpointExposure;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/** The {@code spannertuning} Actuator endpoint, when Actuator is there and the endpoint exposed. */
@AutoConfiguration(after = SpannerTuningAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(SpannerTuningRegistry.class)
// "endpoint =", not the value alias: Boot 3.3 has only the former.
@ConditionalOnAvailableEndpoint(endpoint = SpannerTuningEndpoint.class)
@EnableConfigurationProperties(SpannerTuningEndpointProperties.class)
public class SpannerTuningEndpointAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  SpannerTuningEndpoint spannerTuningEndpoint(
      SpannerTuningRegistry registry,
      SpannerTuningEndpointProperties properties,
      ObjectProvider<SpannerTuningAdvice> advice) {
    return new SpannerTuningEndpoint(
        registry::clients,
        registry::jdbcClient,
        properties.getShowStatements(),
        () -> {
          SpannerTuningAdvice found = advice.getIfAvailable();
          return (found != null) ? found.advice() : List.of();
        });
  }

  /**
   * Refusals with their reason in the body, and the statements' text shown per request, over HTTP.
   */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnAvailableEndpoint(
      endpoint = SpannerTuningEndpoint.class,
      exposure = EndpointExposure.WEB)
  SpannerTuningEndpointWebExtension spannerTuningEndpointWebExtension(
      SpannerTuningEndpoint endpoint, SpannerTuningEndpointProperties properties) {
    return new SpannerTuningEndpointWebExtension(
        endpoint, properties.getShowStatements(), properties.getRoles());
  }
}
