package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.AdviceDescriptor;
import io.github.spannertuning.advice.ClientLine;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.actuate.autoconfigure.endpoint.jackson.JacksonEndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.jackson.EndpointObjectMapper;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * The advice in a Boot application: one WARN line per finding at startup and the endpoint's {@code
 * advice} list, on a line where each rule holds, and neither on a line where it does not. A test
 * classpath holds one client line, so each test feeds the line through {@link
 * SpannerTuningAdvice}'s package-private seam, written out as the published jars have it.
 */
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningAdviceTests {

  private static final ClientLine LINE_6_89 = new ClientLine("6.89.0", "1.6.1", "1.6.1");

  private static final ClientLine LINE_6_119 = new ClientLine("6.119.0", "1.12.0", "1.12.0");

  private static final Pattern WARNING = Pattern.compile("WARN .*spanner-tuning advice: (\\S+?): ");

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  SpannerTuningAutoConfiguration.class,
                  SpannerTuningEndpointAutoConfiguration.class,
                  JacksonEndpointAutoConfiguration.class))
          .withPropertyValues(
              "management.endpoints.web.exposure.include=spannertuning",
              "spanner.tuning.warm-up.enabled=false");

  private ApplicationContextRunner on(ClientLine line) {
    return this.contextRunner
        .withBean(ClientLine.class, () -> line)
        .withUserConfiguration(FedLine.class);
  }

  @Test
  void aCleanApplicationGetsNoAdvice(CapturedOutput output) {
    on(LINE_6_119)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(advice(context.getBean(SpannerTuningEndpoint.class))).isEmpty();
              assertThat(warnedProperties(output)).isEmpty();
            });
  }

  @Test
  void theAutoConfiguredAdviceOnThisClasspathIsEmptyForACleanApplication(CapturedOutput output) {
    this.contextRunner.run(
        (context) -> {
          assertThat(context).hasSingleBean(SpannerTuningAdvice.class);
          assertThat(context.getBean(SpannerTuningAdvice.class).advice()).isEmpty();
          String json =
              context
                  .getBean(EndpointObjectMapper.class)
                  .get()
                  .writeValueAsString(context.getBean(SpannerTuningEndpoint.class).clients());
          // Present and empty, so a reader need not tell "none" from "not supported".
          assertThat(new ObjectMapper().readTree(json).get("advice").isArray()).isTrue();
          assertThat(new ObjectMapper().readTree(json).get("advice")).isEmpty();
          assertThat(warnedProperties(output)).isEmpty();
        });
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "spring.cloud.gcp.spanner.min-sessions=7341",
        "spring.cloud.gcp.spanner.max-sessions=7341",
        "spring.cloud.gcp.spanner.max-idle-sessions=7341",
        "spring.cloud.gcp.spanner.write-sessions-fraction=0.7341",
        "spring.cloud.gcp.spanner.keep-alive-interval-minutes=7341",
        "spring.cloud.gcp.spanner.fail-if-pool-exhausted=true"
      })
  void aSessionPoolPropertyIsAdvisedOn6119AndNotOn689(String setting, CapturedOutput output) {
    String property = setting.substring(0, setting.indexOf('='));
    String value = setting.substring(setting.indexOf('=') + 1);
    on(LINE_6_119)
        .withPropertyValues(setting)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              List<AdviceDescriptor> advice = advice(context.getBean(SpannerTuningEndpoint.class));
              assertThat(advice).extracting(AdviceDescriptor::property).containsExactly(property);
              assertThat(advice.get(0).reason()).contains("no session pool");
              assertThat(advice.get(0).fix()).contains("remove " + property);
              assertThat(warnedProperties(output)).containsExactly(property);
              String warning = warningLine(output);
              assertThat(warning).contains("no session pool", "Fix: remove " + property);
              assertThat(warning).doesNotContain(value);
              assertThat(json(context)).doesNotContain(value);
              // Advice changes nothing: the application's setting is as it set it.
              assertThat(context.getEnvironment().getProperty(property)).isEqualTo(value);
            });
    int before = output.getAll().length();
    on(LINE_6_89)
        .withPropertyValues(setting)
        .run(
            (context) -> {
              assertThat(advice(context.getBean(SpannerTuningEndpoint.class))).isEmpty();
              assertThat(warnedProperties(output, before)).isEmpty();
            });
  }

  @Test
  void aSessionPoolPropertyFromTheEnvironmentsRelaxedFormIsSeen(CapturedOutput output) {
    on(LINE_6_119)
        .withInitializer(
            (context) ->
                context
                    .getEnvironment()
                    .getPropertySources()
                    .addFirst(
                        new SystemEnvironmentPropertySource(
                            "test-systemEnvironment",
                            Map.of("SPRING_CLOUD_GCP_SPANNER_MAXSESSIONS", "7341"))))
        .run(
            (context) ->
                assertThat(advice(context.getBean(SpannerTuningEndpoint.class)))
                    .extracting(AdviceDescriptor::property)
                    .containsExactly("spring.cloud.gcp.spanner.max-sessions"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"spring.cloud.gcp.spanner.num-rpc-channels", "spanner.tuning.channels"})
  void aChannelCountIsAdvisedWhereTheDynamicPoolExistsAndNotOn689(
      String property, CapturedOutput output) {
    on(LINE_6_119)
        .withPropertyValues(property + "=13")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              List<AdviceDescriptor> advice = advice(context.getBean(SpannerTuningEndpoint.class));
              assertThat(advice).extracting(AdviceDescriptor::property).containsExactly(property);
              assertThat(advice.get(0).reason()).contains("dynamic channel pool off");
              assertThat(warnedProperties(output)).containsExactly(property);
              assertThat(warningLine(output))
                  .contains("dynamic channel pool off")
                  .doesNotContain("13 ");
            });
    int before = output.getAll().length();
    on(LINE_6_89)
        .withPropertyValues(property + "=13")
        .run(
            (context) -> {
              assertThat(advice(context.getBean(SpannerTuningEndpoint.class))).isEmpty();
              assertThat(warnedProperties(output, before)).isEmpty();
            });
  }

  @Test
  void numRpcChannelsUnderSpannerTuningChannelsIsAdvisedOn689Too(CapturedOutput output) {
    on(LINE_6_89)
        .withPropertyValues(
            "spring.cloud.gcp.spanner.num-rpc-channels=13", "spanner.tuning.channels=14")
        .run(
            (context) -> {
              assertThat(advice(context.getBean(SpannerTuningEndpoint.class)))
                  .extracting(AdviceDescriptor::property)
                  .containsExactly("spring.cloud.gcp.spanner.num-rpc-channels");
              assertThat(warnedProperties(output))
                  .containsExactly("spring.cloud.gcp.spanner.num-rpc-channels");
            });
  }

  @Test
  void aGrpcGcpOlderThanTheClientAsksForIsAdvisedAndAMatchingOneIsNot(CapturedOutput output) {
    on(new ClientLine("6.119.0", "1.9.0", "1.12.0"))
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              List<AdviceDescriptor> advice = advice(context.getBean(SpannerTuningEndpoint.class));
              assertThat(advice)
                  .extracting(AdviceDescriptor::property)
                  .containsExactly("com.google.cloud:grpc-gcp");
              assertThat(advice.get(0).reason()).contains("NoSuchMethodError");
              assertThat(warnedProperties(output)).containsExactly("com.google.cloud:grpc-gcp");
            });
    int before = output.getAll().length();
    on(LINE_6_119)
        .run(
            (context) -> {
              assertThat(advice(context.getBean(SpannerTuningEndpoint.class))).isEmpty();
              assertThat(warnedProperties(output, before)).isEmpty();
            });
  }

  @Test
  void aLineThatCannotBeReadGivesNoAdviceAndStartupGoesOn(CapturedOutput output) {
    this.contextRunner
        .withUserConfiguration(UnreadableLine.class)
        .withPropertyValues("spring.cloud.gcp.spanner.max-sessions=7341")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(advice(context.getBean(SpannerTuningEndpoint.class))).isEmpty();
              assertThat(warnedProperties(output)).isEmpty();
            });
  }

  private static List<AdviceDescriptor> advice(SpannerTuningEndpoint endpoint) {
    return endpoint.clients().advice();
  }

  private static String json(
      org.springframework.boot.test.context.assertj.AssertableApplicationContext context)
      throws Exception {
    return context
        .getBean(EndpointObjectMapper.class)
        .get()
        .writeValueAsString(context.getBean(SpannerTuningEndpoint.class).clients());
  }

  private static List<String> warnedProperties(CapturedOutput output) {
    return warnedProperties(output, 0);
  }

  /** The properties warned about in what was printed from {@code from} on. */
  private static List<String> warnedProperties(CapturedOutput output, int from) {
    List<String> properties = new ArrayList<>();
    Matcher matcher = WARNING.matcher(output.getAll().substring(from));
    while (matcher.find()) {
      properties.add(matcher.group(1));
    }
    return properties;
  }

  private static String warningLine(CapturedOutput output) {
    return output
        .getAll()
        .lines()
        .filter((line) -> line.contains("spanner-tuning advice:"))
        .findFirst()
        .orElseThrow();
  }

  /** The advice bean on the line the test's {@link ClientLine} bean names. */
  @Configuration(proxyBeanMethods = false)
  static class FedLine {

    @Bean
    SpannerTuningAdvice spannerTuningAdvice(Environment environment, ClientLine line) {
      return new SpannerTuningAdvice(environment, () -> line);
    }
  }

  /** A line whose versions cannot be read. */
  @Configuration(proxyBeanMethods = false)
  static class UnreadableLine {

    @Bean
    SpannerTuningAdvice spannerTuningAdvice(Environment environment) {
      return new SpannerTuningAdvice(
          environment,
          () -> {
            throw new IllegalStateException("no manifest");
          });
    }
  }
}
