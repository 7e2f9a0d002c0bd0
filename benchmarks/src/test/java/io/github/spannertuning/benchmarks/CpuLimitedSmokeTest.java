package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the CPU-limited part at a tiny scale (a pinned child JVM, its own pinned frontend) and
 * checks where each process ran, the sweep's bookkeeping and the report. Not a timing: the SLO is
 * set so loose that every rate passes, so the capacity is the top rate by construction.
 */
class CpuLimitedSmokeTest {

  @Test
  void clientOnOneCoreSweepsAndReports(@TempDir Path out) throws Exception {
    String allowed = CpuLimit.allowed("self");
    assumeTrue(allowed != null && CpuLimit.parse(allowed).size() >= 2, "needs Linux and 2 cores");
    assumeTrue(CpuLimit.split(1).skipped() == null, "needs taskset");
    List<Integer> cores = CpuLimit.parse(allowed);
    String clientCore = cores.get(0).toString();
    String frontendCores = CpuLimit.format(cores.subList(1, cores.size()));

    BenchmarkMain.run(
        "--out", out.toString(),
        "--workloads", "",
        "--floor-queries", "10",
        "--warmup-queries", "16",
        "--client-cpus", "1",
        "--limited-workloads", "capacity,spiky",
        "--capacity-rates", "100,50",
        "--capacity-window-s", "0.5",
        "--capacity-rounds", "1",
        "--limited-window-s", "0.8",
        "--limited-rounds", "2",
        "--burst-period-s", "0.4",
        "--burst-length-s", "0.1",
        "--jvm-warmup-queries", "100",
        "--limited-warmup-queries", "16",
        "--slo-ms", "100000");

    JsonNode line =
        new ObjectMapper().readTree(out.resolve("benchmarks.json").toFile()).path("lines").get(0);
    JsonNode limited = line.path("cpuLimited");
    assertThat(limited.path("clientCores").asText()).isEqualTo(clientCore);
    assertThat(limited.path("frontendCores").asText()).isEqualTo(frontendCores);
    JsonNode client = limited.path("cores").path("client");
    assertThat(client.path("cpusAllowed").asText()).isEqualTo(clientCore);
    assertThat(client.path("availableProcessors").asInt()).isEqualTo(1);
    assertThat(fieldNames(client.path("threadSamplesByLastCore"))).containsOnly(clientCore);
    JsonNode frontend = limited.path("cores").path("frontend");
    assertThat(CpuLimit.parse(frontend.path("cpusAllowed").asText()))
        .containsExactlyElementsOf(cores.subList(1, cores.size()));
    assertThat(fieldNames(frontend.path("threadSamplesByLastCore")))
        .isNotEmpty()
        .allSatisfy(
            (core) -> assertThat(cores.subList(1, cores.size())).contains(Integer.valueOf(core)));

    JsonNode capacity = limited.path("capacity");
    assertThat(capacity.path("points"))
        .extracting((p) -> p.path("rate").asDouble())
        .containsExactly(50.0, 100.0);
    assertThat(capacity.path("capacityRate").path("stock").asDouble()).isEqualTo(100.0);
    assertThat(capacity.path("capacityRate").path("tuned").asDouble()).isEqualTo(100.0);
    assertThat(capacity.path("fellBehindAt").size()).isZero();
    assertThat(capacity.path("p99CapacityRate").path("stock").asDouble()).isEqualTo(100.0);
    assertThat(capacity.path("firstFailureAt").size()).isZero();
    assertThat(capacity.path("atShare").path("baseRate").asDouble()).isEqualTo(75.0);
    assertThat(capacity.path("atShare").path("rounds").asInt()).isEqualTo(2);
    JsonNode spiky = limited.path("workloads").get(0);
    assertThat(spiky.path("name").asText()).isEqualTo("spiky");
    assertThat(spiky.path("baseRate").asDouble()).isCloseTo(100.0 / 3, Offset.offset(1e-9));
    assertThat(spiky.path("variants"))
        .extracting((v) -> v.path("variant").asText())
        .containsExactly("stock", "tuned");
    assertThat(spiky.path("variants").get(0).path("rounds")).hasSize(2);

    String markdown = Files.readString(out.resolve("benchmarks.md"));
    assertThat(markdown)
        .contains(
            "## Headline: the client on 1 vCPU",
            "| 6.",
            "100/s -> at least 100/s",
            "### Capacity sweep (client on 1 vCPU)",
            "### Steady at 75.0% of stock's capacity",
            "| spiky | 1 vCPU | 33/s |",
            "What it does not model");
    assertThat(Files.readString(out.resolve("benchmarks.html")))
        .contains("SLO 100000 ms", "<circle");
  }

  @Test
  void aRateCountsOnlyWithNoFailureNoBacklogAndP99WithinTheSlo() {
    assertThat(CpuLimitedRun.withinSlo(variant(0, 0, 19.9), 20)).isTrue();
    assertThat(CpuLimitedRun.withinSlo(variant(0, 0, 20.1), 20)).isFalse();
    assertThat(CpuLimitedRun.withinSlo(variant(1, 0, 5), 20)).isFalse();
    assertThat(CpuLimitedRun.withinSlo(variant(0, 3, 5), 20)).isFalse();
    assertThat(CpuLimitedRun.p99WithinSlo(variant(1, 0, 5), 20))
        .as("a failed query aside")
        .isTrue();
    assertThat(CpuLimitedRun.p99WithinSlo(variant(0, 3, 5), 20)).as("arrivals not sent").isFalse();
    assertThat(CpuLimitedRun.p99WithinSlo(variant(0, 0, 20.1), 20)).isFalse();
  }

  @Test
  void coreListsAreParsedAsLinuxWritesThem() {
    assertThat(CpuLimit.parse("0-2,5,7-8")).containsExactly(0, 1, 2, 5, 7, 8);
    assertThat(CpuLimit.format(CpuLimit.parse("3"))).isEqualTo("3");
  }

  private static Map<String, Object> variant(long errors, long unsent, double p99) {
    return Map.of("errors", errors, "unsent", unsent, "p99Ms", p99);
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
