package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.within;

import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.experiment.ExperimentResult.SliceStart;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.PrimitiveIterator;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * The switchback on a clock the test moves: its slices, their order, the carry-over, and how it
 * ends.
 */
class ExperimentSlotTest {

  private static final Duration SLICE = Duration.ofSeconds(10);

  private static final Duration CARRY_OVER = Duration.ofSeconds(2);

  private static final Duration STEP = Duration.ofMillis(10);

  private final ManualTimer timer = new ManualTimer();

  private final Switches switches = new Switches();

  @Test
  void slicesSwitchAtTheirPlannedTimesAndRecordOnlyAfterTheirCarryOver() {
    ExperimentSlot slot = slot(1);
    long start = this.timer.getAsLong();
    ExperimentResult started = slot.start(plan(3), this.switches);
    assertThat(started.state()).isEqualTo("running");
    assertThat(started.progress().recording()).isFalse();
    assertThat(started.progress().slices()).isEqualTo(6);
    this.timer.advance(CARRY_OVER.minusMillis(1));
    assertThat(slot.result().progress().recording()).as("within the carry-over").isFalse();
    this.timer.advance(Duration.ofMillis(1));
    assertThat(slot.result().progress().recording()).as("after the carry-over").isTrue();
    this.timer.advance(Duration.ofSeconds(58));
    assertThat(this.switches.atNanos)
        .containsExactly(
            LongStream.rangeClosed(0, 6)
                .map((slice) -> start + slice * SLICE.toNanos())
                .boxed()
                .toArray(Long[]::new));
    ExperimentResult done = slot.result();
    assertThat(done.state()).isEqualTo("done");
    assertThat(done.reason()).isNull();
    assertThat(done.pairs()).isEqualTo(3);
    assertThat(done.slice()).isEqualTo("10s");
    assertThat(done.duration()).isEqualTo("60s");
    assertThat(done.carryOver()).isEqualTo("2s");
    assertThat(done.progress().slicesDone()).isEqualTo(6);
    assertThat(done.progress().elapsed()).isEqualTo("60s");
    assertThat(done.progress().arm()).isNull();
    assertThat(done.warnings())
        .containsExactly("the plan has 3 pairs: the 95 % intervals need at least 6");
    assertThat(this.switches.arms.get(6)).as("back to tuned at the end").isEqualTo(Arm.TUNED);
    assertThat(slot.isRunning()).isFalse();
    assertThat(this.timer.pending()).isZero();
  }

  @Test
  void eachPairHoldsOneSliceOfEachArmInTheOrderItsRandomDrew() {
    ExperimentSlot slot = slot(42);
    slot.start(plan(10), this.switches);
    this.timer.advance(SLICE.multipliedBy(20));
    List<Arm> slices = this.switches.arms.subList(0, 20);
    assertThat(slices).isEqualTo(List.of(Experiment.order(10, new SplittableRandom(42))));
    List<Arm> firsts = new ArrayList<>();
    for (int pair = 0; pair < 10; pair++) {
      assertThat(slices.subList(2 * pair, 2 * pair + 2))
          .containsExactlyInAnyOrder(Arm.TUNED, Arm.STOCK);
      firsts.add(slices.get(2 * pair));
    }
    assertThat(firsts).as("both orders occur").contains(Arm.TUNED, Arm.STOCK);
  }

  @Test
  void theOrderFollowsTheCoinAndTheCoinIsFair() {
    PrimitiveIterator.OfLong coins = LongStream.of(-1, 1, 1, -1).iterator();
    RandomGenerator scripted = coins::nextLong;
    assertThat(Experiment.order(4, scripted))
        .containsExactly(
            Arm.TUNED, Arm.STOCK, Arm.STOCK, Arm.TUNED, Arm.STOCK, Arm.TUNED, Arm.TUNED, Arm.STOCK);
    Arm[] many = Experiment.order(10_000, new SplittableRandom(7));
    long tunedFirst =
        LongStream.range(0, 10_000).filter((pair) -> many[(int) (2 * pair)] == Arm.TUNED).count();
    assertThat(tunedFirst).isBetween(4_700L, 5_300L);
  }

