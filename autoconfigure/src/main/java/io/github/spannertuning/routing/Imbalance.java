package io.github.spannertuning.routing;

import java.util.Iterator;
import java.util.function.ToLongFunction;

/**
 * How unevenly a pool's calls fall on its connections: the busiest connection's calls over the mean
 * per connection of the pool, over a window that moves on only when {@link #roll} is called, so
 * that every reader in between sees the same window. The figure routing is judged by, kept apart
 * from the channels it counts so that it is tested with fed counts.
 */
public final class Imbalance {

  private static final long[] NONE = new long[0];

  /** Calls per connection, by index, where the window starts. */
  private volatile long[] windowStart = NONE;

  /** Calls per connection at the last roll, where the next window will start; guarded by this. */
  private long[] windowNext = NONE;

  /**
   * The figure now: 1.0 is even, {@code poolSize} when every call went to one connection; NaN when
   * no call was made in the window. Takes no lock and allocates nothing but the iterator.
   *
   * @param connections the connections that have carried a call, by index, the iterator taken
   *     before this call: a {@link #reset} clears the start before the connections, so a list
   *     already cleared is never read against the start of the connections it had
   * @param calls the calls a connection has carried since it was first used
   * @param poolSize the connections the pool was built with; the mean is taken over at least this
   *     many, idle ones included, and over all that were seen when the pool grew past it
   */
  public <T> double of(Iterator<T> connections, ToLongFunction<T> calls, int poolSize) {
    long[] start = this.windowStart;
    long max = 0;
    long sum = 0;
    int seen = 0;
    while (connections.hasNext()) {
      long delta =
          calls.applyAsLong(connections.next()) - ((seen < start.length) ? start[seen] : 0);
      max = Math.max(max, delta);
      sum += delta;
      seen++;
    }
    int pool = Math.max(poolSize, seen);
    return (sum == 0) ? Double.NaN : max / ((double) sum / pool);
  }

  /**
   * The window moves on: the figure now counts from the previous roll, so rolled every period it
   * covers the last one to two periods.
   *
   * @param calls the calls per connection now, by index
   */
  public synchronized void roll(long[] calls) {
    this.windowStart = this.windowNext;
    this.windowNext = calls;
  }

  /** Forgets the window, for a pool whose connections are gone. */
  public synchronized void reset() {
    this.windowStart = NONE;
    this.windowNext = NONE;
  }
}
