package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Simulated experiments through the real recorder and analysis, one per seed: 10 pairs of slices,
 * 3,000 single-use calls a slice, lognormal latencies whose level drifts from slice to slice as
 * real traffic does (an autoregressive walk with a step of 15 %), whose tail weight varies by slice
 * too, and one call in a thousand failing in either arm. Seeded, so every run finds the same; the
 * seeds are 0 to 999 for A/A and 1,000,000 to 1,000,999 for the shift, chosen before any run.
 *
 * <p>Tagged {@code default-line}: no Spanner client takes part, so the suite runs it once.
 */
@Tag("default-line")
class SwitchbackSimulationTest {

  private static final int BLOCKS = 10;

  private static final int PAIRS = 10;

  private static final int CALLS_PER_SLICE = 3_000;

  private static final double MEDIAN_NANOS = 5_000_000;

  private static final double SIGMA = 0.5;

  /** The standard normal's 90th and 99th percentiles. */
  private static final double Z90 = 1.2815515655446004;

  private static final double Z99 = 2.3263478740408408;

  private static final long SLICE_NANOS = 60_000_000_000L;

  /**
   * The issue asks for 93 of 100 seeds. A method whose false alarms are 5 % falls below that in
   * about one block of 100 seeds in five, so a check on one block would test the seeds, not the
   * method: the check runs ten blocks and holds their sum to the same share, 93 %. Each block's
   * count is printed.
   */
  @Test
  void armsFromOneDistributionShowNoDetectableDifferenceInAtLeast93Percent() {
    assertThat(seeds("A/A: no detectable difference", 0, false, Verdict.NO_DETECTABLE_DIFFERENCE))
        .isGreaterThanOrEqualTo(93 * BLOCKS);
  }

  @Test
  void aStockArmWithTwiceTheP99IsFoundBetterInAtLeast95Percent() {
    assertThat(seeds("2x shift in P99: tuned found better", 1_000_000, true, Verdict.BETTER))
        .isGreaterThanOrEqualTo(95 * BLOCKS);
  }

  /** Per block of 100 seeds from {@code firstSeed}, the experiments that found {@code verdict}. */
  /** The seeds whose verdict is {@code verdict}, of every block's, printed per block. */
  private static int seeds(String what, long firstSeed, boolean shifted, Verdict verdict) {
    int[] found = countByBlock(firstSeed, shifted, verdict);
    int total = IntStream.of(found).sum();
    System.out.printf(
        "%s in %d of %d seeds; per 100 seeds: %s%n",
        what, total, BLOCKS * 100, Arrays.toString(found));
    return total;
  }

  private static int[] countByBlock(long firstSeed, boolean shifted, Verdict verdict) {
    int[] counts = new int[BLOCKS];
    for (int seed = 0; seed < BLOCKS * 100; seed++) {
      if (simulate(firstSeed + seed, shifted).equals(verdict.id())) {
        counts[seed / 100]++;
      }
    }
    return counts;
  }

  /**
   * One experiment's verdict on single-use calls. With {@code shifted}, the stock arm's calls above
   * its 90th percentile are slowed by a factor rising from 1 to 2 at its 99th percentile and 2
   * beyond: its P99 is twice the tuned arm's, its median the same.
   */
  private static String simulate(long seed, boolean shifted) {
    RandomGenerator random = new SplittableRandom(seed);
    SliceRecorder recorder = new SliceRecorder(RecordedCallListener.NONE);
    List<SliceSummary> slices = new ArrayList<>();
    double level = 0;
    long now = 0;
    for (int pair = 0; pair < PAIRS; pair++) {
      Arm first = random.nextBoolean() ? Arm.TUNED : Arm.STOCK;
      for (Arm arm : new Arm[] {first, first.other()}) {
        level = 0.8 * level + 0.15 * random.nextGaussian();
        double sigma = SIGMA * Math.exp(0.1 * random.nextGaussian());
        recorder.open(now, arm);
        for (int call = 0; call < CALLS_PER_SLICE; call++) {
          double z = random.nextGaussian();
          double latency = MEDIAN_NANOS * Math.exp(level + sigma * z);
          if (shifted && arm == Arm.STOCK) {
            latency *= 1 + Math.min(1, Math.max(0, (z - Z90) / (Z99 - Z90)));
          }
          int status = (random.nextDouble() < 0.001) ? 14 : 0;
          long start = now + call;
          recorder.record(CallKind.SINGLE_USE, start, start + (long) latency, status);
        }
        now += SLICE_NANOS;
        slices.add(recorder.close(slices.size(), now));
      }
    }
    return ExperimentAnalysis.analyze(slices, CallKind.SINGLE_USE).verdict();
  }
}
