package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.actuate.SpannerTuningEndpointWebExtension;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.endpoint.expose.EndpointExposure;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** The {@code spannertuning} Actuator endpoint, when Actuator is there and the endpoint exposed. */
@AutoConfiguration(after = SpannerTuningAutoConfiguration.class)
@ConditionalOnClass(Endpoint.class)
@ConditionalOnBean(SpannerTuningRegistry.class)
// "endpoint =", not the value alias: Boot 3.3 has only the former.
@ConditionalOnAvailableEndpoint(endpoint = SpannerTuningEndpoint.class)
public class SpannerTuningEndpointAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  SpannerTuningEndpoint spannerTuningEndpoint(SpannerTuningRegistry registry) {
    return new SpannerTuningEndpoint(registry::clients, registry::jdbcClient);
  }

  /** Refusals with their reason in the body, over HTTP. */
  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnAvailableEndpoint(
      endpoint = SpannerTuningEndpoint.class,
      exposure = EndpointExposure.WEB)
  SpannerTuningEndpointWebExtension spannerTuningEndpointWebExtension(
      SpannerTuningEndpoint endpoint) {
    return new SpannerTuningEndpointWebExtension(endpoint);
  }
}
