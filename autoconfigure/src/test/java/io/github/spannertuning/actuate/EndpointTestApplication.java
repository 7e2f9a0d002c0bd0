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
import org.springframework.core.env.Environment;

/**
 * A web application using spring-cloud-gcp's Spanner client against the mock server: one shared by
 * every such application in the JVM, or the one on the port {@value #SERVER_PORT} names (several
 * applications that share a server the test controls). It has no DataSource: the JDBC driver and
 * JPA on the test classpath are for the JDBC tests.
 */
@SpringBootConfiguration
@EnableAutoConfiguration(
    excludeName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
class EndpointTestApplication {

  /** The port of the test server to use instead of the shared one. */
  static final String SERVER_PORT = "spanner-tuning.test.server-port";

  @Bean
  CredentialsProvider credentialsProvider() {
    return NoCredentials::getInstance;
  }

  @Bean
  SpannerOptionsCustomizer mockServer(Environment environment) {
    Integer port = environment.getProperty(SERVER_PORT, Integer.class);
    String host = "http://127.0.0.1:" + ((port != null) ? port : Shared.SERVER.port());
    return (builder) ->
        builder.setHost(host).setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
  }

  /** The server every such application without {@value #SERVER_PORT} uses. */
  static MockSpannerServer sharedServer() {
    return Shared.SERVER;
  }

  /** The shared server, started when first asked for. */
  private static final class Shared {

    static final MockSpannerServer SERVER = start();

    private static MockSpannerServer start() {
      try {
        return MockSpannerServer.start();
      } catch (IOException ex) {
        throw new UncheckedIOException(ex);
      }
    }
  }
}
