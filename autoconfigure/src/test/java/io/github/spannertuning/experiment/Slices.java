package io.github.spannertuning.experiment;

import io.github.spannertuning.experiment.SliceSummary.KindSlice;
import java.util.ArrayList;
import java.util.List;

/** Slice summaries with given figures, for the analysis on fixed inputs. */
final class Slices {

  private static final int UNAVAILABLE = 14;

  private Slices() {}

  /**
   * A slice of single-use calls only, with these percentiles; a hundredth of its calls are its
   * tail, its failures UNAVAILABLE.
   */
  static SliceSummary singleUse(
      int index, Arm arm, long calls, double p50Millis, double p99Millis, long failed) {
    List<KindSlice> kinds = new ArrayList<>();
    for (CallKind kind : CallKind.values()) {
      kinds.add(
          (kind == CallKind.SINGLE_USE)
              ? kindSlice(calls, p50Millis, p99Millis, failed)
              : new KindSlice(0, 0, 0, 0, 0, new long[SliceRecorder.STATUS_CODES]));
    }
    return new SliceSummary(index, arm, 55_000_000_000L, kinds, 0, 0);
  }

  /**
   * Pairs of single-use slices, the tuned slice first in even pairs and second in odd ones, with
   * the tuned P99 at {@code ratios[i]} times the stock one in pair {@code i}.
   */
  static List<SliceSummary> pairs(double[] ratios, long calls, long tunedFailed, long stockFailed) {
    List<SliceSummary> slices = new ArrayList<>();
    for (int pair = 0; pair < ratios.length; pair++) {
      SliceSummary tuned = singleUse(0, Arm.TUNED, calls, 5, 20 * ratios[pair], tunedFailed);
      SliceSummary stock = singleUse(0, Arm.STOCK, calls, 5, 20, stockFailed);
      slices.add((pair % 2 == 0) ? tuned : stock);
      slices.add((pair % 2 == 0) ? stock : tuned);
    }
    return slices;
  }

  private static KindSlice kindSlice(long calls, double p50Millis, double p99Millis, long failed) {
    long[] byCode = new long[SliceRecorder.STATUS_CODES];
    byCode[UNAVAILABLE] = failed;
    return new KindSlice(
        calls,
        Math.round(p50Millis * 1_000_000),
        Math.round(p99Millis * 1_000_000),
        calls / 100,
        failed,
        byCode);
  }
}
