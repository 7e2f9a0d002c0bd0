package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.experiment.SliceSummary.KindSlice;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The recorder of one slice's calls: what it counts and what it drops. */
class SliceRecorderTest {

  private static final long MS = 1_000_000;

  private static final long T0 = 5_000_000 * MS;

  @Test
  void aWindowCountsItsCallsPercentilesTailAndFailuresByStatus() {
    SliceRecorder recorder = new SliceRecorder();
    recorder.open(T0);
    for (int i = 1; i <= 1000; i++) {
      recorder.record(CallKind.SINGLE_USE, T0 + i, T0 + i + i * MS / 10, (i % 100 == 0) ? 14 : 0);
    }
    recorder.record(CallKind.COMMIT, T0, T0 + 3 * MS, 10);
    recorder.record(CallKind.COMMIT, T0, T0 + 3 * MS, 99);
    recorder.cancelOfFinishedStream();
    recorder.goAway();
    SliceSummary summary = recorder.close(3, Arm.STOCK, T0 + 55_000 * MS);
    assertThat(summary.index()).isEqualTo(3);
    assertThat(summary.arm()).isEqualTo(Arm.STOCK);
    assertThat(summary.recordedNanos()).isEqualTo(55_000 * MS);
    assertThat(summary.cancelsOfFinishedStreams()).isOne();
    assertThat(summary.goAways()).isOne();
    KindSlice singleUse = summary.kind(CallKind.SINGLE_USE);
    assertThat(singleUse.calls()).isEqualTo(1000);
    // 0.1 ms to 100 ms in steps of 0.1 ms; two significant digits keep them within 1 %.
    assertThat(singleUse.p50Nanos()).isBetween(50 * MS, 50 * MS + MS / 2);
    assertThat(singleUse.p99Nanos()).isBetween(99 * MS, 100 * MS);
    assertThat(singleUse.tailCalls()).isBetween(1L, 10L);
    assertThat(singleUse.failed()).isEqualTo(10);
    assertThat(singleUse.failedByCode()[14]).isEqualTo(10);
    KindSlice commit = summary.kind(CallKind.COMMIT);
    assertThat(commit.failed()).isEqualTo(2);
    assertThat(commit.failedByCode()[10]).as("ABORTED").isOne();
    assertThat(commit.failedByCode()[2]).as("a code gRPC lacks counts as UNKNOWN").isOne();
    assertThat(summary.kind(CallKind.TRANSACTION_QUERY).calls()).isZero();
  }

  @Test
  void callsThatStartedBeforeTheWindowOpenedOrCameWhileClosedAreDropped() {
    SliceRecorder recorder = new SliceRecorder();
    recorder.record(CallKind.SINGLE_USE, T0, T0 + MS, 0);
    recorder.goAway();
    recorder.open(T0 + 5_000 * MS);
    recorder.record(CallKind.SINGLE_USE, T0 + 4_999 * MS, T0 + 5_001 * MS, 0);
    recorder.record(CallKind.SINGLE_USE, T0 + 5_000 * MS, T0 + 5_001 * MS, 0);
    SliceSummary first = recorder.close(0, Arm.TUNED, T0 + 10_000 * MS);
    recorder.record(CallKind.SINGLE_USE, T0 + 10_001 * MS, T0 + 10_002 * MS, 0);
    assertThat(first.kind(CallKind.SINGLE_USE).calls()).isOne();
    assertThat(first.goAways()).isZero();
    recorder.open(T0 + 15_000 * MS);
    assertThat(recorder.close(1, Arm.STOCK, T0 + 20_000 * MS).kind(CallKind.SINGLE_USE).calls())
        .as("a reopened window starts empty")
        .isZero();
  }

  @Test
  void latenciesOutOfRangeAreClampedNotLost() {
    SliceRecorder recorder = new SliceRecorder();
    recorder.open(T0);
    recorder.record(CallKind.COMMIT, T0, T0 + Duration.ofHours(3).toNanos(), 4);
    recorder.record(CallKind.COMMIT, T0 + 10, T0 + 5, 0);
    KindSlice commit = recorder.close(0, Arm.TUNED, T0 + MS).kind(CallKind.COMMIT);
    assertThat(commit.calls()).isEqualTo(2);
    assertThat(commit.p99Nanos()).isGreaterThanOrEqualTo(Duration.ofMinutes(59).toNanos());
  }
}
