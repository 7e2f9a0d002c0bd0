package io.github.spannertuning.experiment;

import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.random.RandomGenerator;

/**
 * One client's experiments: at most one runs at a time, and the last one is kept for its result.
 *
 * <p>The RPC path calls {@link #record}, {@link #cancelOfFinishedStream} and {@link #goAway} on
 * every call whatever the state: with no experiment running each is one volatile read; while one
 * runs, one histogram record (or counter increment) and a word to each {@link
 * RecordedCallListener}, no lock and no allocation.
 *
 * <p>A feature switched by hand while an experiment runs makes the experiment meaningless: call
 * {@link #abort} with the reason first, which puts the client back in its states from before the
 * experiment, then apply the switch, so that the hand's switch is the one that stays. Call {@link
 * #abort} too when the client closes.
 */
public final class ExperimentSlot {

  private static final Logger logger = Logger.getLogger(ExperimentSlot.class.getName());

  private static final AtomicReferenceFieldUpdater<ExperimentSlot, Experiment> RUNNING =
      AtomicReferenceFieldUpdater.newUpdater(ExperimentSlot.class, Experiment.class, "running");

  private final ExperimentTimer timer;

  private final LongSupplier clock;

  private final LongSupplier wallClock;

  private final Supplier<? extends RandomGenerator> random;

  private final List<Consumer<ExperimentResult>> endListeners = new CopyOnWriteArrayList<>();

  /** The running experiment, read on every call; cleared by the experiment as it ends. */
  private volatile Experiment running;

  private volatile Experiment latest;

  private final ArmTotals totals = new ArmTotals();

  /** Replaced, never changed, as listeners come and go: the recording path reads it unlocked. */
  private volatile RecordedCallListener[] listeners = {};

  /** What every experiment of this slot tells: the listeners of the moment. */
  private final RecordedCallListener fanOut =
      (kind, arm, latencyNanos) -> {
        for (RecordedCallListener listener : this.listeners) {
          listener.recorded(kind, arm, latencyNanos);
        }
      };

  /**
   * Slots whose fleet experiments follow the system's wall clock.
   *
   * @param timer where the experiments' steps run
   * @param clock nanoseconds, the clock the calls' start and end times given to {@link #record} are
   *     read from ({@code System::nanoTime})
   * @param random a source of each experiment's order of arms
   */
  public ExperimentSlot(
      ExperimentTimer timer, LongSupplier clock, Supplier<? extends RandomGenerator> random) {
    this(timer, clock, ExperimentSlot::systemEpochNanos, random);
  }

  /**
   * @param timer where the experiments' steps run
   * @param clock nanoseconds, the clock the calls' start and end times given to {@link #record} are
   *     read from ({@code System::nanoTime})
   * @param wallClock nanoseconds since the epoch: what a fleet's slices are aligned to, and what
   *     each slice's switch instant is read from
   * @param random a source of each experiment's order of arms, for an experiment alone
   */
  public ExperimentSlot(
      ExperimentTimer timer,
      LongSupplier clock,
      LongSupplier wallClock,
      Supplier<? extends RandomGenerator> random) {
    this.timer = timer;
    this.clock = clock;
    this.wallClock = wallClock;
    this.random = random;
  }

  private static long systemEpochNanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /**
   * Starts an experiment: switches the client to the first slice's arm, or in a fleet to the arm in
   * force, and schedules the rest.
   *
   * @param armSwitch puts the client in an arm; see {@link ArmSwitch} for how it is called
   * @return the experiment as it started; {@code aborted} if the first switch failed
   * @throws IllegalStateException when an experiment is running on this client already
   */
  public synchronized ExperimentResult start(ExperimentPlan plan, ArmSwitch armSwitch) {
    Experiment current = this.running;
    if (current != null) {
      ExperimentResult.Progress progress = current.result().progress();
      throw new IllegalStateException(
          "an experiment is already running on this client (slice "
              + (progress.slicesDone() + 1)
              + " of "
              + progress.slices()
              + "); stop it before starting another");
    }
    Experiment experiment =
        new Experiment(
            plan,
            armSwitch,
            this.timer,
            this.clock,
            this.wallClock,
            (plan.fleet() == null) ? this.random.get() : null,
            this::ended,
            this.totals,
            this.fanOut);
    this.latest = experiment;
    this.running = experiment;
    experiment.start();
    return experiment.result();
  }