  @Test
  void callsOfTheCarryOverAreNotCounted() {
    ExperimentSlot slot = slot(3);
    slot.start(plan(3), this.switches);
    for (int slice = 0; slice < 6; slice++) {
      long switched = this.timer.getAsLong();
      // A commit ends in the carry-over; another starts in it and ends after; neither counts.
      this.timer.advance(Duration.ofSeconds(1));
      slot.record(CallKind.COMMIT, switched + 100_000_000L, this.timer.getAsLong(), 0);
      long startedInCarryOver = this.timer.getAsLong();
      this.timer.advance(Duration.ofMillis(1500));
      slot.record(CallKind.COMMIT, startedInCarryOver, this.timer.getAsLong(), 0);
      // Single-use calls from the window's opening on all count: 100 of them.
      for (int call = 0; call < 100; call++) {
        long callStart = this.timer.getAsLong();
        this.timer.advance(STEP);
        slot.record(CallKind.SINGLE_USE, callStart, this.timer.getAsLong(), 0);
      }
      this.timer.advance(SLICE.minus(Duration.ofMillis(2500)).minus(STEP.multipliedBy(100)));
    }
    ExperimentResult result = slot.result();
    assertThat(result.state()).isEqualTo("done");
    assertThat(result.results().get("commit").calls().tuned()).isZero();
    assertThat(result.results().get("commit").calls().stock()).isZero();
    KindResult singleUse = result.results().get("single-use");
    assertThat(singleUse.calls().tuned()).isEqualTo(300);
    assertThat(singleUse.calls().stock()).isEqualTo(300);
    assertThat(singleUse.p50Seconds().tuned()).isCloseTo(0.010, within(0.0001));
  }

  @Test
  void aStopEndsItStoppedWithTheWholePairsSoFarAndTheClientTuned() {
    ExperimentSlot slot = slot(5);
    slot.start(plan(3), this.switches);
    traffic(slot, SLICE.multipliedBy(2).plusSeconds(5));
    assertThat(slot.result().progress().recording()).isTrue();
    assertThat(slot.stop("stopped by alice through the spannertuning endpoint")).isTrue();
    ExperimentResult stopped = slot.result();
    assertThat(stopped.state()).isEqualTo("stopped");
    assertThat(stopped.reason()).isEqualTo("stopped by alice through the spannertuning endpoint");
    assertThat(stopped.pairs())
        .as("the third slice, recording, is dropped with its half pair")
        .isOne();
    assertThat(stopped.progress().slicesDone()).isEqualTo(2);
    assertThat(stopped.results().get("single-use").calls().tuned()).isEqualTo(800);
    assertThat(this.switches.arms.get(this.switches.arms.size() - 1)).isEqualTo(Arm.TUNED);
    assertThat(this.timer.pending()).isZero();
    int switched = this.switches.arms.size();
    this.timer.advance(SLICE.multipliedBy(10));
    assertThat(this.switches.arms).as("no switch after the stop").hasSize(switched);
    assertThat(slot.stop("again")).isFalse();
  }

  @Test
  void aFeatureSwitchedByHandAbortsItWithTheReasonAndTheClientIsTunedBeforeTheSwitchApplies() {
    ExperimentSlot slot = slot(9);
    slot.start(plan(3), this.switches);
    while (this.switches.current != Arm.STOCK) {
      this.timer.advance(SLICE);
    }
    assertThat(slot.abort("stream-end-guard switched off by hand at runtime")).isTrue();
    assertThat(this.switches.current).as("when abort returns").isEqualTo(Arm.TUNED);
    ExperimentResult aborted = slot.result();
    assertThat(aborted.state()).isEqualTo("aborted");
    assertThat(aborted.reason()).isEqualTo("stream-end-guard switched off by hand at runtime");
    assertThat(slot.isRunning()).isFalse();
  }

