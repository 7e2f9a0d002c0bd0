package io.github.spannertuning.routing;

/**
 * How long one sub-channel takes to answer, as {@link ChannelPicker} weighs it: a time-decayed
 * moving average of its calls' time to first response, errors counted as a penalty, forgotten while
 * nothing measures it, and raised by the silence of a channel that has calls outstanding and
 * answers none.
 *
 * <p>A call is timed from its start to its first response message (its close, for a call that ends
 * without one). The rest of a stream's life is paced by the application's reading and, with the
 * stream-end guard, by the trailers; the first response is what the connection and its frontend
 * decide.
 *
 * <p>Updated without a lock by whichever thread sees a response: two samples landing at once may
 * keep only one, which an estimate can afford. Every read is of plain volatile fields.
 */
public final class ChannelLatency {

  /** How a call ended, as far as the estimate cares. */
  public enum Close {

    /** With an answer or an error the server chose: the channel is alive. */
    ANSWERED,

    /**
     * UNAVAILABLE or RESOURCE_EXHAUSTED: the connection or its frontend may be at fault; counted as
     * a penalty.
     */
    CHANNEL_FAULT,

    /** The call's deadline passed with no answer: a penalty, and no sign of life. */
    DEADLINE,

    /**
     * The client cancelled it. A call that had answered tells nothing more; one cancelled with no
     * answer yet, after longer than the channel was expected to take, tells that it takes at least
     * that long (a hedged read's loser, cancelled once the hedge answered elsewhere).
     */
    CANCELLED
  }

  /**
   * The time constant of the moving average: a sample taken this long after the one before weighs
   * half.
   */
  static final long DECAY_NANOS = 250_000_000L;

  /** The least weight of a sample, so that a channel in heavy use still follows a change fast. */
  static final double MIN_WEIGHT = 0.125;

  /**
   * Half-life of an estimate that no call updates: a channel left alone because it was slow is
   * tried again once its estimate has halved down to what the others cost, which is how a recovered
   * connection is learned again.
   */
  static final long FORGET_HALF_LIFE_NANOS = 250_000_000L;

  /**
   * The least latency counted for a call that failed with UNAVAILABLE, RESOURCE_EXHAUSTED or
   * DEADLINE_EXCEEDED (its own time counts when longer). It holds the channel back for about {@code
   * log2(PENALTY / typical latency)} half-lives, a second or so.
   */
  static final long PENALTY_NANOS = 100_000_000L;

  /**
   * The estimate of a channel that has not answered a call yet, the same for every channel so that
   * a fresh client's first burst is spread by calls in flight alone; and the least a forgotten
   * estimate falls to.
   */
  static final long INITIAL_NANOS = 1_000_000L;

  /**
   * How long a channel with calls outstanding may go without answering before its silence counts,
   * at least: past it, a channel that stopped answering (a half-open connection, a stuck frontend)
   * is avoided; below it, a connection still being set up on a fresh client is not.
   */
  static final long SILENCE_NANOS = 50_000_000L;

  /**
   * ... and at least this many times the channel's estimate (as forgotten so far: a channel tried
   * again after a penalty is judged by what it is now expected to take, not by the penalty): where
   * queries take hundreds of milliseconds, a channel whose next answer is simply not due yet must
   * not look stuck next to one that has just answered.
   */
  static final int SILENCE_ESTIMATES = 4;

  /**
   * The most doublings of {@link #FORGET_HALF_LIFE_NANOS} for a channel whose calls keep failing:
   * each penalty in a row, with no answer between them, doubles how long the channel is left alone,
   * up to four times as long.
   */
  static final int MAX_BACKOFF_SHIFT = 2;

  /** The pool's level, which moves the estimate ({@link PoolLevel}); null for none. */
  private final PoolLevel pool;

  /** The moving average, as of the pool's level {@link #levelAtNanos}. */
  private volatile long estimateNanos = INITIAL_NANOS;

  /**
   * How many of the pool's noises ({@link PoolLevel#noiseNanos}) above its estimate a lone answer
   * counts at most, and above the pool's level any answer: one call that met a pause of the
   * client's, or a connection tried again while slow, moves neither far.
   */
  static final int OUTLIER_NOISES = 4;

