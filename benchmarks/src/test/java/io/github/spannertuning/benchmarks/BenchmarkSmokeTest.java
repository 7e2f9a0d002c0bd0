package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
}
