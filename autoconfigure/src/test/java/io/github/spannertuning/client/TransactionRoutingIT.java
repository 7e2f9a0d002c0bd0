package io.github.spannertuning.client;

import static io.github.spannertuning.client.RoutingSubject.CHANNELS;
import static io.github.spannertuning.client.RoutingSubject.UPDATE;
import static io.github.spannertuning.client.RoutingSubject.VERSION;
import static io.github.spannertuning.client.RoutingSubject.drain;
import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.Options;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.TimestampBound;
import com.google.cloud.spring.data.spanner.core.SpannerQueryOptions;
import com.google.cloud.spring.data.spanner.core.SpannerReadOptions;
import com.google.cloud.spring.data.spanner.core.SpannerTemplate;
import com.google.spanner.v1.BeginTransactionRequest;
import io.github.spannertuning.routing.TransactionTable;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Every transaction is routed: its first call (BeginTransaction, or the query with an inline begin)
 * picks a channel by expected latency, and every later call follows it. Where each transaction ran
 * is counted on the server (the project's {@link
 * io.github.spannertuning.testing.MockSpannerServer}: 2 to 5 ms per call, {@code last} on the final
 * message, trailers 1 ms later, streams served in parallel); one of its 8 connections answers every
 * call 100 ms later, which is simulated. Stock's figures are printed beside tuned's.
 */
class TransactionRoutingIT {

  /**
   * Transactions per run: half read-only (two queries; half of those through Spring Data Spanner),
   * half read/write (a query and an update).
   */
  private static final int TRANSACTIONS = 1600;

  static final int THREADS = 16;

  /**
   * Sixteen threads run read-only transactions (on the client, and through Spring Data Spanner's
   * template) and read/write transactions while one connection answers every call 200 ms later than
   * the others. The slowed connection's share of the transactions, over its even share, is small
   * for the tuned client on every line; stock sends it its even share or more (6.113's sticky keys
   * pile onto it), and no transaction's calls are split between connections.
   */
  @Test
  void transactionsAvoidAConnectionAnsweringLater() throws Exception {
    Spread stock = RoutingSubject.measure(false, TransactionRoutingIT::slowedConnection);
    Spread tuned = RoutingSubject.measure(true, TransactionRoutingIT::slowedConnection);
    System.out.printf(
        "[transaction routing %s] connection +200 ms, %d threads: its share of its even share of"
            + " the transactions: stock %s | tuned %s%n",
        VERSION, THREADS, stock, tuned);
    assertThat(tuned.transactions())
        .as("tuned: transactions the server saw")
        .isEqualTo(TRANSACTIONS);
    assertThat(tuned.split()).as("tuned: transactions with calls on two connections").isZero();
    // What it gets tuned: the few transactions that begin there before its first answer comes
    // back, and its probes. Stock 6.119's least-busy pick leaves it a fifth to a half of its even
    // share (its calls in flight pile up), stock 6.113's sticky keys about its even share or more.
    assertThat(tuned.slowedShare())
        .as("tuned: the slowed connection's share of its even share (stock %s)", stock)
        .isLessThanOrEqualTo(0.12);
  }

  /**
   * A read-only transaction has no call that ends it: what the tuned client keeps per transaction
   * is held weakly. After many rounds of transactions and a collection, it holds about as many
   * entries as one short round adds, not one per transaction run.
   */
  @Test
  void transactionStateStaysBounded() throws Exception {
    RoutingSubject.measure(
        true,
        (subject) -> {
          TransactionTable held =
              ((TunedSpannerRpc) subject.spanner.getOptions().getRpc()).transactions();
          List<Integer> sizes = new ArrayList<>();
          for (int round = 0; round < 5; round++) {
            transactions(subject, 1000, "round" + round);
            sizes.add(held.size());
          }
          System.out.printf(
              "[transaction routing %s] entries held after each round of 1000 transactions: %s%n",
              VERSION, sizes);
          await()
              .atMost(Duration.ofSeconds(20))
              .pollInterval(Duration.ofMillis(200))
              .untilAsserted(
                  () -> {
                    System.gc();
                    // The table purges collected keys as it is written to.
                    transactions(subject, 32, "after");
                    assertThat(held.size())
                        .as(
                            "entries held after 5000 transactions and a collection (rounds %s)",
                            sizes)
                        .isLessThanOrEqualTo(100);
                  });
          return null;
        });
  }

  private static Spread slowedConnection(RoutingSubject subject) {
    // Every connection opened and estimated: single-use reads from 8 threads for a second.
    Workers.concurrently(8, 1, (thread, i) -> readFor(subject, Duration.ofSeconds(1)));
    SocketAddress slowed = subject.server.busiestConnection();
    subject.server.slowDown(slowed, 200);
    subject.server.reset();
    transactions(subject, TRANSACTIONS, "t");
    return Spread.of(subject.server.calls(), slowed);
  }

  private static void readFor(RoutingSubject subject, Duration time) {
    long end = System.nanoTime() + time.toNanos();
    while (System.nanoTime() < end) {
      subject.pointSelect();
    }
  }

  /** Half read-only transactions of two queries, half read/write ones of a query and an update. */
  private static void transactions(RoutingSubject subject, int count, String prefix) {
    Workers.concurrentTasks(THREADS, count, (index) -> transaction(subject, index, prefix));
  }

