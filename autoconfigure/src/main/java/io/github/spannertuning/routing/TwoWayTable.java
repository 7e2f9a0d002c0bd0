package io.github.spannertuning.routing;

import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A bounded table of entries by a long key, two ways per set, as a CPU cache keeps lines: a new key
 * takes an empty way, or one whose entry has not been used for the table's idle time; otherwise it
 * finds no way, and the caller serves it some other way. So a stream of one-off keys cannot churn
 * the table, and it holds at most its size. Finding a key is two array reads and allocates nothing;
 * placing one allocates its entry. {@link HedgeDelay}'s shapes and {@link StatementCosts}' kinds
 * live in one each.
 */
final class TwoWayTable<E extends TwoWayTable.Entry> {

  private final AtomicReferenceArray<E> ways;

  private final long idleNanos;

  /**
   * @param size the entries it holds at most, a power of two
   * @param idleNanos how long an entry goes unused before a new key may take its way
   */
  TwoWayTable(int size, long idleNanos) {
    this.ways = new AtomicReferenceArray<>(size);
    this.idleNanos = idleNanos;
  }

  /** Makes the entry of a key placed now. */
  @FunctionalInterface
  interface Factory<E> {
    E create(long key, long nowNanos);
  }

  /** The entry of {@code key}, used now; {@code null} when it is not in the table. */
  E get(long key, long nowNanos) {
    int set = set(key);
    E first = this.ways.get(set);
    if (first != null && first.key == key) {
      first.used(nowNanos, this.idleNanos);
      return first;
    }
    E second = this.ways.get(set + 1);
    if (second != null && second.key == key) {
      second.used(nowNanos, this.idleNanos);
      return second;
    }
    return null;
  }

  /**
   * The entry of {@code key}, found, or placed by {@code create} in a free way; {@code null} when
   * no way is free. A factory that captures nothing ({@code Cost::new}) allocates nothing on a hit.
   */
  E find(long key, long nowNanos, Factory<E> create) {
    E found = get(key, nowNanos);
    if (found != null) {
      return found;
    }
    int set = set(key);
    E first = this.ways.get(set);
    E second = this.ways.get(set + 1);
    int way;
    E resident;
    if (first == null || (second != null && first.lastUsedNanos <= second.lastUsedNanos)) {
      way = set;
      resident = first;
    } else {
      way = set + 1;
      resident = second;
    }
    if (resident != null && nowNanos - resident.lastUsedNanos < this.idleNanos) {
      return null;
    }
    E placed = create.create(key, nowNanos);
    return this.ways.compareAndSet(way, resident, placed) ? placed : null;
  }

  /** The entry in way {@code i}, or {@code null}: for reports, never on a call's path. */
  E way(int i) {
    return this.ways.get(i);
  }

  int size() {
    return this.ways.length();
  }

  /** The first way of the key's set. */
  private int set(long key) {
    return (int) (mix(key) & (this.ways.length() - 1)) & ~1;
  }

  /** Spreads a key's bits over the table's index. */
  private static long mix(long key) {
    long h = key * 0x9E3779B97F4A7C15L;
    return h ^ (h >>> 32);
  }

  /** What the table keeps of an entry: its key and when it was last used. */
  abstract static class Entry {

    final long key;

    volatile long lastUsedNanos;

    Entry(long key, long nowNanos) {
      this.key = key;
      this.lastUsedNanos = nowNanos;
    }

    /** The key the caller gave it. */
    public long key() {
      return this.key;
    }

    /**
     * Used now: written only when it moved by a sixteenth of the idle time, as a busy entry is used
     * on every call.
     */
    void used(long nowNanos, long idleNanos) {
      if (nowNanos - this.lastUsedNanos > idleNanos >> 4) {
        this.lastUsedNanos = nowNanos;
      }
    }
  }
}
