package io.github.spannertuning.experiment;

import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.experiment.ExperimentResult.PerArm;
import io.github.spannertuning.experiment.ExperimentResult.Progress;
import io.github.spannertuning.experiment.ExperimentResult.SliceStart;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * One switchback experiment on one client: the schedule that alternates the client between the arms
 * and the recorder of its calls.
 *
 * <p>It records {@link ExperimentPlan#pairs()} pairs of slices; each pair holds one slice of each
 * arm. Each slice begins with the switch to its arm; its window opens once the carry-over has
 * passed, and closes at the slice's planned end, when its figures are kept. Slices are planned in
 * advance, so a late timer shortens a window and does not shift the ones after it. After each pair
 * the guard rail is checked.
 *
 * <p>Alone, the slices start from the experiment's start, on the calls' clock, and each pair's
 * order is drawn from its random generator. In a fleet they follow the {@link FleetSchedule} on the
 * wall clock: the client takes the arm in force at once, records from the next pair, and each
 * window closes {@link ExperimentPlan#FLEET_CLOCK_SKEW} before its slice ends.
 *
 * <p>Every step runs on the {@link ExperimentTimer} and holds this object's lock, as do {@link
 * #stop} and {@link #abort}; recording takes no lock. However the experiment ends, its open window
 * is dropped, only whole pairs count, and the client is put back as it was before the experiment.
 */
final class Experiment {

  private final ExperimentPlan plan;

  private final ArmSwitch armSwitch;

  private final ExperimentTimer timer;

  private final LongSupplier clock;

  private final LongSupplier wallClock;

  private final Consumer<Experiment> onEnd;

  private final ArmTotals totals;

  /** The local schedule's arms, or {@code null} in a fleet. */
  private final Arm[] arms;

  /** The fleet's schedule, or {@code null} for a client alone. */
  private final FleetSchedule fleet;

  private final long sliceNanos;

  private final long carryOverNanos;

  /** How long before each slice's end its window closes. */
  private final long closeEarlyNanos;

  private final SliceRecorder recorder;

  private final List<SliceSummary> slices = new ArrayList<>();

  /** Every slice switched to so far. */
  private final List<Switch> switches = new ArrayList<>();

  private volatile ExperimentState state = ExperimentState.RUNNING;

  private String reason;

  private long startNanos;

  private long endNanos;

  /** The first slice recorded: 0 alone, the first of the next pair in a fleet. */
  private long firstIndex;

  private long index;

  private boolean recording;

  private Future<?> pending;

  /**
   * @param clock nanoseconds, the clock of the calls' start and end times
   * @param wallClock nanoseconds since the epoch
   * @param onEnd told once, holding this experiment's lock, when it ends
   * @param totals where each recorded slice's figures are added, for the meters
   * @param listener told of each call as it is recorded
   */
  Experiment(
      ExperimentPlan plan,
      ArmSwitch armSwitch,
      ExperimentTimer timer,
      LongSupplier clock,
      LongSupplier wallClock,
      RandomGenerator random,
      Consumer<Experiment> onEnd,
      ArmTotals totals,
      RecordedCallListener listener) {
    this.plan = plan;
    this.recorder = new SliceRecorder(listener);
    this.totals = totals;
    this.armSwitch = armSwitch;
    this.timer = timer;
    this.clock = clock;
    this.wallClock = wallClock;
    this.onEnd = onEnd;
    this.sliceNanos = plan.slice().toNanos();
    this.carryOverNanos = plan.carryOver().toNanos();
    if (plan.fleet() != null) {
      this.arms = null;
      this.fleet = new FleetSchedule(plan.fleet(), this.sliceNanos);
      this.closeEarlyNanos = ExperimentPlan.FLEET_CLOCK_SKEW.toNanos();
    } else {
      this.arms = order(plan.pairs(), random);
      this.fleet = null;
      this.closeEarlyNanos = 0;
    }
  }

  /** The arm of every slice: each pair one of each, the one first drawn by a fair coin. */
  static Arm[] order(int pairs, RandomGenerator random) {
    Arm[] arms = new Arm[2 * pairs];
    for (int pair = 0; pair < pairs; pair++) {
      Arm first = random.nextBoolean() ? Arm.TUNED : Arm.STOCK;
      arms[2 * pair] = first;
      arms[2 * pair + 1] = first.other();
    }
    return arms;
  }

  /**
   * Switches the client to the arm in force and schedules the rest: alone, the first slice starts
   * now; in a fleet, the client joins the slice in force and records from the next pair.
   */
  synchronized void start() {
    this.startNanos = this.clock.getAsLong();
    if (this.fleet == null) {
      this.firstIndex = 0;
      step(() -> beginSlice(0));
    } else {
      long joined = this.fleet.sliceAt(this.wallClock.getAsLong());
      this.firstIndex = FleetSchedule.firstRecorded(joined);
      step(() -> join(joined));
    }
  }

  /** See {@link ExperimentSlot#record}. */
  void record(CallKind kind, long startNanos, long endNanos, int statusCode) {
    this.recorder.record(kind, startNanos, endNanos, statusCode);
  }

  void cancelOfFinishedStream() {
    this.recorder.cancelOfFinishedStream();
  }

  void goAway() {
    this.recorder.goAway();
  }

  boolean isRunning() {
    return this.state == ExperimentState.RUNNING;
  }

  /** Ends a running experiment as {@code stopped}; false when it had ended already. */
  synchronized boolean stop(String why) {
    return endIfRunning(ExperimentState.STOPPED, why);
  }

  /** Ends a running experiment as {@code aborted}; false when it had ended already. */
  synchronized boolean abort(String why) {
    return endIfRunning(ExperimentState.ABORTED, why);
  }

  /**
   * The experiment as it stands: progress, and the figures of the whole pairs so far. Only the copy
   * of its state holds the lock; the analysis runs after, so that a reader never keeps a step, such
   * as a fleet's switch at its boundary, waiting.
   */
  ExperimentResult result() {
    List<SliceSummary> recorded;
    List<Switch> switched;
    ExperimentState ended;
    String why;
    long elapsed;
    long firstRecorded;
    long current;
    boolean windowOpen;
    synchronized (this) {
      recorded = List.copyOf(this.slices);
      switched = List.copyOf(this.switches);
      ended = this.state;
      why = this.reason;
      elapsed =
          ((ended == ExperimentState.RUNNING) ? this.clock.getAsLong() : this.endNanos)
              - this.startNanos;
      firstRecorded = this.firstIndex;
      current = this.index;
      windowOpen = this.recording;
    }
    boolean running = ended == ExperimentState.RUNNING;
    int pairs = recorded.size() / 2;
    Map<String, KindResult> results = new LinkedHashMap<>();
    long[] cancels = new long[2];
    long[] goAways = new long[2];
    List<SliceSummary> complete = recorded.subList(0, 2 * pairs);
    ExperimentAnalysis.analyze(complete).forEach((kind, result) -> results.put(kind.id(), result));
    for (SliceSummary summary : complete) {
      cancels[summary.arm().ordinal()] += summary.cancelsOfFinishedStreams();
      goAways[summary.arm().ordinal()] += summary.goAways();
    }
    List<String> warnings = new ArrayList<>();
    if (this.plan.pairs() < SignedRank.FEWEST_PAIRS_95) {
      warnings.add(
          "the plan has "
              + this.plan.pairs()
              + " pairs: the 95 % intervals need at least "
              + SignedRank.FEWEST_PAIRS_95);
    }
    List<SliceStart> starts = new ArrayList<>(switched.size());
    for (Switch slice : switched) {
      long position = slice.slice() - firstRecorded;
      starts.add(
          new SliceStart(
              slice.slice(),
              slice.arm().id(),
              Instant.ofEpochSecond(0, slice.epochNanos()).toString(),
              position >= 0 && position < 2L * pairs));
    }
    String arm = running ? armOf(current).id() : null;
    return new ExperimentResult(
        ended.id(),
        why,
        this.plan.feature(),
        this.plan.fleet(),
        arm,
        running ? current : null,
        pairs,
        DurationFormat.format(this.plan.slice()),
        DurationFormat.format(this.plan.runTime()),
        DurationFormat.format(this.plan.carryOver()),
        new Progress(
            recorded.size(),
            this.plan.slices(),
            DurationFormat.format(Duration.ofSeconds(elapsed / 1_000_000_000L)),
            arm,
            running && windowOpen),
        new PerArm<>(cancels[Arm.TUNED.ordinal()], cancels[Arm.STOCK.ordinal()]),
        new PerArm<>(goAways[Arm.TUNED.ordinal()], goAways[Arm.STOCK.ordinal()]),
        results,
        starts,
        warnings);
  }

  /** A fleet's slice before the first recorded pair: in its arm, not recorded. */
  private void join(long slice) {
    this.index = slice;
    this.recording = false;
    if (!switchTo(slice)) {
      return;
    }
    long next = slice + 1;
    schedule((next < this.firstIndex) ? () -> join(next) : () -> beginSlice(next), startOf(next));
  }

  private void beginSlice(long slice) {
    this.index = slice;
    this.recording = false;
    if (!switchTo(slice)) {
      return;
    }
    schedule(this::openWindow, startOf(slice) + this.carryOverNanos);
  }

  /** Switches the client to the slice's arm and notes when; false when that failed and ended it. */
  private boolean switchTo(long slice) {
    Arm arm = armOf(slice);
    try {
      this.armSwitch.switchTo(arm);
    } catch (RuntimeException ex) {
      end(
          ExperimentState.ABORTED,
          "could not switch the client to the " + arm.id() + " arm: " + ex.getMessage());
      return false;
    }
    this.switches.add(new Switch(slice, arm, this.wallClock.getAsLong()));
    return true;
  }

  private void openWindow() {
    this.recorder.open(this.clock.getAsLong(), armOf(this.index));
    this.recording = true;
    schedule(this::endSlice, startOf(this.index + 1) - this.closeEarlyNanos);
  }

  private void endSlice() {
    int position = (int) (this.index - this.firstIndex);
    SliceSummary summary = this.recorder.close(position, this.clock.getAsLong());
    this.slices.add(summary);
    this.totals.add(summary);
    this.recording = false;
    if (position % 2 == 1) {
      String tripped =
          ExperimentAnalysis.guardRail(
              ExperimentAnalysis.analyze(this.slices), this.plan.guardRail());
      if (tripped != null) {
        end(ExperimentState.ABORTED, tripped);
        return;
      }
    }
    long next = this.index + 1;
    Runnable then =
        (position + 1 == this.plan.slices())
            ? () -> end(ExperimentState.DONE, null)
            : () -> beginSlice(next);
    if (this.closeEarlyNanos == 0) {
      then.run();
    } else {
      schedule(then, startOf(next));
    }
  }

  private Arm armOf(long slice) {
    return (this.fleet != null) ? this.fleet.armOf(slice) : this.arms[(int) slice];
  }

  /** When a slice starts, on the schedule's clock: the wall clock in a fleet. */
  private long startOf(long slice) {
    return (this.fleet != null)
        ? this.fleet.startOf(slice)
        : this.startNanos + slice * this.sliceNanos;
  }

  private long now() {
    return (this.fleet != null) ? this.wallClock.getAsLong() : this.clock.getAsLong();
  }

  private void schedule(Runnable next, long at) {
    this.pending = this.timer.schedule(() -> runStep(next), Math.max(0, at - now()));
  }

  private synchronized void runStep(Runnable next) {
    if (isRunning()) {
      this.pending = null;
      step(next);
    }
  }

  /**
   * Runs a step; one that throws ends the experiment rather than leave the client in whichever arm
   * it was, with no step to come.
   */
  private void step(Runnable next) {
    try {
      next.run();
    } catch (RuntimeException ex) {
      if (!isRunning()) {
        throw ex;
      }
      end(ExperimentState.ABORTED, "the experiment failed: " + ex);
    }
  }

  private boolean endIfRunning(ExperimentState ending, String why) {
    if (!isRunning()) {
      return false;
    }
    end(ending, why);
    return true;
  }

  private void end(ExperimentState ending, String why) {
    this.state = ending;
    this.reason = why;
    this.endNanos = this.clock.getAsLong();
    if (this.pending != null) {
      this.pending.cancel(false);
      this.pending = null;
    }
    if (this.recording) {
      this.recorder.close((int) (this.index - this.firstIndex), this.endNanos);
      this.recording = false;
    }
    try {
      this.armSwitch.restore();
    } catch (RuntimeException ex) {
      this.reason =
          ((why != null) ? why + "; " : "")
              + "could not put the client back as it was before the experiment: "
              + ex.getMessage();
    }
    this.onEnd.accept(this);
  }

  /** A slice the client was switched to, and when, on the wall clock. */
  private record Switch(long slice, Arm arm, long epochNanos) {}
}