  @Test
  void onlyOneExperimentRunsAtATime() {
    ExperimentSlot slot = slot(11);
    assertThat(slot.result()).isNull();
    slot.start(plan(3), this.switches);
    this.timer.advance(SLICE.plusSeconds(1));
    assertThatIllegalStateException()
        .isThrownBy(() -> slot.start(plan(3), this.switches))
        .withMessage(
            "an experiment is already running on this client (slice 2 of 6); stop it before"
                + " starting another");
    this.timer.advance(SLICE.multipliedBy(6));
    assertThat(slot.result().state()).isEqualTo("done");
    ExperimentResult second = slot.start(plan(3), this.switches);
    assertThat(second.state()).isEqualTo("running");
    assertThat(slot.result().progress().slicesDone()).as("the new one's").isZero();
  }

  @Test
  void theGuardRailAbortsWhenTheTunedArmIsConfidentlySlowerAndLeavesItTuned() {
    ExperimentSlot slot = slot(13);
    slot.start(plan(8), this.switches);
    traffic(slot, SLICE.multipliedBy(16));
    ExperimentResult aborted = slot.result();
    assertThat(aborted.state()).isEqualTo("aborted");
    assertThat(aborted.pairs())
        .as("stopped at the first pair the guard rail may judge")
        .isEqualTo(6);
    assertThat(aborted.reason())
        .startsWith("guard rail: over 6 pairs the tuned arm's P99 of single-use calls was x2.00")
        .endsWith("entirely above the x1.20 margin; the client is tuned as configured again");
    assertThat(aborted.results().get("single-use").verdict()).isEqualTo("worse");
    assertThat(this.switches.current).isEqualTo(Arm.TUNED);
    assertThat(this.switches.arms).hasSize(13);
  }

  @Test
  void aSwitchThatFailsAbortsItAndSwitchesBack() {
    ExperimentSlot slot = slot(17);
    ArmSwitch refusing =
        (arm) -> {
          this.switches.switchTo(arm);
          if (arm == Arm.STOCK) {
            throw new IllegalStateException("stream-end-guard cannot be switched on this client");
          }
        };
    slot.start(plan(3), refusing);
    this.timer.advance(SLICE.multipliedBy(2));
    ExperimentResult aborted = slot.result();
    assertThat(aborted.state()).isEqualTo("aborted");
    assertThat(aborted.reason())
        .isEqualTo(
            "could not switch the client to the stock arm: stream-end-guard cannot be switched"
                + " on this client");
    assertThat(this.switches.current).isEqualTo(Arm.TUNED);
  }

  @Test
  void listenersHearTheRecordedCallsWhileRegisteredAndGoAwaysAddUpPerArm() {
    ExperimentSlot slot = slot(23);
    long[] heard = new long[2];
    RecordedCallListener first = (kind, arm, nanos) -> heard[0]++;
    slot.addRecordedCallListener(first);
    slot.addRecordedCallListener((kind, arm, nanos) -> heard[1]++);
    slot.start(plan(1), this.switches);
    this.timer.advance(CARRY_OVER);
    Arm firstArm = this.switches.current;
    slot.goAway();
    slot.goAway();
    traffic(slot, Duration.ofSeconds(1));
    slot.removeRecordedCallListener(first);
    traffic(slot, SLICE.minus(CARRY_OVER).minusSeconds(1));
    this.timer.advance(CARRY_OVER);
    slot.goAway();
    traffic(slot, SLICE.minus(CARRY_OVER));
    ExperimentResult done = slot.result();
    assertThat(done.state()).isEqualTo("done");
    KindResult singleUse = done.results().get("single-use");
    assertThat(heard[0]).as("one second of calls, one every 10 ms").isEqualTo(100);
    assertThat(heard[1]).isEqualTo(singleUse.calls().tuned() + singleUse.calls().stock());
    assertThat(slot.totals().goAways(firstArm)).isEqualTo(2);
    assertThat(slot.totals().goAways(firstArm.other())).isEqualTo(1);
    assertThat(done.goAways().tuned() + done.goAways().stock()).isEqualTo(3);
  }

