package io.github.spannertuning.experiment;

import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.experiment.ExperimentResult.PerArm;
import io.github.spannertuning.experiment.SignedRank.Confidence;
import io.github.spannertuning.experiment.SignedRank.Estimate;
import io.github.spannertuning.experiment.SliceSummary.KindSlice;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the recorded slices say, per call kind: pure functions of the slices' summaries.
 *
 * <p><b>Over pairs.</b> Each pair's two slices, one per arm in a random order, give one difference
 * per figure: the log of the tuned/stock ratio of the slices' P50 and of their P99, and the tuned
 * slice's failed rate less the stock slice's. Traffic drifts from slice to slice and calls within a
 * slice are not independent (a slow connection, a GOAWAY, slows or fails many at once), so the
 * pair, not the call, is the unit: its difference is as likely positive as negative when the arms
 * are alike, whatever the traffic did.
 *
 * <p><b>Hodges–Lehmann with Wilcoxon's signed-rank interval</b> ({@link SignedRank}), not a
 * sign-flip permutation of the mean. Both are exact under that symmetry with a handful of pairs and
 * assume no normality, and both have the same discrete levels (with 6 pairs, 1/32 at best). The
 * signed-rank interval rests on ranks: one pair whose P99 caught a pause of the application or of
 * Spanner moves a mean, and the permutation interval with it, as far as it likes, but a rank only
 * by one. Its efficiency against the mean is 0.955 on normal data and never below 0.864, and much
 * higher on the heavy tails P99s have. It comes in closed form from the sorted Walsh averages,
 * where inverting a permutation test needs a search over shifts with {@code 2^n} sign flips each.
 *
 * <p><b>The verdict</b> rests on P99 and failures, not on P50: the features act on the tail and on
 * failed calls. {@code worse} when the P99 ratio's 95 % interval lies above 1 or the failed-rate
 * difference's 99 % interval above 0; otherwise {@code better} when the P99 interval lies below 1
 * or the failed-rate interval below 0; otherwise {@code no-detectable-difference}. So a tuned arm
 * that is faster but fails more is {@code worse}. Failures are judged at 99 % so that the two looks
 * together stay near the 5 % false-alarm rate that the 95 % P99 interval alone has; their interval
 * needs 8 pairs.
 */
final class ExperimentAnalysis {

  /** Below this many calls slower than P99 in an arm, its P99 figures come with a warning. */
  static final long FEWEST_TAIL_SAMPLES = 100;

  /**
   * How far from 0 an interval's end must be to count as excluding it: the averages of pairs are
   * sums of rounded quotients, and two pairs with opposite differences may average to 1e-20 rather
   * than 0. A log ratio of 1e-9 is a ratio of 1.000000001, a difference of 1e-9 one call in a
   * billion.
   */
  static final double ROUNDING = 1e-9;

  private ExperimentAnalysis() {}

  /** Every kind's figures over the complete pairs of {@code slices}, which are in order. */
  static Map<CallKind, KindResult> analyze(List<SliceSummary> slices) {
    Map<CallKind, KindResult> results = new EnumMap<>(CallKind.class);
    for (CallKind kind : CallKind.values()) {
      results.put(kind, analyze(slices, kind));
    }
    return results;
  }

