package io.github.spannertuning.experiment;

import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.experiment.ExperimentResult.PerArm;
import io.github.spannertuning.experiment.ExperimentResult.Progress;
import java.time.Duration;
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
 * <p>It runs {@link ExperimentPlan#pairs()} pairs of slices; each pair holds one slice of each arm,
 * in an order drawn at random when the experiment starts. Each slice begins with the switch to its
 * arm; its window opens once the carry-over has passed, and closes at the slice's planned end, when
 * its figures are kept. Slices are planned from the start, so a late timer shortens a window and
 * does not shift the ones after it. After each pair the guard rail is checked.
 *
 * <p>Every step runs on the {@link ExperimentTimer} and holds this object's lock, as do {@link
 * #stop} and {@link #abort}; recording takes no lock. However the experiment ends, its open window
 * is dropped, only whole pairs count, and the client is switched back to the tuned arm.
 */
final class Experiment {

  private final ExperimentPlan plan;

  private final ArmSwitch armSwitch;

  private final ExperimentTimer timer;

  private final LongSupplier clock;

  private final Consumer<Experiment> onEnd;

  private final ArmTotals totals;

  private final Arm[] arms;

  private final long sliceNanos;

  private final long carryOverNanos;

  private final SliceRecorder recorder;

  private final List<SliceSummary> slices = new ArrayList<>();

  private volatile ExperimentState state = ExperimentState.RUNNING;

  private String reason;

  private long startNanos;

  private long endNanos;

  private int slice;

  private boolean recording;

  private Future<?> pending;

  /**
   * @param onEnd told once, holding this experiment's lock, when it ends
   * @param totals where each recorded slice's figures are added, for the meters
   * @param listener told of each call as it is recorded
   */
  Experiment(
      ExperimentPlan plan,
      ArmSwitch armSwitch,
      ExperimentTimer timer,
      LongSupplier clock,
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
    this.onEnd = onEnd;
    this.arms = order(plan.pairs(), random);
    this.sliceNanos = plan.slice().toNanos();
    this.carryOverNanos = plan.carryOver().toNanos();
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

  /** Switches the client to the first slice's arm and schedules the rest. */
  synchronized void start() {
    this.startNanos = this.clock.getAsLong();
    step(() -> beginSlice(0));
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

  /** The experiment as it stands: progress, and the figures of the whole pairs so far. */
  synchronized ExperimentResult result() {
    int pairs = this.slices.size() / 2;
    Map<String, KindResult> results = new LinkedHashMap<>();
    long[] cancels = new long[2];
    long[] goAways = new long[2];
    List<SliceSummary> complete = this.slices.subList(0, 2 * pairs);
    ExperimentAnalysis.analyze(complete).forEach((kind, result) -> results.put(kind.id(), result));
    for (SliceSummary summary : complete) {
      cancels[summary.arm().ordinal()] += summary.cancelsOfFinishedStreams();
      goAways[summary.arm().ordinal()] += summary.goAways();
    }
    boolean running = isRunning();
    long elapsed = (running ? this.clock.getAsLong() : this.endNanos) - this.startNanos;
    List<String> warnings = new ArrayList<>();
    if (this.plan.pairs() < SignedRank.FEWEST_PAIRS_95) {
      warnings.add(
          "the plan has "
              + this.plan.pairs()
              + " pairs: the 95 % intervals need at least "
              + SignedRank.FEWEST_PAIRS_95);
    }
    return new ExperimentResult(
        this.state.id(),
        this.reason,
        pairs,
        DurationFormat.format(this.plan.slice()),
        DurationFormat.format(this.plan.runTime()),
        DurationFormat.format(this.plan.carryOver()),
        new Progress(
            this.slices.size(),
            this.arms.length,
            DurationFormat.format(Duration.ofSeconds(elapsed / 1_000_000_000L)),
            running ? this.arms[this.slice].id() : null,
            running && this.recording),
        new PerArm<>(cancels[Arm.TUNED.ordinal()], cancels[Arm.STOCK.ordinal()]),
        new PerArm<>(goAways[Arm.TUNED.ordinal()], goAways[Arm.STOCK.ordinal()]),
        results,
        warnings);
  }

  private void beginSlice(int index) {
    this.slice = index;
    this.recording = false;
    Arm arm = this.arms[index];
    try {
      this.armSwitch.switchTo(arm);
    } catch (RuntimeException ex) {
      end(
          ExperimentState.ABORTED,
          "could not switch the client to the " + arm.id() + " arm: " + ex.getMessage());
      return;
    }
    schedule(this::openWindow, plannedStart(index) + this.carryOverNanos);
  }

  private void openWindow() {
    this.recorder.open(this.clock.getAsLong(), this.arms[this.slice]);
    this.recording = true;
    schedule(this::endSlice, plannedStart(this.slice + 1));
  }

  private void endSlice() {
    SliceSummary summary = this.recorder.close(this.slice, this.clock.getAsLong());
    this.slices.add(summary);
    this.totals.add(summary);
    this.recording = false;
    if (this.slice % 2 == 1) {
      String tripped =
          ExperimentAnalysis.guardRail(
              ExperimentAnalysis.analyze(this.slices), this.plan.guardRail());
      if (tripped != null) {
        end(ExperimentState.ABORTED, tripped);
        return;
      }
    }
    if (this.slice + 1 == this.arms.length) {
      end(ExperimentState.DONE, null);
      return;
    }
    beginSlice(this.slice + 1);
  }

  private long plannedStart(int index) {
    return this.startNanos + index * this.sliceNanos;
  }

  private void schedule(Runnable next, long atNanos) {
    this.pending =
        this.timer.schedule(() -> runStep(next), Math.max(0, atNanos - this.clock.getAsLong()));
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
      this.recorder.close(this.slice, this.endNanos);
      this.recording = false;
    }
    try {
      this.armSwitch.switchTo(Arm.TUNED);
    } catch (RuntimeException ex) {
      this.reason =
          ((why != null) ? why + "; " : "")
              + "could not switch the client back to the tuned arm: "
              + ex.getMessage();
    }
    this.onEnd.accept(this);
  }
}
