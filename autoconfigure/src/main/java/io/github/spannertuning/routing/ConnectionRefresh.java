package io.github.spannertuning.routing;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.DoubleSupplier;

/**
 * When to refresh a channel's connection before the server retires it: make before break, one
 * channel at a time. A refreshed channel is cold at once, so routing sends its reads to the warm
 * ones while it connects again and is primed; its calls in flight finish on the old connection.
 *
 * <p>The decisions only, over numbers: the hook asks {@link #next} which channel to refresh now, on
 * a timer of {@link #checkEveryMillis} and the caller's clock, in milliseconds.
 *
 * <ul>
 *   <li><b>Learned</b> (the default): the age after which the server retires connections is learned
 *       from the connections it retires ({@link #retired}): the longest seen, as grpc-java servers
 *       retire each connection at its age with up to 10 % jitter either way. Each connection is
 *       then refreshed at {@link #LEARNED_SHARE} of it, less its jitter: before the earliest
 *       retirement that age allows. Until the server has retired one, nothing is refreshed.
 *   <li><b>A fixed age</b>: each connection is refreshed that long after it connected, less its
 *       jitter.
 *   <li><b>Off</b>: connections are only connected again once the server has retired them.
 * </ul>
 *
 * <p>Each connection draws its jitter when it connects, up to {@link #JITTER} of the age, so that
 * channels connected together do not refresh together. A channel is refreshed only while every
 * other channel of the pool is warm, and never the pool's only channel: there is always a warm
 * channel to take the reads.
 */
public final class ConnectionRefresh {

  /** A learned age's share at which a connection is refreshed (before its jitter). */
  public static final double LEARNED_SHARE = 0.75;

  /** The most a connection's refresh is brought forward, as a share of the age. */
  public static final double JITTER = 0.1;

  /**
   * Connections lost younger than this teach nothing: a break, not the server's age. Nor does a
   * connection the refresh itself ended.
   */
  public static final long MIN_LEARNED_MILLIS = 1_000;

  /** The server's age until it has retired a connection: Google's frontends' hour. */
  public static final long PRIOR_AGE_MILLIS = 3_600_000;

  /** The timer's period, as a share of the age: how late a refresh can be. */
  private static final int CHECKS_PER_AGE = 20;

  private static final long MIN_CHECK_MILLIS = 50;

  private static final long MAX_CHECK_MILLIS = 30_000;

  private static final long LEARNED = 0;

  private static final long OFF = -1;

  /** A fixed age in milliseconds, or {@link #LEARNED} or {@link #OFF}. */
  private final long fixedMillis;

  private final DoubleSupplier random;

  private volatile long learnedMillis = -1;

  private ConnectionRefresh(long fixedMillis, DoubleSupplier random) {
    this.fixedMillis = fixedMillis;
    this.random = random;
  }

  /** The age learned from the connections the server retires (the default). */
  public static ConnectionRefresh learned() {
    return new ConnectionRefresh(LEARNED, () -> ThreadLocalRandom.current().nextDouble());
  }

  /** Each connection refreshed {@code after} it connected, less its jitter. */
  public static ConnectionRefresh after(Duration after) {
    return after(after, () -> ThreadLocalRandom.current().nextDouble());
  }

  /** No refresh: a connection is connected again once the server has retired it. */
  public static ConnectionRefresh off() {
    return new ConnectionRefresh(OFF, () -> 0);
  }

  /** For tests: the jitter drawn from {@code random} (0 to 1). */
  static ConnectionRefresh learned(DoubleSupplier random) {
    return new ConnectionRefresh(LEARNED, random);
  }

  /** For tests: the jitter drawn from {@code random} (0 to 1). */
  static ConnectionRefresh after(Duration after, DoubleSupplier random) {
    if (after.toMillis() < 1) {
      throw new IllegalArgumentException("refresh age must be positive: " + after);
    }
    return new ConnectionRefresh(after.toMillis(), random);
  }

  public boolean isOff() {
    return this.fixedMillis == OFF;
  }

  /**
   * The server retired a connection it had up for {@code ageMillis}: not one the refresh ended.
   * Learns the server's age when learning.
   */
  public void retired(long ageMillis) {
    if (this.fixedMillis != LEARNED || ageMillis < MIN_LEARNED_MILLIS) {
      return;
    }
    synchronized (this) {
      if (ageMillis > this.learnedMillis) {
        this.learnedMillis = ageMillis;
      }
    }
  }

  /** The server's age learned so far, or {@code -1} before it has retired a connection. */
  public long learnedMillis() {
    return this.learnedMillis;
  }

  /**
   * How long after it connected a connection is refreshed, before its jitter, or {@code -1} when
   * off.
   */
  public long afterMillis() {
    if (this.fixedMillis != LEARNED) {
      return this.fixedMillis;
    }
    long learned = this.learnedMillis;
    return (long) (((learned < 0) ? PRIOR_AGE_MILLIS : learned) * LEARNED_SHARE);
  }

  /** A new connection's jitter: the share of the age its refresh is brought forward. */
  double drawJitter() {
    return JITTER * this.random.getAsDouble();
  }

  /**
   * The channel to refresh now, or {@code null}: the warm channel whose refresh is due earliest,
   * when it is due and every other channel is warm.
   */
  public ChannelWarmth next(List<ChannelWarmth> channels, long nowMillis) {
    long after = afterMillis();
    if (after < 0 || channels.size() < 2) {
      return null;
    }
    ChannelWarmth earliest = null;
    long earliestDue = Long.MAX_VALUE;
    for (ChannelWarmth channel : channels) {
      long due = channel.refreshDueMillis(after);
      if (due < 0) {
        return null; // one not warm: it may be the one being refreshed
      }
      if (due < earliestDue) {
        earliestDue = due;
        earliest = channel;
      }
    }
    return (earliestDue <= nowMillis) ? earliest : null;
  }

  /**
   * How often to ask {@link #next}: a twentieth of the age, from 50 ms to 30 s; {@code -1} when
   * off. While learning, the age can only get shorter than the prior's: a check every second until
   * the server has retired a connection, so that what it teaches is acted on.
   */
  public long checkEveryMillis() {
    if (isOff()) {
      return -1;
    }
    if (this.fixedMillis == LEARNED && this.learnedMillis < 0) {
      return 1_000;
    }
    long after = afterMillis();
    return Math.max(MIN_CHECK_MILLIS, Math.min(MAX_CHECK_MILLIS, after / CHECKS_PER_AGE));
  }

  @Override
  public String toString() {
    if (this.fixedMillis == OFF) {
      return "off";
    }
    if (this.fixedMillis == LEARNED) {
      long learned = this.learnedMillis;
      return (learned < 0)
          ? "learned (none retired yet: " + PRIOR_AGE_MILLIS + " ms)"
          : "learned (" + learned + " ms)";
    }
    return this.fixedMillis + " ms";
  }
}