  /** One kind's figures over the complete pairs of {@code slices}. */
  static KindResult analyze(List<SliceSummary> slices, CallKind kind) {
    int pairs = slices.size() / 2;
    Totals tuned = new Totals();
    Totals stock = new Totals();
    double[] logP50 = new double[pairs];
    double[] logP99 = new double[pairs];
    double[] failedDifference = new double[pairs];
    int used = 0;
    long seen = 0;
    for (int pair = 0; pair < pairs; pair++) {
      SliceSummary first = slices.get(2 * pair);
      SliceSummary second = slices.get(2 * pair + 1);
      if (first.arm() == second.arm()) {
        throw new IllegalArgumentException("pair " + pair + " has two " + first.arm() + " slices");
      }
      KindSlice t = ((first.arm() == Arm.TUNED) ? first : second).kind(kind);
      KindSlice s = ((first.arm() == Arm.TUNED) ? second : first).kind(kind);
      seen += t.calls() + s.calls();
      if (t.calls() == 0 || s.calls() == 0) {
        continue;
      }
      logP50[used] = Math.log(Math.max(t.p50Nanos(), 1) / (double) Math.max(s.p50Nanos(), 1));
      logP99[used] = Math.log(Math.max(t.p99Nanos(), 1) / (double) Math.max(s.p99Nanos(), 1));
      failedDifference[used] = t.failed() / (double) t.calls() - s.failed() / (double) s.calls();
      tuned.add(t);
      stock.add(s);
      used++;
    }
    Estimate p50 = SignedRank.estimate(Arrays.copyOf(logP50, used), Confidence.P95);
    Estimate p99 = SignedRank.estimate(Arrays.copyOf(logP99, used), Confidence.P95);
    Estimate failed = SignedRank.estimate(Arrays.copyOf(failedDifference, used), Confidence.P99);
    double[] tunedInterval = Proportion.wilson(tuned.failed, tuned.calls, Confidence.P95.z());
    double[] stockInterval = Proportion.wilson(stock.failed, stock.calls, Confidence.P95.z());
    return new KindResult(
        new PerArm<>(tuned.calls, stock.calls),
        used,
        exp(p50.point()),
        exp(p50.low()),
        exp(p50.high()),
        exp(p99.point()),
        exp(p99.low()),
        exp(p99.high()),
        new PerArm<>(seconds(median(tuned.p50s)), seconds(median(stock.p50s))),
        new PerArm<>(seconds(median(tuned.p99s)), seconds(median(stock.p99s))),
        new PerArm<>(tuned.tail, stock.tail),
        new PerArm<>(tuned.failed, stock.failed),
        new PerArm<>(tuned.failedByStatus(), stock.failedByStatus()),
        new PerArm<>(rate(tuned.failed, tuned.calls), rate(stock.failed, stock.calls)),
        new PerArm<>(orNull(tunedInterval[0]), orNull(stockInterval[0])),
        new PerArm<>(orNull(tunedInterval[1]), orNull(stockInterval[1])),
        orNull(failed.point()),
        orNull(failed.low()),
        orNull(failed.high()),
        verdict(p99, failed).id(),
        warnings(pairs, used, seen, tuned, stock, failed));
  }

  /** The rule in the class description. */
  static Verdict verdict(Estimate logP99, Estimate failedDifference) {
    boolean p99Known = logP99.hasInterval();
    boolean failedKnown = failedDifference.hasInterval();
    if ((p99Known && logP99.low() > ROUNDING)
        || (failedKnown && failedDifference.low() > ROUNDING)) {
      return Verdict.WORSE;
    }
    if ((p99Known && logP99.high() < -ROUNDING)
        || (failedKnown && failedDifference.high() < -ROUNDING)) {
      return Verdict.BETTER;
    }
    return Verdict.NO_DETECTABLE_DIFFERENCE;
  }

  /**
   * Why the guard rail stops the experiment, or {@code null} when it does not: for the first kind,
   * in {@link CallKind}'s order, that crosses one of its margins.
   */
  static String guardRail(Map<CallKind, KindResult> results, GuardRail rail) {
    for (Map.Entry<CallKind, KindResult> entry : results.entrySet()) {
      KindResult result = entry.getValue();
      if (result.pairs() < rail.minPairs()) {
        continue;
      }
      String kind = entry.getKey().id();
      if (result.p99RatioLow() != null && result.p99RatioLow() > rail.p99Ratio()) {
        return String.format(
            Locale.ROOT,
            "guard rail: over %d pairs the tuned arm's P99 of %s calls was x%.2f the stock arm's"
                + " (95 %% interval x%.2f to x%.2f), entirely above the x%.2f margin; the client is"
                + " tuned as configured again",
            result.pairs(),
            kind,
            result.p99Ratio(),
            result.p99RatioLow(),
            result.p99RatioHigh(),
            rail.p99Ratio());
      }
      if (result.failedRateDifferenceLow() != null
          && result.failedRateDifferenceLow() > rail.failedRateDifference()) {
        return String.format(
            Locale.ROOT,
            "guard rail: over %d pairs the tuned arm failed %.2f %% more of its %s calls than the"
                + " stock arm (99 %% interval %.2f %% to %.2f %%), entirely above the %.2f %%"
                + " margin; the client is tuned as configured again",
            result.pairs(),
            100 * result.failedRateDifference(),
            kind,
            100 * result.failedRateDifferenceLow(),
            100 * result.failedRateDifferenceHigh(),
            100 * rail.failedRateDifference());
      }
    }
    return null;
  }

