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
 * Runs the whole load benchmark at a tiny scale (every workload, every variant, the frontend in its
 * own JVM) and checks that it reports. Not a timing: the figures of so short a run mean nothing,
 * and are not asserted.
 */
class BenchmarkSmokeTest {

  private static final List<String> WORKLOADS = List.of("steady", "bursty", "spiky", "degraded");

  @Test
  void everyWorkloadAndVariantIsMeasuredAndReported(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", String.join(",", WORKLOADS),
        "--scale", "0.1",
        "--window-s", "0.5",
        "--burst-period-s", "0.4",
        "--burst-length-s", "0.1",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10",
        "--client-cpus", "0");

    JsonNode report = new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile());
    assertThat(report.path("lines")).hasSize(1);
    JsonNode line = report.path("lines").get(0);
    assertThat(line.path("floor").path("stock").path("queries").asLong()).isEqualTo(10);
    assertThat(line.path("floor").path("tuned").path("queries").asLong()).isEqualTo(10);
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .containsExactlyElementsOf(WORKLOADS);
    for (JsonNode workload : line.path("workloads")) {
      assertThat(workload.path("variants"))
          .extracting((v) -> v.path("variant").asText())
          .as(workload.path("name").asText())
          .containsExactly("stock", "tuned", "distribution only", "guard only", "round robin");
      for (JsonNode variant : workload.path("variants")) {
        String what = workload.path("name").asText() + " / " + variant.path("variant").asText();
        assertThat(variant.path("ops").asLong()).as(what + " ops").isPositive();
        assertThat(variant.path("errors").asLong()).as(what + " errors").isZero();
        assertThat(variant.path("p99Ms").asDouble()).as(what + " P99").isPositive();
        assertThat(variant.path("cpuMsPer1000").isNumber()).as(what + " CPU").isTrue();
        assertThat(variant.path("bytesPerQuery").asDouble()).as(what + " bytes").isPositive();
        assertThat(variant.path("throwablesPerQuery").isNumber()).as(what + " throwables").isTrue();
        assertThat(variant.path("serverSharesSorted")).as(what + " channel shares").hasSize(8);
        assertThat(variant.path("serverBusiestOverMean").asDouble())
            .as(what + " busiest/mean")
            .isGreaterThanOrEqualTo(1.0);
      }
    }
    JsonNode degraded = line.path("workloads").get(3);
    assertThat(degraded.path("variants").get(0).path("rounds").get(0).has("degradedShareOfEven"))
        .as("the degraded workload slowed a connection")
        .isTrue();

    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown).contains("## Headline: tuned / stock", "### Floor");
    for (String workload : WORKLOADS) {
      assertThat(markdown).contains("| " + workload + " |");
    }
    assertThat(markdown)
        .contains(
            "| metric | stock | tuned | delta | distribution only | guard only | round robin |");
    assertThat(markdown)
        .as("a report without hedging points to the page that has it")
        .contains("## Hedged reads", "(benchmarks-hedging.md)")
        .doesNotContain("## Headline: hedged reads");
    String html = Files.readString(out.resolve("benchmarks.html"));
    assertThat(html).contains("<svg", "round robin", "spiky point select, one connection slowed");
  }

  @Test
  void theStragglerWorkloadsCompareStockTunedAndHedging(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", "stragglers,stragglers-outage",
        "--variants", "stock,tuned",
        "--client-cpus", "0",
        "--scale", "0.1",
        "--window-s", "0.5",
        "--burst-period-s", "0.4",
        "--burst-length-s", "0.1",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .containsExactly("stragglers", "stragglers-outage");
    double[] shares = {0.02, 1.0};
    for (int i = 0; i < shares.length; i++) {
      JsonNode workload = line.path("workloads").get(i);
      assertThat(workload.path("stragglers").path("share").asDouble()).isEqualTo(shares[i]);
      assertThat(workload.path("stragglers").path("lateMs").asDouble()).isEqualTo(50.0);
      assertThat(workload.path("variants"))
          .extracting((v) -> v.path("variant").asText())
          .as("tuned + hedging is added where no hedging variant was named")
          .containsExactly("stock", "tuned", "tuned + hedging");
      for (JsonNode variant : workload.path("variants")) {
        String what = workload.path("name").asText() + " / " + variant.path("variant").asText();
        assertThat(variant.path("ops").asLong()).as(what + " ops").isPositive();
        assertThat(variant.path("serverCalls").asLong())
            .as(what + ": every query reached the frontend at least once")
            .isGreaterThanOrEqualTo(variant.path("ops").asLong());
        assertThat(variant.has("hedgesSent"))
            .as(what + ": hedges are counted for the hedging variant only")
            .isEqualTo(variant.path("variant").asText().equals("tuned + hedging"));
      }
    }
    for (JsonNode variant : line.path("workloads").get(1).path("variants")) {
      assertThat(variant.path("lateCalls").asLong())
          .as("%s: in the outage every call is late", variant.path("variant").asText())
          .isEqualTo(variant.path("serverCalls").asLong());
    }
    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "## Headline: hedged reads",
            "| metric | stock | tuned | delta | tuned + hedging |",
            "| server calls / query (frontend) |",
            "| hedges sent / won / denied |",
            "| P99, median of rounds (ms) |",
            "| CPU steal per round (%; ! over 5 %) |",
            "| stragglers: P99 at most 0.30x stock on 6.127",
            "| outage: P99 at most 1.05x tuned")
        .doesNotContain("## Hedged reads", "| degraded: P99 at most 0.5x");
  }

  @Test
  void hedgingVariantsRunOnTheStragglerWorkloadsAndWhenNamed() {
    assertThat(
            BenchmarkMain.withHedging(
                List.of(Variant.STOCK, Variant.TUNED, Variant.DISTRIBUTION_ONLY)))
        .containsExactly(Variant.STOCK, Variant.TUNED, Variant.HEDGED);
    assertThat(
            BenchmarkMain.withHedging(
                List.of(Variant.of("tuned"), Variant.of("hedging-p95"), Variant.of("hedging-p99"))))
        .containsExactly(Variant.TUNED, Variant.HEDGING_P95, Variant.HEDGING_P99);
    assertThat(Variant.of("hedged")).isEqualTo(Variant.HEDGED);
    assertThat(Variant.of("hedging-p97.5")).isEqualTo(Variant.HEDGING_P975);
    assertThat(BenchmarkMain.DEFAULT_WORKLOADS.split(","))
        .doesNotContain(BenchmarkMain.STRAGGLERS, BenchmarkMain.STRAGGLERS_OUTAGE);
  }

  @Test
  void theSlowTrailersWorkloadsCompareStockAndTunedClosedLoop(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", "slow-trailers-1ch,slow-trailers-8ch",
        "--client-cpus", "0",
        "--slow-trailers-ms", "1",
        "--slow-trailers-threads", "8",
        "--window-s", "0.5",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .containsExactly("slow-trailers-1ch", "slow-trailers-8ch");
    int[] channels = {1, 8};
    for (int i = 0; i < channels.length; i++) {
      JsonNode workload = line.path("workloads").get(i);
      assertThat(workload.path("closedLoop").asBoolean()).isTrue();
      assertThat(workload.path("channels").asInt()).isEqualTo(channels[i]);
      assertThat(workload.path("trailersDelayMs").asDouble()).isEqualTo(1.0);
      assertThat(workload.path("variants"))
          .extracting((v) -> v.path("variant").asText())
          .containsExactly("stock", "tuned");
      for (JsonNode variant : workload.path("variants")) {
        String what = workload.path("name").asText() + " / " + variant.path("variant").asText();
        assertThat(variant.path("ops").asLong()).as(what + " ops").isPositive();
        assertThat(variant.path("opsPerSecond").asDouble()).as(what + " throughput").isPositive();
        assertThat(variant.path("cancelledAtLimit").isNumber()).as(what + " cancels").isTrue();
        assertThat(variant.path("serverSharesSorted")).as(what + " shares").hasSize(channels[i]);
      }
      assertThat(workload.path("variants").get(0).path("cancelledAtLimit").asLong())
          .as("the stock client cancels no stream at a limit")
          .isZero();
    }
    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "### closed-loop point select, trailers 1 ms late, 1 channel (8 threads",
            "### closed-loop point select, trailers 1 ms late, 8 channels (8 threads",
            "| throughput (queries/s) |",
            "| closes at last cancelled instead of drained |");
  }

  @Test
  void theFaultAndFreshClientWorkloadsReportWhereTheirCallsWent(@TempDir Path out)
      throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", "stalled,recovered,fresh-client",
        "--client-cpus", "0",
        "--scale", "0.1",
        "--window-s", "1",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10",
        "--stall-deadline-ms", "200",
        "--fresh-threads", "16",
        "--fresh-service-ms", "20",
        "--fresh-service-random-ms", "2");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .containsExactly("stalled", "recovered", "fresh-client");
    JsonNode stalled = line.path("workloads").get(0);
    assertThat(stalled.path("fault").asText()).isEqualTo("stalled");
    assertThat(stalled.path("deadlineMs").asLong()).isEqualTo(200);
    for (JsonNode variant : stalled.path("variants")) {
      JsonNode round = variant.path("rounds").get(0);
      assertThat(round.path("faultyArrivalsAfterGrace").isNumber())
          .as("%s: the stalled connection's reads are counted", variant.path("variant").asText())
          .isTrue();
    }
    JsonNode recovered = line.path("workloads").get(1);
    assertThat(recovered.path("fault").asText()).isEqualTo("recovered");
    for (JsonNode variant : recovered.path("variants")) {
      JsonNode round = variant.path("rounds").get(0);
      assertThat(round.path("faultyShareOfEvenBeforeRestore").isNumber())
          .as("%s: the slowed connection's share while slowed", variant.path("variant").asText())
          .isTrue();
      assertThat(round.has("recoverySeconds")).isTrue();
    }
    JsonNode fresh = line.path("workloads").get(2);
    assertThat(fresh.path("warmedUp").asBoolean()).as("a fresh client is not warmed up").isFalse();
    assertThat(fresh.path("idealQueriesPerSecond").asDouble()).isCloseTo(16 / 0.022, within(0.01));
    assertThat(fresh.path("variants"))
        .extracting((v) -> v.path("variant").asText())
        .containsExactly("stock", "tuned");
    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "| reads sent to the stalled connection after its first 200 ms, per round |",
            "| s from recovery until it carried half its even share in 0.5 s, per round |",
            "| share of ideal throughput (threads / mean server time) |",
            "| stalled: failed reads, tuned (stock) |");
  }

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
  void theJdbcWorkloadComparesStockAndTunedThroughTheDriver(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", "jdbc-point-selects",
        "--client-cpus", "0",
        "--scale", "0.1",
        "--spiky-threads", "8",
        "--window-s", "0.5",
        "--rounds", "1",
        "--warmup-queries", "16",
        "--floor-queries", "10");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    assertThat(line.path("workloads"))
        .extracting((w) -> w.path("name").asText())
        .containsExactly("jdbc-point-selects");
    JsonNode jdbc = line.path("workloads").get(0);
    assertThat(jdbc.path("api").asText()).isEqualTo("jdbc");
    assertThat(jdbc.path("fault").asText()).isEqualTo("slowed");
    assertThat(jdbc.path("variants"))
        .extracting((v) -> v.path("variant").asText())
        .containsExactly("stock", "tuned");
    for (JsonNode variant : jdbc.path("variants")) {
      String what = "jdbc-point-selects / " + variant.path("variant").asText();
      assertThat(variant.path("ops").asLong()).as(what + " ops").isPositive();
      assertThat(variant.path("errors").asLong()).as(what + " errors").isZero();
      assertThat(variant.path("rounds").get(0).has("degradedShareOfEven"))
          .as(what + ": a connection was slowed")
          .isTrue();
    }
    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "| jdbc-point-selects |",
            "| throughput (queries/s) |",
            "| P99, median of rounds (ms) |");
  }

  @Test
  void theJdbcWorkloadIsNotInTheDefaultSetButCanBeNamed() {
    List<Workload> all =
        List.of(
            new Workload("spiky", "spiky", 600, 300, 3, 5, 1, 100, 0, List.of(Variant.STOCK)),
            new Workload("spiky", "spiky", 600, 300, 3, 5, 1, 100, 0, List.of(Variant.STOCK))
                .named(BenchmarkMain.JDBC_POINT_SELECTS, "through JDBC")
                .viaJdbc());
    assertThat(BenchmarkMain.choose(all, "jdbc-point-selects"))
        .singleElement()
        .satisfies((w) -> assertThat(w.jdbc()).isTrue());
    assertThat(BenchmarkMain.DEFAULT_WORKLOADS.split(","))
        .doesNotContain(BenchmarkMain.JDBC_POINT_SELECTS);
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
      assertThat(round.path("poolAtStart").asInt())
          .as("%s: a fresh client's pool", variant.path("variant").asText())
          .isEqualTo(4);
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
