package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Configuration;

/**
 * {@link SpannerTuningPropertiesFailureAnalyzer} on the failures Boot's binder raises for {@link
 * SpannerTuningProperties}, bound on their own (no Spanner client). Expected keys come from the
 * configuration metadata the processor generated, not from the analyzer.
 */
class SpannerTuningPropertiesFailureAnalyzerTests {

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner().withUserConfiguration(BindTuningProperties.class);

  @ParameterizedTest(name = "{0}={1}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          channels                       | 0     | must be an integer from 1 to 256           | an integer from 1 to 256
          channels                       | 257   | must be an integer from 1 to 256           | an integer from 1 to 256
          channels                       | -3    | must be an integer from 1 to 256           | an integer from 1 to 256
          channels                       | eight | eight                                      | an integer from 1 to 256
          stream-end-guard.drain-timeout | 0s    | must be a positive duration                | a positive duration, such as 5s or 500ms
          stream-end-guard.drain-timeout | -1s   | must be a positive duration                | a positive duration, such as 5s or 500ms
          stream-end-guard.drain-timeout | soon  | soon                                       | a positive duration, such as 5s or 500ms
          stream-end-guard.max-concurrent-streams | 0    | must be an integer of at least 1  | an integer of at least 1, the concurrent streams the server allows per connection (Cloud Spanner allows 100)
          stream-end-guard.max-concurrent-streams | -5   | must be an integer of at least 1  | an integer of at least 1, the concurrent streams the server allows per connection (Cloud Spanner allows 100)
          stream-end-guard.max-concurrent-streams | many | many                              | an integer of at least 1, the concurrent streams the server allows per connection (Cloud Spanner allows 100)
          hedging.max-extra              | 1.5   | must be a share of hedgeable reads from 0 to 1 | a share of hedgeable reads from 0 to 1, the extra calls hedging may add (0.05 is 5 %)
          hedging.max-extra              | -0.1  | must be a share of hedgeable reads from 0 to 1 | a share of hedgeable reads from 0 to 1, the extra calls hedging may add (0.05 is 5 %)
          hedging.max-extra              | 5%    | 5%                                         | a share of hedgeable reads from 0 to 1, the extra calls hedging may add (0.05 is 5 %)
          hedging.min-delay              | -1ms  | must be a duration of 0 or more            | a duration of 0 or more, such as 1ms
          warm-up.timeout                | 0s    | must be a positive duration                | a positive duration, such as 10s
          warm-up.reads                  | -1    | must be 0 (off) or a number of reads up to 100000 | 0 (off) or a number of reads up to 100000
          warm-up.reads                  | 100001 | must be 0 (off) or a number of reads up to 100000 | 0 (off) or a number of reads up to 100000
          warm-up.reads                  | lots  | lots                                       | 0 (off) or a number of reads up to 100000
          warm-up.timeout                | later | later                                      | a positive duration, such as 10s
          warm-up.refresh-after          | soon  | must be learned, off, or a duration of at least 1s | learned, off, or a duration of at least 1s, such as 50m
          warm-up.refresh-after          | 500ms | must be learned, off, or a duration of at least 1s | learned, off, or a duration of at least 1s, such as 50m
          """)
  void aBadValueIsNamedWithWhatTheKeyAccepts(
      String key, String value, String described, String accepts) {
    String property = "spanner.tuning." + key;
    FailureAnalysis analysis = analyze(property + "=" + value);
    assertThat(analysis.getDescription())
        .startsWith("Invalid value '" + value + "' for property '" + property + "'")
        .contains(described);
    assertThat(analysis.getAction()).isEqualTo("Set '" + property + "' to " + accepts + ".");
  }

  @ParameterizedTest(name = "{0}=maybe")
  @MethodSource("switches")
  void aSwitchThatIsNotABooleanAsksForTrueOrFalse(String property) {
    FailureAnalysis analysis = analyze(property + "=maybe");
    assertThat(analysis.getDescription())
        .startsWith("Invalid value 'maybe' for property '" + property + "'");
    assertThat(analysis.getAction()).isEqualTo("Set '" + property + "' to true or false.");
  }

  static Stream<String> switches() {
    return ConfigurationMetadata.spannerTuningKeys().entrySet().stream()
        .filter((key) -> key.getValue().equals("java.lang.Boolean"))
        .map(Map.Entry::getKey);
  }

  @Test
  void theSwitchesAreTheMetadatasBooleans() {
    assertThat(switches())
        .containsExactlyInAnyOrder(
            "spanner.tuning.enabled",
            "spanner.tuning.single-use-distribution.enabled",
            "spanner.tuning.transaction-routing.enabled",
            "spanner.tuning.stream-end-guard.enabled",
            "spanner.tuning.hedging.enabled",
            "spanner.tuning.grpc-gcp.enabled",
            "spanner.tuning.warm-up.enabled",
            "spanner.tuning.metrics.enabled",
            "spanner.tuning.observations.enabled");
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      textBlock =
          """
          spanner.tuning.stream-end-gaurd.enabled=false                       | Unknown spanner-tuning property: spanner.tuning.stream-end-gaurd.enabled
          spanner.tuning.channel=4                                            | Unknown spanner-tuning property: spanner.tuning.channel
          spanner.tuning.metrics.enable=false,spanner.tuning.metrics.on=false | Unknown spanner-tuning properties: spanner.tuning.metrics.enable (from "spanner.tuning.metrics.enable" from property source "test"), spanner.tuning.metrics.on
          """)
  void anUnknownKeyIsNamedWithEveryKeyThereIs(String properties, String described) {
    FailureAnalysis analysis = analyze(properties.split(","));
    assertThat(analysis.getDescription()).startsWith(described);
    assertThat(analysis.getAction())
        .isEqualTo(
            "Use only these properties: "
                + String.join(", ", ConfigurationMetadata.spannerTuningKeys().keySet()));
  }

  @Test
  void theAllowedKeysAreTheMetadatasAndEachSaysWhatItAccepts() {
    assertThat(SpannerTuningPropertiesFailureAnalyzer.ALLOWED.keySet())
        .containsExactlyElementsOf(ConfigurationMetadata.spannerTuningKeys().keySet());
    assertThat(SpannerTuningPropertiesFailureAnalyzer.ALLOWED.values())
        .doesNotContain("a valid value");
  }

  @ParameterizedTest(name = "show-statements={0}")
  @ValueSource(strings = {"sometimes", "authorized", "true"})
  void aBadShowStatementsIsNamedWithTheValuesItAccepts(String value) {
    String property = "management.endpoint.spannertuning.show-statements";
    FailureAnalysis analysis =
        analyze(
            new ApplicationContextRunner().withUserConfiguration(BindEndpointProperties.class),
            property + "=" + value);
    assertThat(analysis.getDescription())
        .startsWith("Invalid value '" + value + "' for property '" + property + "'")
        .endsWith(": must be never, when-authorized or always");
    assertThat(analysis.getAction())
        .isEqualTo("Set '" + property + "' to never, when-authorized or always.");
  }

  @ParameterizedTest(name = "show-statements={0}")
  @CsvSource({"never, NEVER", "when-authorized, WHEN_AUTHORIZED", "always, ALWAYS"})
  void showStatementsTakesBootsValues(String value, Show bound) {
    new ApplicationContextRunner()
        .withUserConfiguration(BindEndpointProperties.class)
        .withPropertyValues(
            "management.endpoint.spannertuning.show-statements=" + value,
            "management.endpoint.spannertuning.roles=ops,admin")
        .run(
            (context) -> {
              SpannerTuningEndpointProperties properties =
                  context.getBean(SpannerTuningEndpointProperties.class);
              assertThat(properties.getShowStatements()).isEqualTo(bound);
              assertThat(properties.getRoles()).containsExactlyInAnyOrder("ops", "admin");
            });
    new ApplicationContextRunner()
        .withUserConfiguration(BindEndpointProperties.class)
        .run(
            (context) ->
                assertThat(
                        context.getBean(SpannerTuningEndpointProperties.class).getShowStatements())
                    .isEqualTo(Show.NEVER));
  }

  @Test
  void leavesOtherPropertiesToBoot() {
    new ApplicationContextRunner()
        .withUserConfiguration(BindOtherProperties.class)
        .withPropertyValues("other.size=big")
        .run(
            (context) -> {
              assertThat(context).hasFailed();
              assertThat(
                      new SpannerTuningPropertiesFailureAnalyzer()
                          .analyze(context.getStartupFailure()))
                  .isNull();
            });
  }

  private FailureAnalysis analyze(String... properties) {
    return analyze(this.contextRunner, properties);
  }

  private static FailureAnalysis analyze(
      ApplicationContextRunner contextRunner, String... properties) {
    FailureAnalysis[] analysis = new FailureAnalysis[1];
    contextRunner
        .withPropertyValues(properties)
        .run(
            (context) -> {
              assertThat(context).hasFailed();
              analysis[0] =
                  new SpannerTuningPropertiesFailureAnalyzer().analyze(context.getStartupFailure());
            });
    assertThat(analysis[0]).as("failure analysis").isNotNull();
    return analysis[0];
  }

  @Configuration(proxyBeanMethods = false)
  @EnableConfigurationProperties(SpannerTuningProperties.class)
  static class BindTuningProperties {}

  @Configuration(proxyBeanMethods = false)
  @EnableConfigurationProperties(SpannerTuningEndpointProperties.class)
  static class BindEndpointProperties {}

  @Configuration(proxyBeanMethods = false)
  @EnableConfigurationProperties(OtherProperties.class)
  static class BindOtherProperties {}

  @ConfigurationProperties("other")
  static class OtherProperties {

    private int size;

    public int getSize() {
      return this.size;
    }

    public void setSize(int size) {
      this.size = size;
    }
  }
}