  @Test
  void theResultNamesTheArmAndSliceInForceAndWhenEachSliceSwitchedAndTheEndRestores() {
    Instant wallStart = Instant.parse("2026-12-03T12:00:00.123Z");
    ExperimentSlot slot =
        new ExperimentSlot(
            this.timer,
            this.timer,
            this.timer.wallClock(wallStart),
            () -> new SplittableRandom(23));
    List<ExperimentResult> ended = new ArrayList<>();
    slot.onEnd(ended::add);
    List<Long> restored = new ArrayList<>();
    ArmSwitch restoring =
        new ArmSwitch() {
          @Override
          public void switchTo(Arm arm) {
            ExperimentSlotTest.this.switches.switchTo(arm);
          }

          @Override
          public void restore() {
            restored.add(ExperimentSlotTest.this.timer.getAsLong());
          }
        };
    ExperimentResult started = slot.start(plan(3).withFeature("stream-end-guard"), restoring);
    assertThat(started.feature()).isEqualTo("stream-end-guard");
    assertThat(started.fleet()).isNull();
    assertThat(started.sliceIndex()).isZero();
    assertThat(started.arm()).isEqualTo(this.switches.current.id());
    this.timer.advance(SLICE.plusSeconds(1));
    assertThat(slot.result().sliceIndex()).isEqualTo(1);
    assertThat(slot.result().arm()).isEqualTo(this.switches.current.id());
    this.timer.advance(SLICE.multipliedBy(5));
    ExperimentResult done = slot.result();
    assertThat(done.state()).isEqualTo("done");
    assertThat(done.arm()).isNull();
    assertThat(done.sliceIndex()).isNull();
    List<SliceStart> expected = new ArrayList<>();
    for (int slice = 0; slice < 6; slice++) {
      expected.add(
          new SliceStart(
              slice,
              this.switches.arms.get(slice).id(),
              wallStart.plus(SLICE.multipliedBy(slice)).toString(),
              true));
    }
    assertThat(done.sliceStarts()).containsExactlyElementsOf(expected);
    assertThat(this.switches.arms).as("no switch to tuned at the end").hasSize(6);
    assertThat(restored).containsExactly(this.switches.atNanos.get(0) + SLICE.toNanos() * 6);
    assertThat(ended).extracting(ExperimentResult::state).containsExactly("done");
  }

  @Test
  void withNoExperimentRunningCallsAreNotRecorded() {
    ExperimentSlot slot = slot(19);
    slot.record(CallKind.SINGLE_USE, 0, 1, 0);
    slot.cancelOfFinishedStream();
    slot.goAway();
    assertThat(slot.result()).isNull();
    assertThat(slot.stop("nothing to stop")).isFalse();
    assertThat(slot.abort("nothing to abort")).isFalse();
  }

  private ExperimentSlot slot(long seed) {
    return new ExperimentSlot(this.timer, this.timer, () -> new SplittableRandom(seed));
  }

  private static ExperimentPlan plan(int pairs) {
    return new ExperimentPlan(SLICE.multipliedBy(2L * pairs), SLICE, CARRY_OVER, GuardRail.DEFAULT);
  }

  /**
   * Single-use calls back to back for {@code span}, one every {@link #STEP}: 5 ms on the tuned arm,
   * 2.5 ms on stock; every tenth 20 ms on tuned, 10 ms on stock. A tenth of the stock arm's closes
   * send a cancel.
   */
  private void traffic(ExperimentSlot slot, Duration span) {
    long until = this.timer.getAsLong() + span.toNanos();
    long call = 0;
    while (this.timer.getAsLong() < until) {
      long start = this.timer.getAsLong();
      boolean tuned = this.switches.current == Arm.TUNED;
      long latency = ((call % 10 == 9) ? 20_000_000L : 5_000_000L) / (tuned ? 1 : 2);
      slot.record(CallKind.SINGLE_USE, start, start + latency, 0);
      if (!tuned && call % 10 == 0) {
        slot.cancelOfFinishedStream();
      }
      call++;
      this.timer.advance(STEP);
    }
  }

  /** An arm switch that notes what it was told, and when. */
  private final class Switches implements ArmSwitch {

    private final List<Arm> arms = new ArrayList<>();

    private final List<Long> atNanos = new ArrayList<>();

    private Arm current = Arm.TUNED;

    @Override
    public void switchTo(Arm arm) {
      this.arms.add(arm);
      this.atNanos.add(ExperimentSlotTest.this.timer.getAsLong());
      this.current = arm;
    }
  }
}