  /** The pool's level when the estimate was last set. */
  private volatile long levelAtNanos;

  /** Whether the last answer landed more than {@link #OUTLIER_NOISES} noises above the estimate. */
  private volatile boolean far;

  /**
   * Penalties in a row since the channel last answered. While it is positive the channel is
   * suspect: {@link ChannelPicker} lets it carry one call at a time, so that trying a channel that
   * may still be stuck risks one call, not a burst.
   */
  private volatile int penalties;

  private volatile long sampledAtNanos;

  /**
   * Whether the estimate comes from an answer of the channel's, or from the pool's when it joined
   * one in use ({@link #joined}); until then it is {@link #INITIAL_NANOS}, a guess.
   */
  private volatile boolean measured;

  /** A connection that joined a pool in use and has not answered yet ({@link #joined}). */
  private volatile boolean untried;

  /** When the channel last answered, or began a call with none outstanding. */
  private volatile long heardAtNanos;

  /**
   * Until when the channel's silence does not count: a call whose statement costs more than the
   * pool's cheapest ({@link StatementCosts}) is not due before then.
   */
  private volatile long quietUntilNanos;

  /** The latency of a channel on its own, moved by no pool's level. */
  public ChannelLatency(long nowNanos) {
    this(nowNanos, null);
  }

  /**
   * The latency of a channel of a pool whose level moves it ({@link PoolLevel}), and which each of
   * its answers moves.
   */
  public ChannelLatency(long nowNanos, PoolLevel pool) {
    this.pool = pool;
    this.sampledAtNanos = nowNanos;
    this.heardAtNanos = nowNanos;
    this.quietUntilNanos = nowNanos;
  }

  /**
   * The moving average, in nanoseconds, moved with the pool's level since it was last updated: up
   * by as much as the level rose since; down by as much as it fell, or in proportion to it,
   * whichever leaves more.
   *
   * <p>The level rises by a quarter and falls by a sixteenth, so under noise it sits above the mean
   * of the answers, and most estimates (each a mean of its connection's answers) lie below it: at
   * 10-30 ms per answer (a fresh JVM compiling) the level settles near 23 ms and the estimates near
   * 20 ms. When the noise goes and answers take 2-5 ms, the level falls to about 4 ms; shifted down
   * by that whole fall, an estimate not updated since would land well under a millisecond, or be
   * cut to 1 ns: below any answer of the pool's, and the fastest to the picker until its next
   * answer. An estimate below the level it was set at falls in proportion instead, keeping its
   * ratio to the level (about 3 ms there, beside the others'), as the client's slowdown scales
   * every answer. One above it (a connection slower than the pool) still falls by the level's fall
   * alone, keeping what it adds.
   */
  public long estimateNanos() {
    long estimate = this.estimateNanos;
    long levelAt = this.levelAtNanos;
    PoolLevel pool = this.pool;
    if (pool == null || levelAt == 0) {
      // No level, or none when the estimate was set: the pool had not answered yet.
      return estimate;
    }
    long level = pool.nanos();
    long shifted = estimate + (level - levelAt);
    if (level >= levelAt) {
      return shifted;
    }
    long scaled = (long) ((double) estimate * level / levelAt);
    return Math.max(1, Math.max(shifted, scaled));
  }

  /** The noise of one answer in the channel's pool ({@link PoolLevel#noiseNanos}); 0 for none. */
  public long noiseNanos() {
    PoolLevel pool = this.pool;
    return (pool == null) ? 0 : pool.noiseNanos();
  }

  private long level() {
    PoolLevel pool = this.pool;
    return (pool == null) ? 0 : pool.nanos();
  }

