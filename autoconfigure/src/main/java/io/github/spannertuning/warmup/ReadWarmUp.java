package io.github.spannertuning.warmup;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.grpc.Context;
import io.grpc.Deadline;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The warm-up of the read path: single-use streaming {@code SELECT 1} queries through the client's
 * own {@link DatabaseClient}, each read to its end, from two threads per channel (at most {@link
 * #MAX_READERS}) so that routing spreads them, until {@link ReadBudget} says stop. They run the
 * same classes and methods as the application's single-use reads (the client's result set and
 * stream, gax, gRPC, Netty, protobuf, spanner-tuning's routing and stream guard), so that a new
 * JVM's first burst of reads does not load and interpret them all at once. They read no table.
 *
 * <p>Every read runs in a gRPC {@link Context} that carries {@link #READING} and the warm-up's
 * deadline: the client's calls are made in it, so each ends by the deadline (a stalled server costs
 * no more than the timeout), and what counts the application's reads (the routed-read count, an
 * experiment's arms) leaves them out. The context is cancelled when the warm-up returns: no stream
 * of it stays open.
 */
public final class ReadWarmUp {

  private static final Logger logger = Logger.getLogger(ReadWarmUp.class.getName());

  /** The query: the cheapest Spanner answers, touching no table, as the priming call is. */
  public static final Statement QUERY = Statement.of("SELECT 1");

  /** Marks the context of the warm-up's reads. */
  private static final Context.Key<Boolean> READING = Context.key("spanner-tuning.warm-up.read");

  /** Readers at most, whatever the pool's size. */
  public static final int MAX_READERS = 16;

  private ReadWarmUp() {}

  /** Whether the current call is one of the warm-up's reads: a context look-up, no allocation. */
  public static boolean isWarmUpRead() {
    return READING.get() != null;
  }

  /**
   * Sends up to {@code count} reads through {@code client} from {@code readers} threads, within
   * {@code timeout}; returns when they have ended or the timeout has passed, and never throws for a
   * read that failed.
   */
  public static Result run(DatabaseClient client, int count, int readers, Duration timeout)
      throws InterruptedException {
    long start = System.nanoTime();
    ReadBudget budget = new ReadBudget(count, start + timeout.toNanos());
    if (count == 0 || timeout.isZero() || timeout.isNegative()) {
      return new Result(budget, Duration.ZERO);
    }
    ScheduledExecutorService deadlines =
        Executors.newSingleThreadScheduledExecutor(
            (task) -> {
              Thread thread = new Thread(task, "spanner-tuning-warm-up-deadline");
              thread.setDaemon(true);
              return thread;
            });
    Context.CancellableContext context =
        Context.current()
            .withValue(READING, Boolean.TRUE)
            .withDeadline(Deadline.after(timeout.toNanos(), TimeUnit.NANOSECONDS), deadlines);
    List<Thread> threads = new ArrayList<>();
    try {
      int n = Math.max(1, Math.min(readers, count));
      for (int i = 0; i < n; i++) {
        Thread thread =
            new Thread(context.wrap(() -> read(client, budget)), "spanner-tuning-warm-up-" + i);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
      }
      for (Thread thread : threads) {
        long left = budget.remainingNanos(System.nanoTime());
        TimeUnit.NANOSECONDS.timedJoin(thread, Math.max(1, left));
      }
    } finally {
      // Ends any read still open: a read past the deadline, or one left by an interrupt.
      context.cancel(null);
      deadlines.shutdownNow();
    }
    return new Result(budget, Duration.ofNanos(System.nanoTime() - start));
  }

  private static void read(DatabaseClient client, ReadBudget budget) {
    while (budget.tryStart(System.nanoTime())) {
      try (ResultSet rows = client.singleUse().executeQuery(QUERY)) {
        while (rows.next()) {
          // Read to the end, as an application reads a result.
        }
        budget.onAnswered();
      } catch (RuntimeException ex) {
        budget.onFailed();
        logger.log(Level.FINE, "A warm-up read failed; its reader stops", ex);
        return;
      }
    }
  }

  /**
   * What the warm-up's reads did.
   *
   * @param sent reads started
   * @param answered reads read to their end
   * @param failed reads that failed or ran past the deadline
   * @param took from the first read's start until the last ended or the timeout passed
   */
  public record Result(int sent, int answered, int failed, Duration took) {

    Result(ReadBudget budget, Duration took) {
      this(budget.startedCount(), budget.answeredCount(), budget.failedCount(), took);
    }

    /** No read was sent: read warm-up off, or no time left. */
    public static final Result NONE = new Result(0, 0, 0, Duration.ZERO);
  }
}
