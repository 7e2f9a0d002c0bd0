package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the experiment comparison at a tiny scale (both workloads, one round side by side, one pair
 * of slices, the frontend in its own JVM) and checks that it reports both parts. Not a timing: one
 * pair gives no interval, and the figures of so short a run mean nothing.
 */
class ExperimentComparisonSmokeTest {

  @Test
  void bothPartsOfBothWorkloadsAreReported(@TempDir Path out) throws Exception {
    Path report =
        ExperimentComparison.run(
            "--out", out.resolve("experiment.md").toString(),
            "--command", "smoke",
            "--scale", "0.1",
            "--window-s", "0.5",
            "--burst-period-s", "0.4",
            "--burst-length-s", "0.1",
            "--rounds", "1",
            "--pairs", "1",
            "--slice-s", "2.5",
            "--warmup-queries", "16",
            "--jvm-warmup-queries", "16",
            "--jvm-warmup-s", "0.2");

    String markdown = Files.readString(report);
    assertThat(markdown)
        .contains(
            "Command: `smoke`",
            "--pairs 1 --slice-s 2.5 --drain-timeout-ms 500.0",
            "Machine: ",
            "maxRstFramesPerWindow = 200 per 30 s per connection",
            "(carry-over 2 s, so 0.5 s recorded per slice)",
            "JVM warm-up, not recorded: stock: 16 point selects in ")
        .contains("; tuned: 16 point selects in ");
    for (String workload : List.of("degraded", "spiky")) {
      assertThat(markdown)
          .as(workload)
          .containsPattern(
              "\\| "
                  + workload
                  + " \\| [0-9.]+ -> [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\(no interval\\) \\| no interval \\|")
          .contains(
              "| " + workload + " | side by side | ",
              "| " + workload + " | switchback, load generator | ",
              "| " + workload + " | switchback, experiment | ",
              "| " + workload + " | 1 | stock | ",
              "| " + workload + " | 1 | tuned | ")
          .as(workload + ": the pair's load-generator and experiment P99s, both arms")
          .containsPattern(
              "\\| "
                  + workload
                  + " \\| 1 \\| (stock, tuned|tuned, stock) \\| [0-9.]+ / [0-9.]+ \\| [0-9.]+"
                  + " \\| [0-9.]+ / [0-9.]+ \\| [0-9.]+ \\|");
    }
    assertThat(markdown)
        .as("the degraded workload's slowed connection is counted, the spiky one has none")
        .containsPattern(
            "\\| degraded \\| 1 \\| stock \\| [0-9]+ \\| [0-9]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9]+ \\| [0-9.]+ \\|")
        .containsPattern(
            "\\| spiky \\| 1 \\| stock \\| [0-9]+ \\| [0-9]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9]+ \\| - \\|");
  }

  @Test
  void aSliceNoLongerThanTheCarryOverIsRefusedBeforeAnythingRuns() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> ExperimentComparison.run("--slice-s", "2"))
        .withMessageContaining("--slice-s and --drain-timeout-ms")
        .withMessageContaining("carry-over");
  }

  @Test
  void anUnknownWorkloadIsRefusedByName() {
    assertThatIllegalArgumentException()
        .isThrownBy(() -> ExperimentComparison.run("--workloads", "stalled"))
        .withMessageContaining("--workloads")
        .withMessageContaining("'stalled'")
        .withMessageContaining("degraded and/or spiky");
  }
}
