package io.github.spannertuning.routing;

/**
 * What the connections of one pool answer in now, all together: a moving average of every answer of
 * every connection, each moving it up by a quarter of its distance (at most a noise) and down by a
 * sixteenth.
 *
 * <p>Much of what a call takes is the client's own: its JIT compiling while a fresh JVM takes its
 * first traffic, a collection, threads queueing for two cores in a burst. That part rises and falls
 * for every connection at once. A connection's estimate ({@link ChannelLatency}) is moved with the
 * level from when it was last measured: a connection measured before a burst slowed every answer
 * does not look faster than those measured in it, nor one measured in the JVM's first second slower
 * than those measured since. What sets connections apart is what each adds to the level, which is
 * what a slow connection or frontend adds.
 *
 * <p>Updated without a lock by whichever thread sees an answer: two answers landing at once may
 * keep only one, which a level can afford.
 */
public final class PoolLevel {

  /**
   * An answer above the level moves it by this right shift of its distance, a quarter: when a burst
   * slows every answer at once, estimates taken before it follow within a few answers.
   */
  static final int RISE_SHIFT = 2;

  /** An answer below the level moves it by this right shift of its distance: a sixteenth. */
  static final int FALL_SHIFT = 4;

  /**
   * The pool's noise moves by this right shift of each answer's distance from its connection's
   * estimate: a sixty-fourth, so that the first answers of a connection that slowed (far from its
   * estimate until it is learned) move it little.
   */
  static final int NOISE_SHIFT = 6;

  /** 0 until the first answer. */
  private volatile long levelNanos;

  private volatile long noiseNanos;

  /** When a connection of the pool last answered. */
  private volatile long answeredAtNanos;

  /**
   * When the pool's connections began answering after a pause of a half-life ({@link
   * ChannelLatency#FORGET_HALF_LIFE_NANOS}) or more with no answer.
   */
  private volatile long answeringSinceNanos;

  /** The level now, in nanoseconds; 0 until a connection of the pool has answered. */
  public long nanos() {
    return this.levelNanos;
  }

  /**
   * How far one answer lands from its connection's estimate, on average: the noise of one answer,
   * the server's and the client's alike. Two connections alike differ by much less than this in
   * their estimates, each a moving average of many answers; a connection that adds more than this
   * to every answer is slower ({@link ChannelPicker}).
   */
  public long noiseNanos() {
    return this.noiseNanos;
  }

  /** A connection's answer landed {@code distanceNanos} from its estimate. */
  void landed(long distanceNanos) {
    long noise = this.noiseNanos;
    this.noiseNanos = noise + ((Math.abs(distanceNanos) - noise) >> NOISE_SHIFT);
  }

  /**
   * When a connection of the pool last answered ({@link ChannelLatency#unverified}); meaningless
   * while {@link #nanos} is 0.
   */
  public long answeredAtNanos() {
    return this.answeredAtNanos;
  }

  /**
   * When the pool's connections began answering after a pause of a half-life or more; meaningless
   * while {@link #nanos} is 0.
   */
  public long answeringSinceNanos() {
    return this.answeringSinceNanos;
  }

  /** A connection of the pool answered at {@code nowNanos}, in {@code latencyNanos}. */
  void answered(long latencyNanos, long nowNanos) {
    if (this.levelNanos == 0
        || nowNanos - this.answeredAtNanos >= ChannelLatency.FORGET_HALF_LIFE_NANOS) {
      this.answeringSinceNanos = nowNanos;
    }
    this.answeredAtNanos = nowNanos;
    long level = this.levelNanos;
    if (level == 0) {
      this.levelNanos = Math.max(1, latencyNanos);
    } else if (latencyNanos > level) {
      long noise = this.noiseNanos;
      long above = latencyNanos - level;
      if (noise > 0 && above > ChannelLatency.OUTLIER_NOISES * noise) {
        above = ChannelLatency.OUTLIER_NOISES * noise;
      }
      this.levelNanos = level + (above >> RISE_SHIFT);
    } else {
      this.levelNanos = level - ((level - latencyNanos) >> FALL_SHIFT);
    }
  }
}
