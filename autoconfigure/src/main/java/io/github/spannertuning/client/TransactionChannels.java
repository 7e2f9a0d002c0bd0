package io.github.spannertuning.client;

import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.common.collect.MapMaker;
import io.github.spannertuning.client.ChannelLoad.ChannelStats;
import java.util.Map;
import java.util.concurrent.ConcurrentMap;

/**
 * The channel each routed transaction's first call took, so that the transaction's later calls
 * follow it.
 *
 * <p>The client gives every call of one transaction the same object in its options: a channel hint
 * ({@code Long}) up to google-cloud-spanner 6.113, a grpc-gcp {@code ChannelAffinityRef} from 6.119
 * while grpc-gcp is on. The transaction holds it for as long as the transaction lives, and nothing
 * else does, so it is this table's key, held weakly and compared by identity: an entry goes with
 * its transaction. A read-only transaction has no end call; its entry still goes once the
 * application drops it, and the table holds no more entries than transactions the application
 * holds.
 *
 * <p>Up to 6.113, a transaction on a pooled (not multiplexed) session carries its session's hint
 * instead, one of a fixed set ({@code 0} to {@value #SESSION_HINTS}, shared by every session with
 * that hint and never collected): such a call names no transaction and is left to the client, which
 * keeps the session on its channel. A transaction's own hint is a random {@code long} from {@code
 * 0} to {@code Long.MAX_VALUE}, below {@value #SESSION_HINTS} about once in 10^16.
 *
 * <p>Looking a transaction up takes no lock and allocates nothing; its first call adds one entry.
 */
final class TransactionChannels {

  /** The session hints of clients up to 6.113 run from 0 to this, exclusive. */
  static final long SESSION_HINTS = 256;

  /** {@code CHANNEL_ID_AFFINITY}, or {@code null} in clients before 6.119, which lack it. */
  private static final Option CHANNEL_REFERENCE = channelReferenceOption();

  private final ConcurrentMap<Object, ChannelStats> byTransaction =
      new MapMaker().weakKeys().makeMap();

  /** The read-only transactions begun while hedging was on, whose reads may be hedged. */
  private final ConcurrentMap<Object, Boolean> readOnly = new MapMaker().weakKeys().makeMap();

  /** The object that names the transaction a call belongs to, or {@code null} if none does. */
  static Object transactionOf(Map<Option, ?> options) {
    if (options == null) {
      return null;
    }
    Object reference = (CHANNEL_REFERENCE != null) ? options.get(CHANNEL_REFERENCE) : null;
    if (reference != null) {
      return reference;
    }
    Object hint = options.get(Option.CHANNEL_HINT);
    return (hint instanceof Long value && value >= SESSION_HINTS) ? hint : null;
  }

  /** The channel the transaction's first routed call took, or {@code null}. */
  ChannelStats channelOf(Object transaction) {
    return this.byTransaction.get(transaction);
  }

  /**
   * Records the channel of a transaction's first routed call; a transaction that has one keeps it.
   */
  void bind(Object transaction, ChannelStats channel) {
    this.byTransaction.putIfAbsent(transaction, channel);
  }

  /** Records that a transaction is read-only: its reads are safe to send twice. */
  void markReadOnly(Object transaction) {
    this.readOnly.put(transaction, Boolean.TRUE);
  }

  /** Whether the transaction was recorded as read-only; {@code false} for {@code null}. */
  boolean isReadOnly(Object transaction) {
    return transaction != null && this.readOnly.containsKey(transaction);
  }

  /**
   * Entries held, some perhaps of transactions already collected and not yet purged (the table
   * purges them as it is written to).
   */
  int size() {
    return this.byTransaction.size();
  }

  private static Option channelReferenceOption() {
    for (Option option : Option.values()) {
      // Not referenced by name: the constant is missing in clients before 6.119.
      if (option.name().equals("CHANNEL_ID_AFFINITY")) {
        return option;
      }
    }
    return null;
  }
}