  /** As {@link #transactions}, returning how many ran. */
  static int transactionsFor(RoutingSubject subject, int count, String prefix) {
    transactions(subject, count, prefix);
    return count;
  }

  /**
   * As {@link #transactions(RoutingSubject, int, String)}, on {@link #THREADS} threads for {@code
   * time}; returns how many ran.
   */
  static int transactionsFor(RoutingSubject subject, Duration time, String prefix) {
    long end = System.nanoTime() + time.toNanos();
    AtomicInteger next = new AtomicInteger();
    Workers.concurrently(
        THREADS,
        1,
        (thread, iteration) -> {
          while (System.nanoTime() < end) {
            transaction(subject, next.getAndIncrement(), prefix);
          }
        });
    return next.get();
  }

  /**
   * Transaction {@code index}: read-only of two queries (every other one through Spring Data
   * Spanner's template), or read/write of a query and an update.
   */
  private static void transaction(RoutingSubject subject, int index, String prefix) {
    if (index % 4 == 0) {
      readOnly(subject, prefix + "-ro-" + index, index);
    } else if (index % 4 == 2) {
      readOnlyTemplate(subject, prefix + "-ro-" + index, index);
    } else {
      subject
          .client
          .readWriteTransaction(Options.tag(prefix + "-rw-" + index))
          .run(
              (tx) -> {
                try (ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT))) {
                  drain(rs);
                }
                return tx.executeUpdate(Statement.of(UPDATE));
              });
    }
  }

  /** A read-only transaction whose BeginTransaction is told apart by its staleness. */
  private static void readOnly(RoutingSubject subject, String tag, int index) {
    try (ReadOnlyTransaction tx =
        subject.client.readOnlyTransaction(
            TimestampBound.ofExactStaleness(100 + index, TimeUnit.SECONDS))) {
      for (int j = 0; j < 2; j++) {
        try (ResultSet rs = tx.executeQuery(Statement.of(POINT_SELECT), Options.tag(tag))) {
          drain(rs);
        }
      }
    }
  }

  /**
   * A read-only transaction of two queries through Spring Data Spanner's template, as a {@code
   * Transactional(readOnly = true)} method runs its repository queries: one read-only transaction
   * of the client, its queries made through the template.
   */
  private static void readOnlyTemplate(RoutingSubject subject, String tag, int index) {
    SpannerTemplate template = SpannerTemplates.of(subject.client);
    int rows =
        template.performReadOnlyTransaction(
            (tx) -> {
              int read = 0;
              for (int j = 0; j < 2; j++) {
                read +=
                    tx.query(
                            (row) -> row.getString(1),
                            Statement.of(POINT_SELECT),
                            new SpannerQueryOptions().addQueryOption(Options.tag(tag)))
                        .size();
              }
              return read;
            },
            new SpannerReadOptions()
                .setTimestampBound(TimestampBound.ofExactStaleness(100 + index, TimeUnit.SECONDS)));
    assertThat(rows).as("rows of two point selects").isEqualTo(2);
  }

  /** Where the transactions ran: how many, how many on the slowed connection, how many split. */
  record Spread(int transactions, int onSlowed, int split, int connections) {

    static Spread of(List<Call> calls, SocketAddress slowed) {
      return of(calls, slowed, CHANNELS);
    }

    /** Where the transactions ran, on a pool of {@code connections} connections. */
    static Spread of(List<Call> calls, SocketAddress slowed, int connections) {
      Map<String, Set<SocketAddress>> byTransaction = new HashMap<>();
      Map<String, String> readOnlyByStaleness = new HashMap<>();
      for (Call call : calls) {
        String tag = call.transactionTag().isEmpty() ? call.requestTag() : call.transactionTag();
        if (tag.contains("-ro-")) {
          readOnlyByStaleness.put(tag.substring(tag.lastIndexOf('-') + 1), tag);
        }
      }
      for (Call call : calls) {
        String transaction = transactionOf(call, readOnlyByStaleness);
        if (transaction != null) {
          byTransaction.computeIfAbsent(transaction, (t) -> new HashSet<>()).add(call.connection());
        }
      }
      int onSlowed = 0;
      int split = 0;
      for (Set<SocketAddress> ran : byTransaction.values()) {
        onSlowed += ran.contains(slowed) ? 1 : 0;
        split += ran.size() > 1 ? 1 : 0;
      }
      return new Spread(byTransaction.size(), onSlowed, split, connections);
    }

    private static String transactionOf(Call call, Map<String, String> readOnlyByStaleness) {
      if (call.request() instanceof BeginTransactionRequest begin) {
        if (begin.getOptions().hasReadOnly()) {
          long index = begin.getOptions().getReadOnly().getExactStaleness().getSeconds() - 100;
          return readOnlyByStaleness.get(Long.toString(index));
        }
        String tag = begin.getRequestOptions().getTransactionTag();
        return tag.isEmpty() ? null : tag;
      }
      String tag = call.transactionTag().isEmpty() ? call.requestTag() : call.transactionTag();
      return tag.isEmpty() ? null : tag;
    }

    double slowedShare() {
      return this.onSlowed / (this.transactions / (double) this.connections);
    }

    @Override
    public String toString() {
      return String.format(
          "%.2f (%d of %d, %d split)", slowedShare(), this.onSlowed, this.transactions, this.split);
    }
  }
}
