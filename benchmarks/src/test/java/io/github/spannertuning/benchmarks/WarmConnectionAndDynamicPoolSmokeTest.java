package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.spannertuning.pool.PoolRouting;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * As {@link BenchmarkSmokeTest}, the workloads of warm connections (connections the frontend
 * retires, a fresh instance) and of grpc-gcp's dynamic channel pool, at a tiny scale: they report,
 * and the flags that do not apply are refused. A class of their own so that the module's two test
 * JVMs share the smoke runs. Not a timing: the figures are not asserted.
 */
class WarmConnectionAndDynamicPoolSmokeTest {

  @Test
  void theWarmConnectionWorkloadsCountTheReadsThatWaitedAndReportTheirTargets(@TempDir Path out)
      throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", "aging,fresh-instance",
        "--client-cpus", "0",
        "--scale", "0.1",
        "--window-s", "1.5",
        "--burst-period-s", "0.4",
        "--burst-length-s", "0.1",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10",
        "--max-connection-age-s", "1",
        "--max-connection-age-grace-s", "0.2",
        "--connection-set-up-ms", "20",
        "--fresh-instance-rounds", "1");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .containsExactly("aging", "fresh-instance");
    JsonNode aging = line.path("workloads").get(0);
    assertThat(aging.path("connections").path("maxAgeS").asDouble()).isEqualTo(1.0);
    assertThat(aging.path("frontend").path("maxConnectionAge").asText()).startsWith("1 s");
    assertThat(aging.path("noRetirement").path("frontend").has("maxConnectionAge"))
        .as("the baseline's frontend retires no connection")
        .isFalse();
    for (JsonNode variants :
        List.of(aging.path("variants"), aging.path("noRetirement").path("variants"))) {
      assertThat(variants)
          .extracting((v) -> v.path("variant").asText())
          .containsExactly("stock", "tuned");
      for (JsonNode variant : variants) {
        String what = "aging / " + variant.path("variant").asText();
        assertThat(variant.path("ops").asLong()).as(what + " ops").isPositive();
        assertThat(variant.path("readsThatWaitedForSetUp").isNumber()).as(what).isTrue();
        assertThat(variant.path("primingCalls").isNumber()).as(what).isTrue();
        assertThat(variant.path("connectionsSetUp").isNumber()).as(what).isTrue();
      }
    }
    JsonNode fresh = line.path("workloads").get(1);
    assertThat(fresh.path("windowS").asDouble())
        .as("the first second, then the first whole burst period after it, and a second")
        .isCloseTo(2.2, within(1e-9));
    for (JsonNode variant : fresh.path("variants")) {
      String what = "fresh-instance / " + variant.path("variant").asText();
      JsonNode round = variant.path("rounds").get(0);
      assertThat(round.path("readyMs").asDouble()).as(what + " ready").isPositive();
      assertThat(round.path("firstOps").asLong()).as(what + " first second").isPositive();
      assertThat(round.path("warmOps").asLong()).as(what + " warm second").isPositive();
      assertThat(round.path("connectionsSetUp").asLong())
          .as(what + ": a new client's connections are set up in its window")
          .isPositive();
    }
    assertThat(fresh.path("variants").get(1).path("primingCalls").asLong())
        .as("tuned is ready once its channels are primed, inside its window")
        .isPositive();
    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "## Headline: warm connections",
            "| metric | stock | tuned | stock, no retirement | tuned, no retirement |",
            "| reads that waited for a connection |",
            "| time to ready per round (ms) |",
            "| aging: tuned P99.9 at most 1.2x its P99.9 with no retirement",
            "| fresh instance: tuned first-second P99 after ready at most 1.2x");
    assertThat(Files.readString(out.resolve("benchmarks.html")))
        .contains("Tuned P99.9 over its P99.9 with no connection retired", "Time to ready");
  }

  @Test
  void theWarmConnectionWorkloadsAreInTheDefaultSetOnTheUnlimitedClientOnly() {
    assertThat(BenchmarkMain.DEFAULT_WORKLOADS.split(","))
        .contains(BenchmarkMain.AGING, BenchmarkMain.FRESH_INSTANCE);
    assertThatIllegalArgumentException()
        .isThrownBy(() -> BenchmarkMain.run("--workloads", "", "--limited-workloads", "aging"))
        .withMessageContaining("--limited-workloads aging is not on the CPU-limited client");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> BenchmarkMain.run("--max-connection-age-s", "0.5"))
        .withMessageContaining("--max-connection-age-s must be at least 1");
  }

  @Test
  void onTheDynamicPoolStockTunedAndHedgingRunTheIssuesWorkloadsAndThePoolIsSampled(
      @TempDir Path out) throws Exception {
    assumeTrue(PoolRouting.hasChannelReferences(), "the dynamic pool is routed from 6.119");
    BenchmarkMain.run(
        "--out", out.toString(),
        "--pool", "dynamic",
        "--dcp-scale-down-s", "0.1",
        "--client-cpus", "0",
        "--jvm-warmup-queries", "0",
        "--scale", "0.1",
        "--window-s", "0.5",
        "--burst-period-s", "0.4",
        "--burst-length-s", "0.1",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10",
        "--fresh-threads", "16",
        "--fresh-service-ms", "20",
        "--fresh-service-random-ms", "2",
        "--grow-shrink-threads", "120",
        "--grow-shrink-high-s", "0.75",
        "--grow-shrink-low-threads", "2",
        "--grow-shrink-low-s", "1");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    JsonNode pool = line.path("pool");
    assertThat(pool.path("kind").asText()).isEqualTo("dynamic");
    assertThat(pool.path("initSize").asInt()).isEqualTo(4);
    assertThat(pool.path("scaleDownIntervalS").asDouble()).isEqualTo(0.1);
    assertThat(pool.path("productionScaleDownIntervalS").asDouble()).isEqualTo(180.0);
    assertThat(line.path("flags").has("channels"))
        .as("--channels does not apply on the dynamic pool")
        .isFalse();
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .as("the dynamic pool's default workloads")
        .containsExactly("degraded", "fresh-client", "stragglers", "grow-shrink");
    for (JsonNode workload : line.path("workloads")) {
      assertThat(workload.path("variants"))
          .extracting((v) -> v.path("variant").asText())
          .as(workload.path("name").asText())
          .containsExactly("stock", "tuned", "tuned + hedging");
      for (JsonNode variant : workload.path("variants")) {
        String what = workload.path("name").asText() + " / " + variant.path("variant").asText();
        JsonNode round = variant.path("rounds").get(0);
        assertThat(variant.path("ops").asLong()).as(what + " ops").isPositive();
        assertThat(variant.path("routesOnDynamicPool").asBoolean())
            .as(what + ": the starter's routing follows the pool")
            .isEqualTo(!variant.path("variant").asText().equals("stock"));
        assertThat(round.path("poolSizes").size()).as(what + " pool sizes").isGreaterThan(2);
        assertThat(round.path("poolPeak").asInt()).as(what + " pool peak").isBetween(2, 10);
      }
    }
    JsonNode degraded = line.path("workloads").get(0);
    assertThat(degraded.path("variants").get(0).path("rounds").get(0).has("degradedShareOfEven"))
        .as("the degraded workload slowed a connection the pool had")
        .isTrue();
    JsonNode growShrink = line.path("workloads").get(3);
    assertThat(growShrink.path("phases").path("lowThreads").asInt()).isEqualTo(2);
    assertThat(growShrink.path("windowS").asDouble()).isEqualTo(1.75);
    for (JsonNode variant : growShrink.path("variants")) {
      JsonNode round = variant.path("rounds").get(0);
      // A fresh client's pool: its 4 channels, or fewer where a scale-down interval (0.1 s
      // here) passed idle between the client's warm-up and the window's first sample, as it
      // does when the machine is busy; never a pool the previous variant grew.
      assertThat(round.path("poolAtStart").asInt())
          .as("%s: a fresh client's pool", variant.path("variant").asText())
          .isBetween(pool.path("minSize").asInt(), 4);
      assertThat(round.has("poolAtEndOfHigh")).isTrue();
      assertThat(round.has("poolLargestStep")).isTrue();
    }

    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "Channel pool, ",
            "scale-down interval 0.1 s (production 3 min)",
            "## Headline: dynamic channel pool",
            "## Headline: tuned / stock",
            "| routing follows the dynamic pool |",
            "| failed queries per round |",
            "Pool size every 0.25 s from the window's start",
            "Within one of stock's steps, per round: r1 ",
            "| degraded on the dynamic pool: P99 at most 0.45x stock",
            "| stragglers on the dynamic pool: P99 at most 0.30x stock",
            "| grow-shrink: pool's peak")
        .doesNotContain("--channels 8");
    assertThat(Files.readString(out.resolve("benchmarks.html"))).contains(" ch</text>");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("flagsTheDynamicPoolRefuses")
  void flagsThatDoNotApplyToThePoolAreRefusedWithTheReason(String expected, String[] args) {
    assumeTrue(PoolRouting.hasChannelReferences(), "the dynamic pool is routed from 6.119");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> BenchmarkMain.run(args))
        .withMessageContaining(expected);
  }

  static Stream<Arguments> flagsTheDynamicPoolRefuses() {
    return Stream.of(
        refused("--pool must be static or dynamic, was 'elastic'", "--pool", "elastic"),
        refused("--channels sets a fixed pool's size", "--pool", "dynamic", "--channels", "4"),
        refused(
            "--fresh-channels sets a fixed pool's size",
            "--pool",
            "dynamic",
            "--fresh-channels",
            "4",
            "--client-cpus",
            "0"),
        refused(
            "--dcp-scale-down-s sets the dynamic pool's timing; it needs --pool dynamic",
            "--dcp-scale-down-s",
            "5"),
        refused("--workloads grow-shrink needs --pool dynamic", "--workloads", "grow-shrink"),
        refused(
            "--variants round-robin is not on the dynamic pool",
            "--pool",
            "dynamic",
            "--variants",
            "stock,round-robin"),
        refused(
            "--workloads jdbc-point-selects is not on the dynamic pool",
            "--pool",
            "dynamic",
            "--workloads",
            "jdbc-point-selects",
            "--client-cpus",
            "0"),
        refused(
            "--workloads aging is not on the dynamic pool",
            "--pool",
            "dynamic",
            "--workloads",
            "aging",
            "--client-cpus",
            "0"),
        refused(
            "--pool dynamic runs on an unlimited client only: add --client-cpus 0",
            "--pool",
            "dynamic"));
  }

  private static Arguments refused(String expected, String... args) {
    return Arguments.of(expected, args);
  }

  @Test
  void aLineThatCannotRouteTheDynamicPoolRefusesIt() {
    assumeTrue(!PoolRouting.hasChannelReferences(), "from 6.119 the dynamic pool is routed");
    assertThatIllegalArgumentException()
        .isThrownBy(() -> BenchmarkMain.run("--pool", "dynamic", "--client-cpus", "0"))
        .withMessageContaining("google-cloud-spanner 6.119 or later");
  }
}
