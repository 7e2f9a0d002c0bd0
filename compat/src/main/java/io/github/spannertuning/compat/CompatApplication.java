package io.github.spannertuning.compat;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * A small web application that uses Spanner the way each supported line allows, with the starter as
 * its only tuning dependency. {@code compat.spanner.mode} says who builds the client:
 *
 * <ul>
 *   <li>{@code own-options} (default): the application's own {@code SpannerOptions} and {@code
 *       Spanner} beans, as on Boot 4 where spring-cloud-gcp's Spanner auto-configuration does not
 *       run;
 *   <li>{@code emulator-options}: spring-cloud-gcp's emulator auto-configuration builds {@code
 *       SpannerOptions}, the application the {@code Spanner} bean;
 *   <li>{@code spring-cloud-gcp}: spring-cloud-gcp's Spanner auto-configuration builds everything.
 * </ul>
 */
@SpringBootApplication
public class CompatApplication {

  public static void main(String[] args) {
    SpringApplication.run(CompatApplication.class, args);
  }

  /** The backends are local (mock server or emulator): no Google credentials. */
  @Bean
  CredentialsProvider credentialsProvider() {
    return NoCredentials::getInstance;
  }
}
