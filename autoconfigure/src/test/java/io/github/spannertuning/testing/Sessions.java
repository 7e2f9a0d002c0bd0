package io.github.spannertuning.testing;

import com.google.protobuf.ByteString;
import com.google.protobuf.Timestamp;
import com.google.rpc.ResourceInfo;
import com.google.spanner.v1.Session;
import com.google.spanner.v1.Transaction;
import com.google.spanner.v1.TransactionOptions;
import com.google.spanner.v1.TransactionSelector;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The sessions of a {@link MockSpannerService} and the transactions begun on them. Sessions are
 * kept until deleted, pooled and multiplexed alike; a call naming an unknown session fails as
 * Spanner fails it. Transactions are ids and nothing more: no locks, no isolation, no data.
 */
final class Sessions {

  private final Map<String, Session> sessions = new ConcurrentHashMap<>();

  private final AtomicLong transactions = new AtomicLong();

  /** A new session of the database, with the template's settings (multiplexed, labels). */
  Session create(String database, Session template) {
    Timestamp now = now();
    Session session =
        template.toBuilder()
            .setName(database + "/sessions/" + UUID.randomUUID())
            .setCreateTime(now)
            .setApproximateLastUseTime(now)
            .build();
    this.sessions.put(session.getName(), session);
    return session;
  }

  /**
   * The named session.
   *
   * @throws StatusRuntimeException NOT_FOUND with the session as its resource, which the client
   *     recognizes as a session it must replace
   */
  Session get(String name) {
    Session session = this.sessions.get(name);
    if (session == null) {
      ResourceInfo resource =
          ResourceInfo.newBuilder()
              .setResourceType("type.googleapis.com/google.spanner.v1.Session")
              .setResourceName(name)
              .build();
      Metadata trailers = new Metadata();
      trailers.put(ProtoUtils.keyForProto(resource), resource);
      throw Status.NOT_FOUND
          .withDescription("Session not found: " + name)
          .asRuntimeException(trailers);
    }
    return session;
  }

  void delete(String name) {
    this.sessions.remove(name);
  }

  /** A new transaction; a read-only one also has its read timestamp. */
  Transaction begin(Session session, TransactionOptions options) {
    Transaction.Builder transaction =
        Transaction.newBuilder()
            .setId(
                ByteString.copyFromUtf8(
                    session.getName() + "/transactions/" + this.transactions.incrementAndGet()));
    if (options.hasReadOnly()) {
      transaction.setReadTimestamp(now());
    }
    return transaction.build();
  }

  /**
   * The transaction a query's or read's result names in its metadata: the one begun by the call
   * (inline begin), a read-only single-use read's timestamp, or none for a transaction the client
   * already has.
   */
  Transaction ofResult(Session session, TransactionSelector selector) {
    if (selector.hasBegin()) {
      return begin(session, selector.getBegin());
    }
    if (selector.hasSingleUse() && selector.getSingleUse().hasReadOnly()) {
      return Transaction.newBuilder().setReadTimestamp(now()).build();
    }
    return null;
  }

  static Timestamp now() {
    Instant now = Instant.now();
    return Timestamp.newBuilder().setSeconds(now.getEpochSecond()).setNanos(now.getNano()).build();
  }
}
