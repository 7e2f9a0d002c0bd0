package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.experiment.SliceSummary.KindSlice;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The recorder of one slice's calls: what it counts, what it drops, and what a call costs. */
class SliceRecorderTest {

  private static final long MS = 1_000_000;

  private static final long T0 = 5_000_000 * MS;

  @Test
  void aWindowCountsItsCallsPercentilesTailAndFailuresByStatus() {
    SliceRecorder recorder = new SliceRecorder(RecordedCallListener.NONE);
    recorder.open(T0, Arm.STOCK);
    for (int i = 1; i <= 1000; i++) {
      recorder.record(CallKind.SINGLE_USE, T0 + i, T0 + i + i * MS / 10, (i % 100 == 0) ? 14 : 0);
    }
    recorder.record(CallKind.COMMIT, T0, T0 + 3 * MS, 10);
    recorder.record(CallKind.COMMIT, T0, T0 + 3 * MS, 99);
    recorder.cancelOfFinishedStream();
    recorder.goAway();
    SliceSummary summary = recorder.close(3, T0 + 55_000 * MS);
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
    SliceRecorder recorder = new SliceRecorder(RecordedCallListener.NONE);
    recorder.record(CallKind.SINGLE_USE, T0, T0 + MS, 0);
    recorder.goAway();
    recorder.open(T0 + 5_000 * MS, Arm.TUNED);
    recorder.record(CallKind.SINGLE_USE, T0 + 4_999 * MS, T0 + 5_001 * MS, 0);
    recorder.record(CallKind.SINGLE_USE, T0 + 5_000 * MS, T0 + 5_001 * MS, 0);
    SliceSummary first = recorder.close(0, T0 + 10_000 * MS);
    recorder.record(CallKind.SINGLE_USE, T0 + 10_001 * MS, T0 + 10_002 * MS, 0);
    assertThat(first.kind(CallKind.SINGLE_USE).calls()).isOne();
    assertThat(first.goAways()).isZero();
    recorder.open(T0 + 15_000 * MS, Arm.STOCK);
    assertThat(recorder.close(1, T0 + 20_000 * MS).kind(CallKind.SINGLE_USE).calls())
        .as("a reopened window starts empty")
        .isZero();
  }

  @Test
  void theListenerIsToldOfExactlyTheCallsAWindowRecordsWithItsArm() {
    List<String> told = new ArrayList<>();
    SliceRecorder recorder =
        new SliceRecorder((kind, arm, nanos) -> told.add(kind.id() + " " + arm.id() + " " + nanos));
    recorder.record(CallKind.SINGLE_USE, T0, T0 + MS, 0);
    recorder.open(T0 + 5_000 * MS, Arm.STOCK);
    recorder.record(CallKind.SINGLE_USE, T0 + 4_999 * MS, T0 + 5_001 * MS, 0);
    recorder.record(CallKind.SINGLE_USE, T0 + 5_000 * MS, T0 + 5_003 * MS, 0);
    recorder.record(CallKind.COMMIT, T0 + 5_001 * MS, T0 + 5_008 * MS, 14);
    recorder.record(CallKind.COMMIT, T0 + 5_002 * MS, T0 + 5_001 * MS, 0);
    SliceSummary stock = recorder.close(0, T0 + 6_000 * MS);
    recorder.record(CallKind.SINGLE_USE, T0 + 6_001 * MS, T0 + 6_002 * MS, 0);
    recorder.open(T0 + 7_000 * MS, Arm.TUNED);
    recorder.record(CallKind.TRANSACTION_QUERY, T0 + 7_000 * MS, T0 + 7_002 * MS, 0);
    recorder.close(1, T0 + 8_000 * MS);
    assertThat(told)
        .containsExactly(
            "single-use stock " + 3 * MS,
            "commit stock " + 7 * MS,
            "commit stock 0",
            "transaction-query tuned " + 2 * MS);
    assertThat(stock.kind(CallKind.SINGLE_USE).calls() + stock.kind(CallKind.COMMIT).calls())
        .as("what the slice holds")
        .isEqualTo(3);
  }

  @Test
  void latenciesOutOfRangeAreClampedNotLost() {
    SliceRecorder recorder = new SliceRecorder(RecordedCallListener.NONE);
    recorder.open(T0, Arm.TUNED);
    recorder.record(CallKind.COMMIT, T0, T0 + Duration.ofHours(3).toNanos(), 4);
    recorder.record(CallKind.COMMIT, T0 + 10, T0 + 5, 0);
    KindSlice commit = recorder.close(0, T0 + MS).kind(CallKind.COMMIT);
    assertThat(commit.calls()).isEqualTo(2);
    assertThat(commit.p99Nanos()).isGreaterThanOrEqualTo(Duration.ofMinutes(59).toNanos());
  }

  @Test
  void recordingAllocatesNothingPerCall() {
    ManualTimer timer = new ManualTimer();
    ExperimentSlot slot = new ExperimentSlot(timer, timer, () -> new SplittableRandom(1));
    slot.start(
        new ExperimentPlan(
            Duration.ofSeconds(20),
            Duration.ofSeconds(10),
            Duration.ofSeconds(2),
            GuardRail.DEFAULT),
        (arm) -> {});
    long[] toldNanos = new long[1];
    slot.addRecordedCallListener((kind, arm, nanos) -> toldNanos[0] += nanos);
    timer.advance(Duration.ofSeconds(3));
    assertThat(slot.result().progress().recording()).isTrue();
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long start = timer.getAsLong();
    recordCalls(slot, start, 100_000);
    // The least of three passes: a call that allocated would cost at least 16 bytes in every one
    // (1.6 MB a pass), while the JVM's own one-off work in the thread (a CI run counted 4,256 bytes
    // in one pass) falls in one pass at most.
    long allocated = Long.MAX_VALUE;
    for (int pass = 0; pass < 3; pass++) {
      long before = threads.getCurrentThreadAllocatedBytes();
      recordCalls(slot, start, 100_000);
      allocated = Math.min(allocated, threads.getCurrentThreadAllocatedBytes() - before);
    }
    System.out.printf("recording 100,000 calls allocated %d bytes%n", allocated);
    assertThat(allocated)
        .as("bytes allocated by 100,000 records, least of 3 passes")
        .isLessThan(1024);
    assertThat(toldNanos[0]).as("the listener heard every call").isEqualTo(4 * toldPerRun());
    timer.advance(Duration.ofSeconds(8));
    assertThat(slot.result().progress().slicesDone()).isOne();
  }

  /** The latencies {@link #recordCalls} records, added up. */
  private static long toldPerRun() {
    long nanos = 0;
    for (int i = 0; i < 100_000; i++) {
      nanos += (i % 5000) * 1_000L;
    }
    return nanos;
  }

  private static void recordCalls(ExperimentSlot slot, long start, int calls) {
    CallKind[] kinds = CallKind.values();
    for (int i = 0; i < calls; i++) {
      slot.record(kinds[i % kinds.length], start + i, start + i + (i % 5000) * 1_000L, i % 17);
      if (i % 100 == 0) {
        slot.cancelOfFinishedStream();
        slot.goAway();
      }
    }
  }
}
