package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.github.spannertuning.experiment.ExperimentResult.SliceStart;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * A fleet's experiment on a clock the test moves: where an instance joins, where its slices and
 * windows fall on the wall clock, and how far apart two instances' clocks may be. The slice is 3 s,
 * the carry-over 2 s, and a fleet's window closes 250 ms before its slice ends, as documented: each
 * recorded slice holds 750 ms of calls.
 */
class FleetExperimentTest {

  private static final String FLEET = "checkout-2026-12";

  private static final Duration SLICE = Duration.ofSeconds(3);

  private static final Duration CARRY_OVER = Duration.ofSeconds(2);

  private static final Duration CLOSES_EARLY = Duration.ofMillis(250);

  private static final Duration STEP = Duration.ofMillis(10);

  private static final long SLICE_NANOS = SLICE.toNanos();

  private final ManualTimer timer = new ManualTimer();

  @Test
  void anInstanceTakesTheArmInForceAtOnceAndRecordsFromTheNextPair() {
    long joinedIn = firstSliceFrom("2026-12-03T12:00:00Z", 0);
    Instant joinedAt = instant(joinedIn * SLICE_NANOS).plusMillis(1300);
    LongSupplier wall = this.timer.wallClock(joinedAt);
    Switches switches = new Switches(wall);
    ExperimentSlot slot = slot(wall);
    List<ExperimentResult> ended = new ArrayList<>();
    slot.onEnd(ended::add);
    FleetSchedule schedule = new FleetSchedule(FLEET, SLICE_NANOS);

    ExperimentResult started = slot.start(plan(2), switches);
    assertThat(started.state()).isEqualTo("running");
    assertThat(started.fleet()).isEqualTo(FLEET);
    assertThat(started.feature()).isNull();
    assertThat(started.sliceIndex()).isEqualTo(joinedIn);
    assertThat(started.arm()).isEqualTo(schedule.armOf(joinedIn).id());
    assertThat(started.progress().recording()).isFalse();
    assertThat(started.sliceStarts())
        .containsExactly(
            new SliceStart(joinedIn, schedule.armOf(joinedIn).id(), joinedAt.toString(), false));

    traffic(slot, Duration.ofSeconds(20));

    // Joined in the first slice of a pair: that pair is not recorded; two pairs follow, then the
    // client is put back at the next boundary.
    List<Long> boundaries = new ArrayList<>();
    for (long slice = joinedIn + 1; slice <= joinedIn + 5; slice++) {
      boundaries.add(slice * SLICE_NANOS);
    }
    assertThat(switches.wallNanos.subList(1, switches.wallNanos.size()))
        .containsExactlyElementsOf(boundaries);
    assertThat(switches.wallNanos.get(0)).isEqualTo(nanos(joinedAt));
    for (int slice = 0; slice < 6; slice++) {
      assertThat(switches.arms.get(slice)).isEqualTo(schedule.armOf(joinedIn + slice));
    }
    assertThat(switches.restoredAt).isEqualTo((joinedIn + 6) * SLICE_NANOS);
    ExperimentResult done = slot.result();
    assertThat(done.state()).isEqualTo("done");
    assertThat(done.arm()).isNull();
    assertThat(done.sliceIndex()).isNull();
    assertThat(done.pairs()).isEqualTo(2);
    assertThat(done.sliceStarts())
        .extracting(SliceStart::sliceIndex, SliceStart::recorded)
        .containsExactly(
            tuple(joinedIn, false),
            tuple(joinedIn + 1, false),
            tuple(joinedIn + 2, true),
            tuple(joinedIn + 3, true),
            tuple(joinedIn + 4, true),
            tuple(joinedIn + 5, true));
    // One call every 10 ms: from 2 s after each switch to 250 ms before the next, 75 a slice.
    assertThat(done.results().get("single-use").calls().tuned()).isEqualTo(150);
    assertThat(done.results().get("single-use").calls().stock()).isEqualTo(150);
    assertThat(ended).extracting(ExperimentResult::state).containsExactly("done");
  }

  @Test
  void anInstanceJoiningInThePairsSecondSliceRecordsFromTheNextBoundary() {
    long joinedIn = firstSliceFrom("2026-12-03T12:00:00Z", 1);
    LongSupplier wall = this.timer.wallClock(instant(joinedIn * SLICE_NANOS).plusMillis(10));
    ExperimentSlot slot = slot(wall);
    slot.start(plan(1), new Switches(wall));
    traffic(slot, Duration.ofSeconds(10));
    ExperimentResult done = slot.result();
    assertThat(done.state()).isEqualTo("done");
    assertThat(done.sliceStarts())
        .extracting(SliceStart::sliceIndex, SliceStart::recorded)
        .containsExactly(
            tuple(joinedIn, false), tuple(joinedIn + 1, true), tuple(joinedIn + 2, true));
  }