  /**
   * What a call sent now may expect: the moving average, halved for each {@link
   * #FORGET_HALF_LIFE_NANOS} since it was last updated, and, while calls are outstanding, at least
   * the time since the channel last answered once that is longer than {@link #SILENCE_NANOS} and
   * {@link #SILENCE_ESTIMATES} estimates.
   */
  public long expectedNanos(long nowNanos, int outstanding) {
    long estimate = forgotten(nowNanos);
    if (outstanding > 0) {
      long heard = this.heardAtNanos;
      long quiet = this.quietUntilNanos;
      long silence = nowNanos - ((quiet - heard > 0) ? quiet : heard);
      if (silence > SILENCE_NANOS && silence > SILENCE_ESTIMATES * estimate) {
        estimate = Math.max(estimate, silence);
      }
    }
    return estimate;
  }

  /**
   * Whether the estimate is measured: the channel has answered a call, failed one, or joined a pool
   * in use with the pool's estimate. {@link ChannelPicker} takes a channel not measured yet as
   * about as fast as the fastest, so that a fresh client's first answers neither draw its calls to
   * the channels that have not answered (whose guess is lower than any real latency) nor keep them
   * there.
   */
  public boolean measured() {
    return this.measured;
  }

  /**
   * Whether nothing has updated the estimate for at least one of its half-lives while its pool's
   * other connections answered: it is being forgotten, so it says less and less of what the channel
   * would take now. {@link ChannelPicker} then lets the channel carry one call at a time until it
   * answers, so that a channel left alone because it was slow is tried again with one call, not
   * with every call made before its answer. Only the time the pool answered counts, since it last
   * began answering after a pause: after a pause every estimate is as old as the others, none of
   * them in doubt, and a burst is spread, not held to one call per connection while the first to
   * answer take the rest. A channel of no pool counts to {@code nowNanos}.
   */
  public boolean unverified(long nowNanos) {
    PoolLevel pool = this.pool;
    if (pool == null) {
      return nowNanos - this.sampledAtNanos >= forgetHalfLife();
    }
    if (pool.nanos() == 0) {
      return false;
    }
    long since = pool.answeringSinceNanos();
    if (this.sampledAtNanos - since > 0) {
      since = this.sampledAtNanos;
    }
    return pool.answeredAtNanos() - since >= forgetHalfLife();
  }

  /** The moving average, halved for each half-life since it was last updated. */
  private long forgotten(long nowNanos) {
    long estimate = estimateNanos();
    long halvings = (nowNanos - this.sampledAtNanos) / forgetHalfLife();
    if (halvings > 0) {
      // Never below what an untried channel is thought to cost.
      estimate =
          Math.max((halvings < 63) ? estimate >> halvings : 0, Math.min(estimate, INITIAL_NANOS));
    }
    return estimate;
  }

  /** The half-life of the estimate, doubled for each failure in a row after the first. */
  private long forgetHalfLife() {
    return FORGET_HALF_LIFE_NANOS << Math.min(Math.max(this.penalties - 1, 0), MAX_BACKOFF_SHIFT);
  }

  /**
   * The channel joins a pool in use: its estimate starts at {@code estimateNanos}, as if sampled at
   * {@code nowNanos}, and it is {@link #untried} until it answers.
   */
  public void joined(long estimateNanos, long nowNanos) {
    this.levelAtNanos = level();
    this.estimateNanos = Math.max(1, estimateNanos);
    this.sampledAtNanos = nowNanos;
    this.heardAtNanos = nowNanos;
    this.untried = true;
    this.measured = true;
  }

  /**
   * Whether the channel joined a pool in use and has not answered a call since: {@link
   * ChannelPicker} lets it carry one call at a time until it does.
   */
  public boolean untried() {
    return this.untried;
  }

  /** Whether the channel's last calls failed and it has not answered since. */
  public boolean suspect() {
    return this.penalties > 0;
  }

  /** A call starts on a channel that had none outstanding: its silence counts from now. */
  public void firstOutstanding(long nowNanos) {
    this.heardAtNanos = nowNanos;
  }

  /**
   * A call started whose statement is not due before {@code untilNanos}: its silence until then is
   * no sign of a stuck channel. Written only when it moves the time later.
   */
  public void quietUntil(long untilNanos) {
    if (untilNanos - this.quietUntilNanos > 0) {
      this.quietUntilNanos = untilNanos;
    }
  }

