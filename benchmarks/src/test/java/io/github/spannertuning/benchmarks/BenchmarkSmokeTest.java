package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the whole load benchmark at a tiny scale (every workload, every variant, the frontend in
 * its own JVM) and checks that it reports. Not a timing: the figures of so short a run mean
 * nothing, and are not asserted.
 */
class BenchmarkSmokeTest {

  private static final List<String> WORKLOADS = List.of("steady", "bursty", "spiky", "degraded");

  @Test
  void everyWorkloadAndVariantIsMeasuredAndReported(@TempDir Path out) throws Exception {
    BenchmarkMain.run(
        "--out", out.toString(),
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
    assertThat(line.path("workloads")).extracting((w) -> w.path("name").asText())
        .containsExactlyElementsOf(WORKLOADS);
    for (JsonNode workload : line.path("workloads")) {
      assertThat(workload.path("variants")).extracting((v) -> v.path("variant").asText())
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
            .as(what + " busiest/mean").isGreaterThanOrEqualTo(1.0);
      }
    }
    JsonNode degraded = line.path("workloads").get(3);
    assertThat(degraded.path("variants").get(0).path("rounds").get(0).has("degradedShareOfEven"))
        .as("the degraded workload slowed a connection").isTrue();

    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown).contains("## Headline: tuned / stock", "### Floor");
    for (String workload : WORKLOADS) {
      assertThat(markdown).contains("| " + workload + " |");
    }
    assertThat(markdown).contains(
        "| metric | stock | tuned | delta | distribution only | guard only | round robin |");
    String html = Files.readString(out.resolve("benchmarks.html"));
    assertThat(html).contains("<svg", "round robin", "spiky point select, one connection slowed");
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
    assertThat(line.path("workloads")).extracting((w) -> w.path("name").asText())
        .containsExactly("slow-trailers-1ch", "slow-trailers-8ch");
    int[] channels = {1, 8};
    for (int i = 0; i < channels.length; i++) {
      JsonNode workload = line.path("workloads").get(i);
      assertThat(workload.path("closedLoop").asBoolean()).isTrue();
      assertThat(workload.path("channels").asInt()).isEqualTo(channels[i]);
      assertThat(workload.path("trailersDelayMs").asDouble()).isEqualTo(1.0);
      assertThat(workload.path("variants")).extracting((v) -> v.path("variant").asText())
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
    assertThat(markdown).contains(
        "### closed-loop point select, trailers 1 ms late, 1 channel (8 threads",
        "### closed-loop point select, trailers 1 ms late, 8 channels (8 threads",
        "| throughput (queries/s) |",
        "| closes at last cancelled instead of drained |");
  }
}
