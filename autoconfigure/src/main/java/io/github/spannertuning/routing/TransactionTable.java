package io.github.spannertuning.routing;

import com.google.common.collect.MapMaker;
import java.util.concurrent.ConcurrentMap;

/**
 * The connection each routed transaction's first call took, so that the transaction's later calls
 * follow it, and which transactions are read-only, so that their reads may be hedged.
 *
 * <p>A transaction is named by the object the client gives every call of it (see the client
 * package's {@code PoolRouting#transactionOf}). The transaction holds it for as long as the
 * transaction lives, and nothing else does, so it is this table's key, held weakly and compared by
 * identity: an entry goes with its transaction. A read-only transaction has no end call; its entry
 * still goes once the application drops it, and the table holds no more entries than transactions
 * the application holds.
 *
 * <p>Looking a transaction up takes no lock and allocates nothing; its first call adds one entry.
 */
public final class TransactionTable {

  private final ConcurrentMap<Object, Connection> byTransaction =
      new MapMaker().weakKeys().makeMap();

  /** The read-only transactions begun while hedging was on, whose reads may be hedged. */
  private final ConcurrentMap<Object, Boolean> readOnly = new MapMaker().weakKeys().makeMap();

  /** The connection the transaction's first routed call took, or {@code null}. */
  public Connection connectionOf(Object transaction) {
    return this.byTransaction.get(transaction);
  }

  /**
   * Records the connection of a transaction's first routed call; a transaction that has one keeps
   * it.
   */
  public void bind(Object transaction, Connection connection) {
    this.byTransaction.putIfAbsent(transaction, connection);
  }

  /** Records that a transaction is read-only: its reads are safe to send twice. */
  public void markReadOnly(Object transaction) {
    this.readOnly.put(transaction, Boolean.TRUE);
  }

  /** Whether the transaction was recorded as read-only; {@code false} for {@code null}. */
  public boolean isReadOnly(Object transaction) {
    return transaction != null && this.readOnly.containsKey(transaction);
  }

  /**
   * Entries held, some perhaps of transactions already collected and not yet purged (the table
   * purges them as it is written to).
   */
  public int size() {
    return this.byTransaction.size();
  }
}