  @Test
  void aLateInstanceFollowsTheSameScheduleFromItsNextBoundary() {
    long first = firstSliceFrom("2026-12-03T12:00:00Z", 0);
    Instant start = instant(first * SLICE_NANOS).plusMillis(500);
    LongSupplier wall = this.timer.wallClock(start);
    Switches early = new Switches(wall);
    Switches late = new Switches(wall);
    ExperimentSlot earlySlot = slot(wall);
    ExperimentSlot lateSlot = slot(wall);
    earlySlot.start(plan(3), early);
    this.timer.advance(Duration.ofMillis(7400));
    lateSlot.start(plan(3), late);
    traffic(earlySlot, Duration.ofSeconds(30));
    // Slices from the late one's join to the early one's end: the same arms at the same instants.
    int common = 0;
    for (int i = 1; i < late.arms.size(); i++) {
      int j = early.wallNanos.indexOf(late.wallNanos.get(i));
      if (j > 0) {
        assertThat(early.arms.get(j)).isEqualTo(late.arms.get(i));
        common++;
      }
    }
    assertThat(common).as("boundaries both ran").isGreaterThanOrEqualTo(3);
    long lateJoined = lateSlot.result().sliceStarts().get(0).sliceIndex();
    assertThat(lateJoined).isEqualTo(first + 2);
    assertThat(lateSlot.result().sliceStarts().stream().filter(SliceStart::recorded).findFirst())
        .get()
        .extracting(SliceStart::sliceIndex)
        .as("its first recorded slice starts the next pair")
        .isEqualTo(first + 4);
  }

  /**
   * Two instances started together, the second's clock ahead of the first's. Each feeds its
   * experiment a call every 10 ms: a single-use call while the other instance is in the same arm, a
   * commit while it is not. The windows must keep every such commit out: 150 ms apart (within the
   * 250 ms tolerated) they do; 350 ms apart, the instance behind still records when the one ahead
   * has switched.
   */
  @Test
  void clocksApartByLessThanTheToleratedSkewRecordOnlyWhileBothAreInTheSliceArm() {
    assertThat(callsRecordedWhileTheOtherWasInAnotherArm(Duration.ofMillis(150))).isZero();
    assertThat(callsRecordedWhileTheOtherWasInAnotherArm(Duration.ofMillis(350))).isPositive();
  }

  private long callsRecordedWhileTheOtherWasInAnotherArm(Duration ahead) {
    long first = firstSliceFrom("2026-12-03T12:00:00Z", 0);
    Instant start = instant(first * SLICE_NANOS).plusMillis(100);
    LongSupplier behindWall = this.timer.wallClock(start);
    LongSupplier aheadWall = this.timer.wallClock(start.plus(ahead));
    Switches behind = new Switches(behindWall);
    Switches before = new Switches(aheadWall);
    ExperimentSlot behindSlot = slot(behindWall);
    ExperimentSlot aheadSlot = slot(aheadWall);
    behindSlot.start(plan(2), behind);
    aheadSlot.start(plan(2), before);
    long until = this.timer.getAsLong() + Duration.ofSeconds(19).toNanos();
    while (this.timer.getAsLong() < until) {
      long now = this.timer.getAsLong();
      CallKind kind =
          (behind.current() != before.current()) ? CallKind.COMMIT : CallKind.SINGLE_USE;
      behindSlot.record(kind, now, now + 1_000_000L, 0);
      aheadSlot.record(kind, now, now + 1_000_000L, 0);
      this.timer.advance(STEP);
    }
    long recorded = 0;
    for (ExperimentSlot slot : List.of(behindSlot, aheadSlot)) {
      ExperimentResult result = slot.result();
      assertThat(result.state()).isEqualTo("done");
      assertThat(result.results().get("single-use").calls().tuned()).isPositive();
      recorded +=
          result.results().get("commit").calls().tuned()
              + result.results().get("commit").calls().stock();
    }
    return recorded;
  }

  private ExperimentSlot slot(LongSupplier wall) {
    return new ExperimentSlot(
        this.timer,
        this.timer,
        wall,
        () -> {
          throw new AssertionError("a fleet draws no random order");
        });
  }

  private static ExperimentPlan plan(int pairs) {
    return new ExperimentPlan(
        SLICE.multipliedBy(2L * pairs), SLICE, CARRY_OVER, GuardRail.DEFAULT, null, FLEET);
  }

  /** The first slice from {@code instant} on whose index has this parity. */
  private static long firstSliceFrom(String instant, int parity) {
    long slice = nanos(Instant.parse(instant)) / SLICE_NANOS;
    return (Math.floorMod(slice, 2) == parity) ? slice : slice + 1;
  }

  /** A 5 ms single-use call every 10 ms. */
  private void traffic(ExperimentSlot slot, Duration span) {
    long until = this.timer.getAsLong() + span.toNanos();
    while (this.timer.getAsLong() < until) {
      long start = this.timer.getAsLong();
      slot.record(CallKind.SINGLE_USE, start, start + 5_000_000L, 0);
      this.timer.advance(STEP);
    }
  }

  private static long nanos(Instant at) {
    return at.getEpochSecond() * 1_000_000_000L + at.getNano();
  }

  private static Instant instant(long epochNanos) {
    return Instant.ofEpochSecond(0, epochNanos);
  }

  /** An arm switch that notes each arm and its wall-clock instant, and when it was restored. */
  private static final class Switches implements ArmSwitch {

    private final LongSupplier wall;

    private final List<Arm> arms = new ArrayList<>();

    private final List<Long> wallNanos = new ArrayList<>();

    private Long restoredAt;

    Switches(LongSupplier wall) {
      this.wall = wall;
    }

    @Override
    public void switchTo(Arm arm) {
      this.arms.add(arm);
      this.wallNanos.add(this.wall.getAsLong());
    }

    @Override
    public void restore() {
      this.restoredAt = this.wall.getAsLong();
    }

    /** The arm the client is in; {@code null} once restored. */
    Arm current() {
      return (this.restoredAt != null) ? null : this.arms.get(this.arms.size() - 1);
    }
  }
}
