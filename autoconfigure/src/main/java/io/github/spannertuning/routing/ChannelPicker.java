package io.github.spannertuning.routing;

import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Chooses the connection of a call by the latency it may expect there.
 *
 * <p>A Spanner frontend serves the streams of one connection in parallel, up to its stream limit: a
 * call on a connection with a few others in flight takes about as long as one on an idle
 * connection. So latency decides, as in Prequal ("Load is not what you should balance", NSDI 2024),
 * and calls in flight set connections apart only where they say something of the wait:
 *
 * <ol>
 *   <li>A connection takes no call while it has no room (its calls in flight reached the stream
 *       limit less the stream-end guard's margin, or on a dynamic pool the calls per channel past
 *       which the pool grows), or while it carries a call and what is known of it is in doubt: its
 *       last call failed, it joined the pool and has not answered yet, or its estimate has not been
 *       updated for a half-life and is being forgotten. That is how a connection left alone because
 *       it was slow, stuck or failing is tried again with one call at a time, and found again once
 *       it recovers. A cold connection (one being set up, or not primed yet, where warmth is
 *       watched: {@link ChannelWarmth}) takes no call while a warm one has room and is not hot.
 *   <li>A connection is hot while it carries half again as many calls as the pool's mean, at least
 *       one more, and more than a few (the rule's calm): an estimate that happens to be low does
 *       not draw every call until it is full, and a connection that answers first takes the few
 *       calls of a quiet pool.
 *   <li>Among the other connections, the latency each one's {@link ChannelLatency} expects decides:
 *       a call goes to the connection with the fewest calls in flight among those expected within a
 *       quarter above the least, or within twice the noise of one answer in the pool ({@link
 *       PoolLevel#noiseNanos}) when that is more, one of the equals at random: estimates of
 *       connections alike, each a moving average of many answers, rarely differ by that much,
 *       however noisy the client makes each answer. A connection that answers slower, has calls
 *       stuck, or failed recently gets none while the others are about as fast and have room.
 *   <li>The calls a hot connection sheds go only to connections expected within four times the
 *       fastest one's time: when every such connection is hot, the least busy of them takes the
 *       call while it has room. A connection far slower (a frontend 20 ms slower than 5 ms ones)
 *       takes none while a fast one has room, however few connections the pool has (a dynamic pool
 *       shrunk to two, one of them slow); one a few times slower still takes a hot one's share.
 *   <li>A connection that is up and being primed takes a share of the calls hot connections shed,
 *       as one within four times the fastest does, while fewer than half the pool's connections are
 *       warm: a burst on a pool whose channels are still being primed is spread, not taken by the
 *       channel primed first up to its room. Once most are warm, a connection the server retired
 *       and that is being set up and primed again takes a call only when no warm one has room: its
 *       priming waits for the frontend's set-up, and a read sent there would wait with it, while a
 *       warm connection serves one more stream in parallel.
 *   <li>On a dynamic pool a connection is full at the calls per channel past which the pool adds a
 *       channel, well below the server's stream limit. When every connection about as fast as the
 *       fastest is full there, and not hot, the least busy of them goes past that room, up to the
 *       stream limit less the guard's margin (the rule's ceiling), before a slower connection takes
 *       the call: the frontend serves the extra stream in parallel, and the pool, seeing a channel
 *       past its room, adds one. A connection twice as slow would serve it in twice the time, and
 *       with every such call it takes the pool looks less loaded than it is and does not grow.
 *   <li>When every connection is full or in doubt, the one with the fewest calls in flight takes
 *       the call, a failed one last; one not connected, or being primed again once most are warm,
 *       before any other goes past its room.
 * </ol>
 *
 * <p>The connection is counted before the pick returns, and the pick is repeated if another thread
 * counted a call on it in between. No lock, no allocation.
 *
 * <p>The pool is handed to each pick: a fixed pool hands the same connections every time, a pool
 * whose connections come and go (grpc-gcp's dynamic pool) those that take new calls at that moment.
 * A connection that joins a pool in use starts from the pool's median estimate ({@link #admit}).
 */
public final class ChannelPicker {

  /** Rescans when another thread took the connection first, before settling for it anyway. */
  private static final int RESERVE_ATTEMPTS = 3;

  /** The expected latency of a connection that takes no call now unless every one is like it. */
  public static final long CLOSED = -1;

  /** Ranks a failed connection that still carries a call after every other in the fallback pick. */
  private static final long FAILED_RANK = 1L << 32;

  /**
   * The band is at least this many noises of one answer wide ({@link PoolLevel#noiseNanos}): the
   * least of eight estimates alike, each a moving average weighing an answer an eighth, lies about
   * half a noise below their mean, and the highest as far above.
   */
  static final int BAND_NOISES = 2;

  private final Rule rule;

  public ChannelPicker(Rule rule) {
    this.rule = rule;
  }

  /**
   * The constants of the pick.
   *
   * @param room the calls in flight a connection may carry before it counts as full: the stream
   *     limit less the stream-end guard's margin; on a dynamic pool no more than the calls per
   *     channel past which the pool adds one, so that routing never makes it grow sooner than the
   *     client's own pick would
   * @param hotShift how far above the pool's mean calls in flight a connection counts as hot, as a
   *     right shift of the mean: 1 is half again
   * @param bandShift how far above the least expected latency a connection still counts as about as
   *     fast, as a right shift: 1 is half again
   * @param calm the calls in flight a connection may carry and never count as hot, whatever the
   *     pool's mean: a frontend serves that many streams of a connection in parallel without a
   *     wait, so a connection faster than the others takes them all before a slower one is used
   * @param ceiling the calls in flight a connection about as fast as the fastest may carry past its
   *     room before a slower connection takes a call: on a dynamic pool the stream limit less the
   *     guard's margin, the room being where the pool grows; on a fixed pool the room itself
   */
  public record Rule(int room, int hotShift, int bandShift, int calm, int ceiling) {

    public Rule {
      ceiling = Math.max(ceiling, room);
    }

    /** A rule whose connections go no further than their room. */
    public Rule(int room, int hotShift, int bandShift, int calm) {
      this(room, hotShift, bandShift, calm, room);
    }

    /**
     * Hot at half again the mean, a band of a quarter: chosen from the routing benchmark's
     * concurrency sweep (docs/benchmarking.md). The band is wide enough that the noise of estimates
     * at a few milliseconds per query does not pin traffic to the connection that happened to
     * answer fastest, and narrow enough that a connection twice as slow on the server stays out of
     * it on a client short of CPU, whose own queueing, added to every answer, brings the estimates
     * closer. Within the band the fewest calls in flight decide, and a connection left alone has
     * the fewest: a wider band lets a slower one draw every call until it carries as many as the
     * others. Calm up to a tenth of the room: with few calls in flight (a small pool, or a pool the
     * dynamic pool shrank to its least), half again the mean is two or three calls, and the hot
     * rule alone would hand a connection twice as slow a quarter of them.
     */
    public static Rule defaults(int room) {
      return new Rule(room, 1, 2, Math.max(1, room / 10));
    }

    /**
     * This rule with a room of at most {@code room} calls in flight per connection, its room of now
     * becoming its ceiling.
     */
    public Rule withRoomAtMost(int room) {
      return new Rule(
          Math.min(this.room, room), this.hotShift, this.bandShift, this.calm, this.room);
    }
  }

  public Rule rule() {
    return this.rule;
  }

  /**
   * What a call sent to {@code connection} now may expect to take: the latency its estimate
   * expects; {@link #CLOSED} while it has no room, is cold ({@link Connection#isCold}), or carries
   * a call while what is known of it is in doubt.
   */
  public static long expected(Connection connection, long nowNanos, Rule rule) {
    return expectedBelow(connection, nowNanos, rule.room());
  }

  /** As {@link #expected}, for a connection that has room below {@code limit} calls in flight. */
  private static long expectedBelow(Connection connection, long nowNanos, int limit) {
    int inFlight = connection.inFlight();
    if (inFlight >= limit || connection.isCold()) {
      return CLOSED;
    }
    ChannelLatency latency = connection.latency();
    if (inFlight > 0 && (latency.suspect() || latency.untried() || latency.unverified(nowNanos))) {
      return CLOSED;
    }
    return latency.expectedNanos(nowNanos, inFlight);
  }

  /**
   * Whether {@code connection} takes a share of what hot connections shed: one expected within
   * {@code tolerable}, or, while the pool is {@code starting}, one up and being primed, while it
   * has room.
   */
  private static boolean shares(
      Connection connection, long now, long tolerable, Rule rule, boolean starting) {
    if (connection.isPriming()) {
      return starting && connection.inFlight() < rule.room();
    }
    long expected = expected(connection, now, rule);
    return expected != CLOSED && expected <= tolerable;
  }

  /**
   * What a call may expect on a connection full at its room that may go past it ({@link
   * Rule#ceiling}), or {@link #CLOSED}.
   */
  private static long stretched(Connection connection, long now, Rule rule) {
    int inFlight = connection.inFlight();
    if (inFlight < rule.room() || !connection.latency().measured()) {
      return CLOSED;
    }
    return expectedBelow(connection, now, rule.ceiling());
  }

  /** Whether a connection full at its room may go past it, being expected within {@code good}. */
  private static boolean within(Connection connection, long now, long good, Rule rule) {
    long stretched = stretched(connection, now, rule);
    return stretched != CLOSED && stretched <= good;
  }

  /**
   * Whether a connection with {@code inFlight} calls is hot in a pool of {@code n} carrying {@code
   * total}: above the mean by more than the rule's share of it, and by more than one, and above the
   * rule's calm.
   */
  private static boolean hot(int inFlight, int n, long total, Rule rule) {
    return inFlight > rule.calm()
        && (long) n * inFlight > total + Math.max(n, total >> rule.hotShift());
  }

  /**
   * The connection of {@code pool} for a call made at {@code now}, by its index there, counted on
   * it before this returns.
   */
  public int pick(Connection[] pool, long now) {
    return pick(pool, now, -1);
  }

  /**
   * As {@link #pick(Connection[], long)}, leaving out connection {@code excluded} ({@code -1} for
   * none): where a hedge goes, away from its first attempt. A pool of one has nowhere else: its one
   * connection.
   */
  public int pickExcept(Connection[] pool, int excluded, long now) {
    return pick(pool, now, (pool.length > 1) ? excluded : -1);
  }

  /**
   * A connection joins a pool in use, whose other connections are {@code pool}: it starts from the
   * median of what they are expected to take now, as if it had answered that at {@code now}, so
   * that it neither draws every call as the fastest nor is left alone as the slowest; its own
   * answers then move the estimate as any connection's do. Until its first answer it is in doubt
   * ({@link ChannelLatency#untried}): it carries one call at a time while others have room, so that
   * a connection still being set up holds one waiting call, not a burst. A connection that joins an
   * empty pool keeps the estimate every fresh connection starts with.
   */
  public static void admit(Connection newcomer, Connection[] pool, long now) {
    int n = pool.length;
    if (n == 0) {
      newcomer.latency().joined(ChannelLatency.INITIAL_NANOS, now);
      return;
    }
    long[] expected = new long[n];
    for (int i = 0; i < n; i++) {
      expected[i] = pool[i].latency().expectedNanos(now, 0);
    }
    Arrays.sort(expected);
    long median = (n % 2 == 1) ? expected[n / 2] : (expected[n / 2 - 1] + expected[n / 2]) / 2;
    newcomer.latency().joined(median, now);
  }

  private int pick(Connection[] connections, long now, int excluded) {
    Rule rule = this.rule;
    int n = connections.length;
    for (int attempt = 1; ; attempt++) {
      long total = 0;
      long fastest = Long.MAX_VALUE;
      boolean unmeasured = false;
      int warm = 0;
      for (int i = 0; i < n; i++) {
        total += connections[i].inFlight();
        if (!connections[i].isCold()) {
          warm++;
        }
        long expected = expected(connections[i], now, rule);
        if (i != excluded && expected != CLOSED) {
          if (!connections[i].latency().measured()) {
            unmeasured = true;
          } else if (expected < fastest) {
            fastest = expected;
          }
        }
      }
      // A pool most of whose connections are not warm yet is starting: its connections being
      // primed share a burst. Later a connection being primed again (the server retired it) waits
      // for the frontend's set-up, and takes a call only when no warm one has room.
      boolean starting = 2 * warm < n;
      // Calls a hot connection sheds go only to connections expected within four times the
      // fastest.
      long tolerable = (fastest > Long.MAX_VALUE >> 2) ? Long.MAX_VALUE : fastest << 2;
      long least = Long.MAX_VALUE;
      long leastFull = Long.MAX_VALUE;
      for (int i = 0; i < n; i++) {
        if (i == excluded || hot(connections[i].inFlight(), n, total, rule)) {
          continue;
        }
        long expected = expected(connections[i], now, rule);
        if (expected != CLOSED
            && expected < least
            && expected <= tolerable
            && connections[i].latency().measured()) {
          least = expected;
        }
        long stretched = stretched(connections[i], now, rule);
        if (stretched != CLOSED && stretched < leastFull) {
          leastFull = stretched;
        }
      }
      // A connection full at its room, but about as fast as the fastest, sets the band: a slower
      // one with room is not let into it.
      boolean stretch = leastFull < least;
      if (stretch) {
        least = leastFull;
      }
      // The band: a quarter above the least, or twice the noise of one answer when that is more.
      long good =
          (least == Long.MAX_VALUE)
              ? tolerable
              : least
                  + Math.max(
                      least >> rule.bandShift(),
                      BAND_NOISES * connections[0].latency().noiseNanos());
      // Ties are broken at random, each of the equals alike (reservoir sampling: the k-th equal met
      // replaces the one kept with a chance of 1 in k; a connection with fewer calls starts anew).
      // The first equal met from a random start
      // would not do: a connection that cannot take the call passes its chances to the next one,
      // which a sequential reader's calls then favour two to one.
      ThreadLocalRandom random = ThreadLocalRandom.current();
      int best = -1;
      int bestInFlight = Integer.MAX_VALUE;
      int equals = 0;
      if (least != Long.MAX_VALUE || unmeasured) {
        // A connection that has not answered yet is taken as about as fast as the fastest: its
        // estimate is a guess, which must neither draw a fresh client's calls from the connections
        // that answered first nor keep them away.
        for (int i = 0; i < n; i++) {
          long expected = expected(connections[i], now, rule);
          int inFlight = connections[i].inFlight();
          if (i != excluded
              && expected != CLOSED
              && (expected <= good || !connections[i].latency().measured())
              && inFlight <= bestInFlight
              && !hot(inFlight, n, total, rule)) {
            if (inFlight < bestInFlight) {
              bestInFlight = inFlight;
              equals = 0;
            }
            if (random.nextInt(++equals) == 0) {
              best = i;
            }
          }
        }
      }
      if (best < 0 && stretch) {
        // Every connection about as fast as the fastest is full at its room: the least busy of them
        // goes past it, or one up and being primed takes the call.
        for (int i = 0; i < n; i++) {
          Connection connection = connections[i];
          int inFlight = connection.inFlight();
          if (i != excluded
              && inFlight <= bestInFlight
              && !hot(inFlight, n, total, rule)
              && (connection.isPriming()
                  ? starting && inFlight < rule.room()
                  : within(connection, now, good, rule))) {
            if (inFlight < bestInFlight) {
              bestInFlight = inFlight;
              equals = 0;
            }
            if (random.nextInt(++equals) == 0) {
              best = i;
            }
          }
        }
      }
      if (best < 0 && (fastest != Long.MAX_VALUE || unmeasured)) {
        // Every connection within four times the fastest is hot: the least busy of them, while it
        // has room, rather than one far slower; or one up and being primed, so that a burst on a
        // pool whose channels are still being primed is not taken by the channel warm first.
        for (int i = 0; i < n; i++) {
          Connection connection = connections[i];
          int inFlight = connection.inFlight();
          if (i != excluded
              && inFlight <= bestInFlight
              && shares(connection, now, tolerable, rule, starting)) {
            if (inFlight < bestInFlight) {
              bestInFlight = inFlight;
              equals = 0;
            }
            if (random.nextInt(++equals) == 0) {
              best = i;
            }
          }
        }
      }
      if (best < 0) {
        long bestRank = Long.MAX_VALUE;
        for (int i = 0; i < n; i++) {
          int inFlight = connections[i].inFlight();
          long rank;
          if (inFlight > 0 && connections[i].latency().suspect()) {
            rank = FAILED_RANK + inFlight;
          } else if (connections[i].isCold() && (!connections[i].isPriming() || !starting)) {
            // Not connected, or being primed again in a pool most of whose connections are warm
            // (its priming waits for the frontend's set-up): after every other connection below
            // its room, before one past it. The room is the server's stream limit, or the calls
            // past which a dynamic pool adds a channel.
            rank = rule.room() - 1 + inFlight;
          } else {
            rank = inFlight;
          }
          if (i != excluded
              && (rank < bestRank || (rank == bestRank && random.nextInt(++equals) == 0))) {
            if (rank < bestRank) {
              equals = 1;
            }
            best = i;
            bestRank = rank;
            bestInFlight = inFlight;
          }
        }
      }
      if (connections[best].tryCountCall(bestInFlight, now)) {
        return best;
      }
      if (attempt == RESERVE_ATTEMPTS) {
        connections[best].countCall(now);
        return best;
      }
    }
  }
}
