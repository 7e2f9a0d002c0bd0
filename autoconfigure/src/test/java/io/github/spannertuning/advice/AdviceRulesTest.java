package io.github.spannertuning.advice;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The rules over fed client lines. Each line is written out as the published jars have it (the
 * client's version and the grpc-gcp its pom asks for), not read from the code under test.
 */
class AdviceRulesTest {

  private static final ClientLine LINE_6_89 = new ClientLine("6.89.0", "1.6.1", "1.6.1");

  private static final ClientLine LINE_6_113 = new ClientLine("6.113.0", "1.9.0", "1.9.0");

  private static final ClientLine LINE_6_119 = new ClientLine("6.119.0", "1.12.0", "1.12.0");

  private static final List<String> SESSION_POOL =
      List.of(
          "spring.cloud.gcp.spanner.min-sessions",
          "spring.cloud.gcp.spanner.max-sessions",
          "spring.cloud.gcp.spanner.max-idle-sessions",
          "spring.cloud.gcp.spanner.write-sessions-fraction",
          "spring.cloud.gcp.spanner.keep-alive-interval-minutes",
          "spring.cloud.gcp.spanner.fail-if-pool-exhausted");

  @Test
  void aCleanConfigurationGetsNoAdviceOnAnyLine() {
    for (ClientLine line : List.of(LINE_6_89, LINE_6_113, LINE_6_119)) {
      assertThat(AdviceRules.advise(line, Set.of())).isEmpty();
    }
  }

  @Test
  void everySessionPoolPropertyIsNamedOnTheLinesWithoutAPool() {
    Set<String> set = Set.copyOf(SESSION_POOL);
    for (ClientLine line : List.of(LINE_6_113, LINE_6_119)) {
      List<Advice> advice = AdviceRules.advise(line, set);
      assertThat(advice).extracting(Advice::property).containsExactlyElementsOf(SESSION_POOL);
      assertThat(advice)
          .allSatisfy(
              (finding) -> {
                assertThat(finding.reason()).contains("no session pool", "#4191");
                assertThat(finding.fix()).startsWith("remove " + finding.property());
              });
    }
  }

  @Test
  void theSessionPoolStillMattersOn689() {
    assertThat(AdviceRules.advise(LINE_6_89, Set.copyOf(SESSION_POOL))).isEmpty();
  }

  @Test
  void theFirstReleaseWithoutAPoolIs6108() {
    String property = "spring.cloud.gcp.spanner.max-sessions";
    assertThat(AdviceRules.advise(new ClientLine("6.107.0", "1.9.0", "1.9.0"), Set.of(property)))
        .isEmpty();
    assertThat(AdviceRules.advise(new ClientLine("6.108.0", "1.9.0", "1.9.0"), Set.of(property)))
        .extracting(Advice::property)
        .containsExactly(property);
  }

  @ParameterizedTest
  @ValueSource(strings = {"spring.cloud.gcp.spanner.num-rpc-channels", "spanner.tuning.channels"})
  void aChannelCountIsNamedWhereTheDynamicPoolExists(String property) {
    for (ClientLine line : List.of(LINE_6_113, LINE_6_119)) {
      assertThat(AdviceRules.advise(line, Set.of(property)))
          .singleElement()
          .satisfies(
              (finding) -> {
                assertThat(finding.property()).isEqualTo(property);
                assertThat(finding.reason()).contains("setNumChannels", "dynamic channel pool");
              });
    }
    assertThat(AdviceRules.advise(LINE_6_89, Set.of(property))).isEmpty();
    assertThat(AdviceRules.advise(new ClientLine("6.104.0", "1.8.0", "1.8.0"), Set.of(property)))
        .isEmpty();
    assertThat(AdviceRules.advise(new ClientLine("6.105.0", "1.8.0", "1.8.0"), Set.of(property)))
        .extracting(Advice::property)
        .containsExactly(property);
  }

  @Test
  void bothChannelCountsSetNumRpcChannelsDoesNothingOnEveryLine() {
    Set<String> both =
        Set.of("spring.cloud.gcp.spanner.num-rpc-channels", "spanner.tuning.channels");
    assertThat(AdviceRules.advise(LINE_6_89, both))
        .singleElement()
        .satisfies(
            (finding) -> {
              assertThat(finding.property()).isEqualTo("spring.cloud.gcp.spanner.num-rpc-channels");
              assertThat(finding.reason()).contains("no effect");
            });
    // Where the dynamic pool exists, its advice goes to the count that decides: spanner-tuning's.
    assertThat(AdviceRules.advise(LINE_6_119, both))
        .extracting(Advice::property)
        .containsExactly("spring.cloud.gcp.spanner.num-rpc-channels", "spanner.tuning.channels");
  }

  @Test
  void aGrpcGcpOlderThanTheClientsPomAsksForIsNamed() {
    ClientLine skewed = new ClientLine("6.119.0", "1.9.0", "1.12.0");
    assertThat(AdviceRules.advise(skewed, Set.of()))
        .singleElement()
        .satisfies(
            (finding) -> {
              assertThat(finding.property()).isEqualTo("com.google.cloud:grpc-gcp");
              assertThat(finding.reason()).contains("1.9.0", "1.12.0", "NoSuchMethodError");
              assertThat(finding.fix()).contains("1.12.0");
            });
  }

  @Test
  void aGrpcGcpAsNewOrNewerThanAskedForOrUnknownIsFine() {
    assertThat(AdviceRules.advise(new ClientLine("6.119.0", "1.20.0", "1.12.0"), Set.of()))
        .isEmpty();
    assertThat(AdviceRules.advise(new ClientLine("6.119.0", "1.10.0", "1.9.2"), Set.of()))
        .isEmpty();
    assertThat(AdviceRules.advise(new ClientLine("6.119.0", null, "1.12.0"), Set.of())).isEmpty();
    assertThat(AdviceRules.advise(new ClientLine("6.119.0", "1.9.0", "unknown"), Set.of()))
        .isEmpty();
  }

  @Test
  void anUnknownClientVersionGetsNoLineRule() {
    ClientLine unknown = new ClientLine("unknown", "1.12.0", "1.12.0");
    assertThat(AdviceRules.advise(unknown, Set.copyOf(SESSION_POOL))).isEmpty();
  }

  @Test
  void readsTheGrpcGcpVersionFromTheClientsPom() {
    // The dependency as google-cloud-spanner 6.119.0's own pom (inside its jar) lists it.
    String pom =
        "<dependencies>\n    <dependency>\n      <groupId>com.google.api</groupId>\n"
            + "      <artifactId>gax-grpc</artifactId>\n      <version>2.72.2</version>\n"
            + "    </dependency>\n    <dependency>\n      <groupId>com.google.cloud</groupId>\n"
            + "      <artifactId>grpc-gcp</artifactId>\n      <version>1.12.0</version>\n"
            + "      <scope>compile</scope>\n";
    assertThat(ClientLine.grpcGcpIn(pom)).isEqualTo("1.12.0");
    assertThat(ClientLine.grpcGcpIn("<project/>")).isEqualTo("unknown");
  }

  @Test
  void theClasspathsClientNamesTheGrpcGcpItWasBuiltAgainst() {
    assertThat(ClientLine.detected().grpcGcpRequired()).matches("\\d+\\.\\d+\\.\\d+");
  }
}
