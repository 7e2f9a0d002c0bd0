package io.github.spannertuning.actuate;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.ManagedChannelBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * A web application using spring-cloud-gcp's Spanner client against the mock server. It has no
 * DataSource: the JDBC driver and JPA on the test classpath are for the JDBC tests.
 */
@SpringBootConfiguration
@EnableAutoConfiguration(
    excludeName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
class EndpointTestApplication {

  static final MockSpannerServer SERVER = start();

  private static MockSpannerServer start() {
    try {
      return MockSpannerServer.start();
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }

  @Bean
  CredentialsProvider credentialsProvider() {
    return NoCredentials::getInstance;
  }

  @Bean
  SpannerOptionsCustomizer mockServer() {
    return (builder) ->
        builder
            .setHost("http://127.0.0.1:" + SERVER.port())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
  }
}
