package io.github.spannertuning.experiment;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One client's experiment as the endpoint shows it: while it runs, its progress and the figures of
 * the pairs done so far; once it ended, how and its result. Immutable; its field names are a
 * contract read by checks outside the project.
 *
 * <p>Ratios are tuned over stock: below 1 the tuned arm is faster. A figure that needs more pairs
 * than there are (an interval needs 6; the failed-rate difference's 99 % interval 8) is {@code
 * null}.
 *
 * @param state {@code running}, {@code done}, {@code stopped} or {@code aborted}
 * @param reason why it was stopped or aborted; {@code null} while running and when done
 * @param feature the one feature compared (on in the tuned arm, off in the stock arm), by its id;
 *     {@code null} when the whole tuning is compared with stock
 * @param fleet the fleet's id when the experiment runs with the instances of a fleet; {@code null}
 *     for this client alone
 * @param arm the arm in force now, {@code tuned} or {@code stock}; {@code null} once ended
 * @param sliceIndex the slice in force now: in a fleet, counted from the epoch in slices (the same
 *     number on every instance); otherwise from 0 at the start; {@code null} once ended
 * @param pairs the pairs of slices recorded in full, which every figure rests on
 * @param slice the slice length, as {@code 60s}
 * @param duration the planned run time, whole pairs of slices, as {@code 20m}
 * @param carryOver the part of each slice not recorded, as {@code 5s}
 * @param progress where the experiment is
 * @param cancelsOfFinishedStreams cancels sent for streams that had finished, per arm, over the
 *     recorded pairs
 * @param goAways GOAWAYs the client saw, per arm, over the recorded pairs
 * @param results per call kind, by its id ({@code single-use}, {@code transaction-query}, {@code
 *     commit})
 * @param sliceStarts every slice the client ran so far, in order, with the instant it switched
 * @param warnings what makes the figures less sure than their intervals say, for every kind
 */
public record ExperimentResult(
    String state,
    String reason,
    String feature,
    String fleet,
    String arm,
    Long sliceIndex,
    int pairs,
    String slice,
    String duration,
    String carryOver,
    Progress progress,
    PerArm<Long> cancelsOfFinishedStreams,
    PerArm<Long> goAways,
    Map<String, KindResult> results,
    List<SliceStart> sliceStarts,
    List<String> warnings) {

  public ExperimentResult {
    results = Collections.unmodifiableMap(new LinkedHashMap<>(results));
    sliceStarts = List.copyOf(sliceStarts);
    warnings = List.copyOf(warnings);
  }

  /**
   * What is compared, and with whom, for a log line after the client's name: empty for the whole
   * tuning on a client alone, else for example {@code "; comparing hedging on and off; in fleet
   * 'checkout-2026-12', joined in slice 29413570"}.
   */
  public String scope() {
    StringBuilder line = new StringBuilder();
    if (this.feature != null) {
      line.append("; comparing ").append(this.feature).append(" on and off");
    }
    if (this.fleet != null) {
      line.append("; in fleet '").append(this.fleet).append('\'');
      if (!this.sliceStarts.isEmpty()) {
        line.append(", joined in slice ").append(this.sliceStarts.get(0).sliceIndex());
      }
    }
    return line.toString();
  }

  /**
   * One slice the client ran: the arm it switched to, and when. A fleet's instances that agree show
   * the same arm for the same index, and instants within their clocks' skew and their timers'
   * delay.
   *
   * @param sliceIndex as {@link ExperimentResult#sliceIndex()} counts
   * @param arm {@code tuned} or {@code stock}
   * @param switchedAt the instant the client was in that arm, on its wall clock (ISO-8601, UTC)
   * @param recorded whether the slice's figures count in the result: false for a slice that an
   *     instance joining a fleet runs before its first pair, for one still running, and for the
   *     first slice of a pair that did not finish
   */
  public record SliceStart(long sliceIndex, String arm, String switchedAt, boolean recorded) {}

  /**
   * Where an experiment is.
   *
   * @param slicesDone slices whose window has closed
   * @param slices slices planned
   * @param elapsed time since it started, until it ended, in whole seconds, as {@code 432s}
   * @param arm the arm the client is in, while running; {@code null} once ended
   * @param recording whether the current slice is past its carry-over and recording calls
   */
  public record Progress(
      int slicesDone, int slices, String elapsed, String arm, boolean recording) {}

  /**
   * A figure per arm, serialized as {@code {"tuned": ..., "stock": ...}}.
   *
   * @param <T> the figure's type
   * @param tuned the tuned arm's
   * @param stock the stock arm's
   */
  public record PerArm<T>(T tuned, T stock) {}

  /**
   * One call kind's figures over the pairs that had calls of it in both slices.
   *
   * @param calls calls recorded per arm, failed ones included
   * @param pairs the pairs the figures rest on
   * @param p50Ratio the Hodges–Lehmann estimate of the tuned/stock ratio of the slices' medians
   * @param p50RatioLow its 95 % interval's lower end
   * @param p50RatioHigh its 95 % interval's upper end
   * @param p99Ratio the Hodges–Lehmann estimate of the tuned/stock ratio of the slices' P99
   * @param p99RatioLow its 95 % interval's lower end
   * @param p99RatioHigh its 95 % interval's upper end
   * @param p50Seconds per arm, the median over its slices of the slice's median latency
   * @param p99Seconds per arm, the median over its slices of the slice's P99
   * @param tailSamples per arm, the calls slower than their slice's P99: what the P99 figures rest
   *     on
   * @param failed per arm, calls that ended with a status other than OK
   * @param failedByStatus per arm, failed calls by gRPC status code name
   * @param failedRate per arm, failed calls over calls
   * @param failedRateLow per arm, the lower end of its 95 % Wilson interval
   * @param failedRateHigh per arm, the upper end of its 95 % Wilson interval
   * @param failedRateDifference the Hodges–Lehmann estimate, over the pairs, of the tuned slice's
   *     failed rate less the stock slice's
   * @param failedRateDifferenceLow its 99 % interval's lower end
   * @param failedRateDifferenceHigh its 99 % interval's upper end
   * @param verdict {@code better}, {@code worse} or {@code no-detectable-difference}
   * @param warnings what makes these figures less sure than their intervals say
   */
  public record KindResult(
      PerArm<Long> calls,
      int pairs,
      Double p50Ratio,
      Double p50RatioLow,
      Double p50RatioHigh,
      Double p99Ratio,
      Double p99RatioLow,
      Double p99RatioHigh,
      PerArm<Double> p50Seconds,
      PerArm<Double> p99Seconds,
      PerArm<Long> tailSamples,
      PerArm<Long> failed,
      PerArm<Map<String, Long>> failedByStatus,
      PerArm<Double> failedRate,
      PerArm<Double> failedRateLow,
      PerArm<Double> failedRateHigh,
      Double failedRateDifference,
      Double failedRateDifferenceLow,
      Double failedRateDifferenceHigh,
      String verdict,
      List<String> warnings) {

    public KindResult {
      failedByStatus =
          new PerArm<>(
              Collections.unmodifiableMap(new LinkedHashMap<>(failedByStatus.tuned())),
              Collections.unmodifiableMap(new LinkedHashMap<>(failedByStatus.stock())));
      warnings = List.copyOf(warnings);
    }
  }
}
