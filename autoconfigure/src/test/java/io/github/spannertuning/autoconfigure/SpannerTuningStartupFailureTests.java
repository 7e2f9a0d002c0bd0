package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spring.autoconfigure.core.GcpContextAutoConfiguration;
import com.google.cloud.spring.autoconfigure.spanner.GcpSpannerAutoConfiguration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.autoconfigure.gson.GsonAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * A bad {@code spanner.tuning.*} value, from a properties file or an environment variable, run
 * through a whole {@link SpringApplication} with spring-cloud-gcp's Spanner auto-configuration:
 * startup fails once, with the failure analyzer's report naming the property, where its value came
 * from and what is allowed, before any Spanner client is built, and with no "could not tune"
 * warning.
 */
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningStartupFailureTests {

  /** Spanner clients and options that were built, seen before spanner-tuning's post-processor. */
  static final List<Object> built = new CopyOnWriteArrayList<>();

  @BeforeEach
  void clear() {
    built.clear();
  }

  @Test
  void misspeltKeyFromAPropertiesFile(CapturedOutput output) {
    run(Map.of(), "--spring.config.location=classpath:/bad-tuning/misspelt-key.properties");
    assertFailedOnce(
        output,
        "Unknown spanner-tuning property: spanner.tuning.stream-end-gaurd.enabled (from class path"
            + " resource [bad-tuning/misspelt-key.properties] - 1:41)",
        "Use only these properties: ",
        "spanner.tuning.stream-end-guard.enabled");
  }

  @Test
  void channelsZeroFromAnEnvironmentVariable(CapturedOutput output) {
    run(Map.of("SPANNER_TUNING_CHANNELS", "0"));
    assertFailedOnce(
        output,
        "Invalid value '0' for property 'spanner.tuning.channels' (from System Environment"
            + " Property \"SPANNER_TUNING_CHANNELS\"): must be an integer from 1 to 256",
        "Set 'spanner.tuning.channels' to an integer from 1 to 256.");
  }

  @Test
  void channelsNotANumberFromAPropertiesFile(CapturedOutput output) {
    run(Map.of(), "--spring.config.location=classpath:/bad-tuning/channels-abc.properties");
    assertFailedOnce(
        output,
        "Invalid value 'abc' for property 'spanner.tuning.channels' (from class path resource"
            + " [bad-tuning/channels-abc.properties] - 2:25)",
        "Set 'spanner.tuning.channels' to an integer from 1 to 256.");
  }

  @Test
  void badBooleanFromAnEnvironmentVariable(CapturedOutput output) {
    run(Map.of("SPANNER_TUNING_STREAMENDGUARD_ENABLED", "maybe"));
    assertFailedOnce(
        output,
        "Invalid value 'maybe' for property 'spanner.tuning.stream-end-guard.enabled' (from System"
            + " Environment Property \"SPANNER_TUNING_STREAMENDGUARD_ENABLED\")",
        "Set 'spanner.tuning.stream-end-guard.enabled' to true or false.");
  }

  @Test
  void experimentSliceNoLongerThanTheCarryOverFromAnEnvironmentVariable(CapturedOutput output) {
    run(Map.of("SPANNER_TUNING_EXPERIMENT_SLICE", "4s"));
    assertFailedOnce(
        output,
        "Invalid value '4s' for property 'spanner.tuning.experiment.slice' (from System"
            + " Environment Property \"SPANNER_TUNING_EXPERIMENT_SLICE\"): slice must be longer"
            + " than the carry-over discarded after each switch (5s), was 4s; must be a duration"
            + " longer than the carry-over",
        "Set 'spanner.tuning.experiment.slice' to a duration longer than the carry-over"
            + " discarded after each switch (the larger of the stream-end guard's drain timeout"
            + " and 2s), and in a fleet longer than that and 250ms together, such as 60s; unset,"
            + " 60s.");
  }

  @Test
  void experimentDurationHoldingNoPairFromAnEnvironmentVariable(CapturedOutput output) {
    run(Map.of("SPANNER_TUNING_EXPERIMENT_DURATION", "1m"));
    assertFailedOnce(
        output,
        "Invalid value '1m' for property 'spanner.tuning.experiment.duration' (from System"
            + " Environment Property \"SPANNER_TUNING_EXPERIMENT_DURATION\"): duration must hold"
            + " at least one pair of slices (2 x slice = 2m), was 60s",
        "Set 'spanner.tuning.experiment.duration' to a duration holding 1 to 500 pairs of"
            + " slices");
  }

  @Test
  void experimentFleetIdWithASpaceFromAnEnvironmentVariable(CapturedOutput output) {
    run(Map.of("SPANNER_TUNING_EXPERIMENT_FLEET", "checkout 2026"));
    assertFailedOnce(
        output,
        "Invalid value 'checkout 2026' for property 'spanner.tuning.experiment.fleet' (from System"
            + " Environment Property \"SPANNER_TUNING_EXPERIMENT_FLEET\"): fleet must be 1 to 64"
            + " letters, digits, '-', '_' or '.', the same on every instance, such as"
            + " checkout-2026-12, was 'checkout 2026'",
        "Set 'spanner.tuning.experiment.fleet' to 1 to 64 letters, digits, '-', '_' or '.', the"
            + " same on every instance, such as checkout-2026-12.");
  }

  private static void run(Map<String, Object> environmentVariables, String... args) {
    SpringApplication application = new SpringApplication(SpannerApplication.class);
    application.setWebApplicationType(WebApplicationType.NONE);
    StandardEnvironment environment = new StandardEnvironment();
    environment
        .getPropertySources()
        .replace(
            StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
            new SystemEnvironmentPropertySource(
                StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, environmentVariables));
    application.setEnvironment(environment);
    application.setDefaultProperties(
        Map.of(
            "spring.cloud.gcp.project-id", "test-project",
            "spring.cloud.gcp.spanner.instance-id", "test-instance",
            "spring.cloud.gcp.spanner.database", "test-database"));
    assertThatException().isThrownBy(() -> application.run(args).close());
  }

  private static void assertFailedOnce(
      CapturedOutput output, String description, String... action) {
    String text = output.getAll();
    assertThat(text).contains("APPLICATION FAILED TO START", description).contains(action);
    assertThat(text.split("APPLICATION FAILED TO START", -1)).as("one report").hasSize(2);
    assertThat(text).doesNotContain("could not tune").doesNotContain("tuned Spanner client");
    assertThat(built).as("Spanner clients or options built").isEmpty();
  }

  @Configuration(proxyBeanMethods = false)
  @ImportAutoConfiguration({
    GsonAutoConfiguration.class,
    GcpContextAutoConfiguration.class,
    GcpSpannerAutoConfiguration.class,
    SpannerTuningAutoConfiguration.class
  })
  static class SpannerApplication {

    @Bean
    CredentialsProvider credentialsProvider() {
      return NoCredentials::getInstance;
    }

    /**
     * An application bean that needs the client, as one that creates the schema at startup does.
     * Application beans are created before auto-configured ones, so the Spanner beans are
     * post-processed before spanner-tuning's properties bean would be created on its own.
     */
    @Bean
    Object schemaAtStartup(Spanner spanner) {
      return spanner.getOptions().getProjectId();
    }

    @Bean
    static BeanPostProcessor recordSpannerBeans() {
      return new BeanPostProcessor() {
        @Override
        public Object postProcessBeforeInitialization(Object bean, String beanName) {
          if (bean instanceof Spanner || bean instanceof SpannerOptions) {
            built.add(bean);
          }
          return bean;
        }
      };
    }
  }
}
