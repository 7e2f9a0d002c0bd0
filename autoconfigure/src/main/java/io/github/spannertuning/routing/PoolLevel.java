package io.github.spannertuning.routing;

/**
 * What the connections of one pool answer in now, all together: a moving average of every answer of
 * every connection, each moving it by a sixteenth of its distance.
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

  /** Each answer moves the level by this right shift of its distance from it: a sixteenth. */
  static final int SHIFT = 4;

  /**
   * The pool's noise moves by this right shift of each answer's distance from its connection's
   * estimate: a sixty-fourth, so that the first answers of a connection that slowed (far from its
   * estimate until it is learned) move it little.
   */
  static final int NOISE_SHIFT = 6;

  /** 0 until the first answer. */
  private volatile long levelNanos;

  private volatile long noiseNanos;

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

  /** A connection of the pool answered in {@code latencyNanos}. */
  void answered(long latencyNanos) {
    long level = this.levelNanos;
    this.levelNanos =
        (level == 0) ? Math.max(1, latencyNanos) : level + ((latencyNanos - level) >> SHIFT);
  }
}
