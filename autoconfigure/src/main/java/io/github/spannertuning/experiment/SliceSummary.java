package io.github.spannertuning.experiment;

import java.util.List;

/**
 * What one slice recorded, once its window closed: per call kind, the figures the analysis pairs.
 *
 * @param index the slice's place in the experiment, from 0; slices {@code 2i} and {@code 2i + 1}
 *     are pair {@code i}
 * @param arm the arm the client ran in
 * @param recordedNanos how long the window was open: the slice less its carry-over, or a little
 *     less when the timer ran late
 * @param kinds per {@link CallKind}, by ordinal
 * @param cancelsOfFinishedStreams cancels the client sent for streams that had finished
 * @param goAways GOAWAYs the client saw
 */
record SliceSummary(
    int index,
    Arm arm,
    long recordedNanos,
    List<KindSlice> kinds,
    long cancelsOfFinishedStreams,
    long goAways) {

  SliceSummary {
    kinds = List.copyOf(kinds);
  }

  KindSlice kind(CallKind kind) {
    return this.kinds.get(kind.ordinal());
  }

  /**
   * One call kind in one slice.
   *
   * @param calls calls recorded, failed ones included
   * @param p50Nanos the median latency; 0 without calls
   * @param p99Nanos the 99th percentile; 0 without calls
   * @param tailCalls calls slower than {@code p99Nanos}: the samples the P99 rests on
   * @param failed calls that ended with a status other than OK
   * @param failedByCode failed calls by gRPC status code value (index 0, OK, stays 0)
   */
  record KindSlice(
      long calls, long p50Nanos, long p99Nanos, long tailCalls, long failed, long[] failedByCode) {

    KindSlice {
      failedByCode = failedByCode.clone();
    }
  }
}
