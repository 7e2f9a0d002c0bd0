package io.github.spannertuning.sample.backend;

import com.google.api.gax.core.CredentialsProvider;
import com.google.auth.oauth2.GoogleCredentials;
import com.google.cloud.NoCredentials;
import com.google.cloud.spring.autoconfigure.core.GcpProperties;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import com.google.cloud.spring.core.DefaultCredentialsProvider;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ClassPathResource;

/**
 * The backend, chosen before spring-cloud-gcp builds the client: the client's credentials and host
 * come from it.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(SampleProperties.class)
public class SampleBackendConfiguration {

  /** The sample's DDL, one statement per element. */
  @Bean
  SchemaDdl schemaDdl() throws IOException {
    String text = new ClassPathResource("db/schema.sql").getContentAsString(StandardCharsets.UTF_8);
    List<String> statements =
        Arrays.stream(text.replaceAll("(?m)^\\s*--.*$", "").split(";"))
            .map(String::trim)
            .filter((statement) -> !statement.isEmpty())
            .toList();
    return new SchemaDdl(statements);
  }

  @Bean(destroyMethod = "close")
  SampleBackend sampleBackend(SampleProperties properties, Environment environment, SchemaDdl ddl)
      throws IOException, InterruptedException {
    return new BackendSelector(properties, environment, ddl.statements()).select();
  }

  /** Real credentials for Cloud Spanner only: the local backends take none. */
  @Bean
  CredentialsProvider credentialsProvider(SampleBackend backend, GcpProperties gcpProperties)
      throws IOException {
    if (!backend.needsCredentials()) {
      return NoCredentials::getInstance;
    }
    if (!gcpProperties.getCredentials().hasKey()) {
      try {
        GoogleCredentials.getApplicationDefault();
      } catch (IOException ex) {
        // Checked here so that the user gets the three ways, not spring-cloud-gcp's stack trace.
        throw new NoSpannerBackendException(
            "sample.backend=spanner, but no application default credentials were found");
      }
    }
    return new DefaultCredentialsProvider(gcpProperties);
  }

  /** The application's one customizer (spring-cloud-gcp allows one); spanner-tuning adds none. */
  @Bean
  SpannerOptionsCustomizer sampleBackendCustomizer(SampleBackend backend) {
    return backend::configure;
  }

  /** The DDL statements of {@code db/schema.sql}. */
  public record SchemaDdl(List<String> statements) {}
}