  private static List<String> warnings(
      int pairs, int used, long seen, Totals tuned, Totals stock, Estimate failed) {
    List<String> warnings = new ArrayList<>();
    if (pairs == 0) {
      return warnings;
    }
    if (seen == 0) {
      warnings.add("no calls of this kind");
      return warnings;
    }
    if (used < pairs) {
      warnings.add(
          (pairs - used)
              + " of "
              + pairs
              + " pairs left out: one of their slices had no calls of this kind");
    }
    if (used > 0 && used < SignedRank.FEWEST_PAIRS_95) {
      warnings.add(
          used
              + " pairs with calls in both arms: the 95 % intervals need at least "
              + SignedRank.FEWEST_PAIRS_95);
    }
    if (used >= SignedRank.FEWEST_PAIRS_95
        && !failed.hasInterval()
        && (tuned.failed > 0 || stock.failed > 0)) {
      warnings.add(
          used
              + " pairs with calls in both arms: the failed-rate difference's 99 % interval"
              + " needs at least "
              + SignedRank.FEWEST_PAIRS_99);
    }
    for (Totals arm : List.of(tuned, stock)) {
      if (used > 0 && arm.tail < FEWEST_TAIL_SAMPLES) {
        warnings.add(
            arm.tail
                + " calls above P99 in the "
                + ((arm == tuned) ? Arm.TUNED : Arm.STOCK).id()
                + " arm, fewer than "
                + FEWEST_TAIL_SAMPLES
                + ": the P99 figures rest on few samples");
      }
    }
    return warnings;
  }

  private static Double exp(double logValue) {
    return Double.isNaN(logValue) ? null : Math.exp(logValue);
  }

  private static Double orNull(double value) {
    return Double.isNaN(value) ? null : value;
  }

  private static Double rate(long failed, long calls) {
    return (calls == 0) ? null : failed / (double) calls;
  }

  private static Double seconds(double nanos) {
    return Double.isNaN(nanos) ? null : nanos / 1e9;
  }

  private static double median(List<Long> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    long[] sorted = values.stream().mapToLong(Long::longValue).sorted().toArray();
    int middle = sorted.length / 2;
    return (sorted.length % 2 == 1) ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2.0;
  }

  /** One arm's sums over the pairs used. */
  private static final class Totals {

    private long calls;

    private long failed;

    private long tail;

    private final long[] failedByCode = new long[SliceRecorder.STATUS_CODES];

    private final List<Long> p50s = new ArrayList<>();

    private final List<Long> p99s = new ArrayList<>();

    void add(KindSlice slice) {
      this.calls += slice.calls();
      this.failed += slice.failed();
      this.tail += slice.tailCalls();
      for (int code = 0; code < this.failedByCode.length; code++) {
        this.failedByCode[code] += slice.failedByCode()[code];
      }
      this.p50s.add(slice.p50Nanos());
      this.p99s.add(slice.p99Nanos());
    }

    Map<String, Long> failedByStatus() {
      Map<String, Long> byStatus = new LinkedHashMap<>();
      for (int code = 1; code < this.failedByCode.length; code++) {
        if (this.failedByCode[code] > 0) {
          byStatus.put(Status.fromCodeValue(code).getCode().name(), this.failedByCode[code]);
        }
      }
      return byStatus;
    }
  }
}
