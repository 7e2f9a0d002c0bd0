package io.github.spannertuning.compat;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import io.grpc.ManagedChannelBuilder;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The application's own Spanner client, in the modes {@code own-options} and {@code
 * emulator-options}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnExpression("'${compat.spanner.mode:own-options}' != 'spring-cloud-gcp'")
class OwnSpannerClientConfiguration {

  @Bean
  CancelCounter cancelCounter() {
    return new CancelCounter();
  }

  @Bean
  @ConditionalOnProperty(
      name = "compat.spanner.mode",
      havingValue = "own-options",
      matchIfMissing = true)
  SpannerOptions spannerOptions(
      @Value("${compat.spanner.host}") String host,
      @Value("${spring.cloud.gcp.project-id}") String project,
      @Value("${compat.spanner.channels:8}") int channels,
      CancelCounter cancels) {
    return SpannerOptions.newBuilder()
        .setProjectId(project)
        .setHost(host)
        .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
        .setCredentials(NoCredentials.getInstance())
        .setNumChannels(channels)
        .setInterceptorProvider(SpannerInterceptorProvider.createDefault().with(cancels))
        .build();
  }

  @Bean(destroyMethod = "close")
  Spanner spanner(SpannerOptions options) {
    return options.getService();
  }
}