  /** The first response of a call that started at {@code startNanos}. */
  public void answered(long startNanos, long nowNanos) {
    this.heardAtNanos = nowNanos;
    leveled(nowNanos - startNanos, nowNanos);
    sample(nowNanos - startNanos, nowNanos, false);
    clearPenalties();
  }

  /**
   * An answer of the channel's moves the pool's level; its estimate is then moved to it, as of the
   * level the answer is part of.
   */
  private void leveled(long latencyNanos, long nowNanos) {
    PoolLevel pool = this.pool;
    if (pool != null) {
      pool.answered(latencyNanos, nowNanos);
    }
  }

  private void clearUntried() {
    if (this.untried) {
      this.untried = false;
    }
  }

  /**
   * The close of a call. A call that answered before has been sampled already; one that did not is
   * sampled now, as a penalty when it failed in a way that says the channel may be at fault, and
   * when the client cancelled it after longer than the channel's estimate, as having taken at least
   * that long. A close the client made itself (a cancel, a deadline) is no sign of life.
   */
  public void closed(Close close, long startNanos, long nowNanos, boolean answered) {
    switch (close) {
      case CHANNEL_FAULT -> {
        this.heardAtNanos = nowNanos;
        sample(Math.max(PENALTY_NANOS, nowNanos - startNanos), nowNanos, true);
      }
      case DEADLINE -> sample(Math.max(PENALTY_NANOS, nowNanos - startNanos), nowNanos, true);
      case CANCELLED -> {
        // The client's own doing, and no sign of life; but a call that waited past what the
        // channel was expected to take is a lower bound of its latency. Without it, a slow
        // channel whose every probe is hedged and its loser cancelled would never be measured,
        // its estimate forgotten down to the least, and probed on.
        long waited = nowNanos - startNanos;
        if (!answered && waited > forgotten(nowNanos)) {
          sample(waited, nowNanos, false);
        }
      }
      case ANSWERED -> {
        this.heardAtNanos = nowNanos;
        if (!answered) {
          leveled(nowNanos - startNanos, nowNanos);
          sample(nowNanos - startNanos, nowNanos, false);
        }
        clearPenalties();
      }
    }
  }

  /**
   * The channel answered: it is no longer suspect nor untried. Written only when set, so that a
   * healthy channel's answers do not write the fields.
   */
  private void clearPenalties() {
    if (this.penalties != 0) {
      this.penalties = 0;
    }
    clearUntried();
  }

  /**
   * Moves the estimate towards a sample. A channel tried again after it was left alone, its
   * estimate being forgotten ({@link #unverified}), is judged by its new answer alone: one that
   * recovered is used again at once, and one still slow is left alone again, not let back into the
   * band by an average of its answer and the forgotten estimate that let the probe through.
   */
  private void sample(long latencyNanos, long nowNanos, boolean penalty) {
    long previous = forgotten(nowNanos);
    long sinceLast = nowNanos - this.sampledAtNanos;
    boolean unverified = sinceLast >= forgetHalfLife();
    if (penalty) {
      this.penalties++;
    }
    double weight =
        (penalty || unverified)
            ? 1.0
            : Math.max(
                MIN_WEIGHT, (sinceLast <= 0) ? 0 : sinceLast / (double) (sinceLast + DECAY_NANOS));
    long taken = latencyNanos;
    PoolLevel pool = this.pool;
    if (pool != null && !penalty && !unverified && this.measured) {
      // One answer far above the estimate, after one that was not, counts as only so far above: a
      // pause of the client's (a collection, a compile) that one call met does not set its
      // connection apart. A connection that slowed answers so again, and its next answer counts
      // whole.
      long bound = OUTLIER_NOISES * pool.noiseNanos();
      boolean far = bound > 0 && latencyNanos - previous > bound;
      if (far && !this.far) {
        taken = previous + bound;
      }
      if (far != this.far) {
        this.far = far;
      }
      pool.landed(taken - previous);
    }
    long next =
        penalty
            ? Math.max(previous, latencyNanos)
            : previous + (long) (weight * (taken - previous));
    this.levelAtNanos = level();
    this.estimateNanos = Math.max(1, next);
    this.sampledAtNanos = nowNanos;
    if (!this.measured) {
      this.measured = true;
    }
  }
}