  private void ended(Experiment experiment) {
    RUNNING.compareAndSet(this, experiment, null);
    if (this.endListeners.isEmpty()) {
      return;
    }
    ExperimentResult result = experiment.result();
    for (Consumer<ExperimentResult> listener : this.endListeners) {
      try {
        listener.accept(result);
      } catch (RuntimeException ex) {
        logger.log(Level.WARNING, "spanner-tuning: a listener of an experiment's end failed", ex);
      }
    }
  }

  /**
   * Tells {@code listener} of every experiment's end from now on, with its result, however it
   * ended. It runs on the thread that ended it (the timer's for {@code done}) holding the
   * experiment's lock: it must be quick and must not start, stop or abort an experiment.
   */
  public void onEnd(Consumer<ExperimentResult> listener) {
    this.endListeners.add(listener);
  }

  /**
   * Stops the running experiment, as a user asked: {@code stopped}, with {@code reason}, and the
   * client put back as it was before it. Its whole pairs so far keep their figures.
   *
   * @return whether an experiment was running
   */
  public boolean stop(String reason) {
    Experiment current = this.running;
    return current != null && current.stop(reason);
  }

  /**
   * Ends the running experiment as {@code aborted}, with {@code reason}; the client is back as it
   * was before the experiment when this returns. Must not be called holding a lock the {@link
   * ArmSwitch} takes.
   *
   * @return whether an experiment was running
   */
  public boolean abort(String reason) {
    Experiment current = this.running;
    return current != null && current.abort(reason);
  }

  /** Figures per call kind and arm over every slice recorded, for meters. */
  public ArmTotals totals() {
    return this.totals;
  }

  /**
   * Tells {@code listener} of every call this slot's experiments record from now on, as they record
   * it (see {@link RecordedCallListener} for what it may do there).
   */
  public synchronized void addRecordedCallListener(RecordedCallListener listener) {
    RecordedCallListener[] grown = Arrays.copyOf(this.listeners, this.listeners.length + 1);
    grown[grown.length - 1] = listener;
    this.listeners = grown;
  }

  /** Stops telling {@code listener}; a record under way may still reach it. */
  public synchronized void removeRecordedCallListener(RecordedCallListener listener) {
    this.listeners =
        Arrays.stream(this.listeners)
            .filter((each) -> each != listener)
            .toArray(RecordedCallListener[]::new);
  }

  /** Whether an experiment is running. */
  public boolean isRunning() {
    return this.running != null;
  }

  /** The running experiment, or else the last one; {@code null} when none was ever started. */
  public ExperimentResult result() {
    Experiment last = this.latest;
    return (last != null) ? last.result() : null;
  }

  /**
   * A call of {@code kind} that ran from {@code startNanos} to {@code endNanos}, on the slot's
   * clock, and ended with gRPC status code {@code statusCode} (0 for OK). Counted when an
   * experiment is recording and the call started after its slice's carry-over; every call is
   * counted in the latency histogram, failed ones too, since the application waited for them as
   * well.
   */
  public void record(CallKind kind, long startNanos, long endNanos, int statusCode) {
    Experiment current = this.running;
    if (current != null) {
      current.record(kind, startNanos, endNanos, statusCode);
    }
  }

  /** The client sent a cancel for a stream that had finished (the stream-end guard let it go). */
  public void cancelOfFinishedStream() {
    Experiment current = this.running;
    if (current != null) {
      current.cancelOfFinishedStream();
    }
  }

  /** The client saw a GOAWAY on one of its connections. */
  public void goAway() {
    Experiment current = this.running;
    if (current != null) {
      current.goAway();
    }
  }
}
