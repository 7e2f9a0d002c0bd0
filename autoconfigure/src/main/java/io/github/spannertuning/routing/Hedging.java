package io.github.spannertuning.routing;

import io.github.spannertuning.sql.StatementNormalizer;
import io.github.spannertuning.sql.StatementNormalizer.Normalized;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

/**
 * One client's hedging: the delay each shape of read waits ({@link HedgeDelay}), the budget of
 * hedges ({@link HedgeBudget}), and what became of the hedges sent. What the client's reads ask of
 * it, and what the meters and the endpoint read.
 */
public final class Hedging {

  /** How many of the busiest shapes the endpoint and the meters show. */
  public static final int SHAPES_SHOWN = 5;

  private final HedgeDelay delay;

  private final HedgeBudget budget;

  private final LongAdder won = new LongAdder();

  private final LongAdder losersCancelled = new LongAdder();

  /** A delay every read is hedged after, or {@link HedgeDelay#NONE} to learn it; for tests. */
  private final long fixedDelayNanos;

  /**
   * @param maxExtra the extra calls hedging may add, as a share of hedgeable reads
   * @param burst the hedges the budget holds at most
   * @param quantile the percentile of a shape's time to first response a read waits for
   * @param floorNanos the least delay
   * @param fixedDelayNanos a delay every read is hedged after, learned ones aside; {@link
   *     HedgeDelay#NONE} to learn
   * @param nowNanos the time now
   */
  public Hedging(
      double maxExtra,
      int burst,
      double quantile,
      long floorNanos,
      long fixedDelayNanos,
      long nowNanos) {
    this.delay = new HedgeDelay(quantile, floorNanos, nowNanos);
    this.budget = new HedgeBudget(maxExtra, burst, nowNanos);
    this.fixedDelayNanos = fixedDelayNanos;
  }

  /**
   * A query's shape: its statement. On every hedgeable query: a lookup that allocates nothing (the
   * statement's hash is cached by the string); what the endpoint shows of the statement is worked
   * out when it is read.
   */
  public HedgeDelay.Shape queryShape(String sql, long nowNanos) {
    return this.delay.shape((long) sql.hashCode() << 1, sql, nowNanos);
  }

  /** A read's shape: its table, index and columns. Allocates nothing unless it is placed. */
  public HedgeDelay.Shape readShape(
      String table, String index, List<String> columns, long nowNanos) {
    int hash = table.hashCode() * 31 + index.hashCode();
    for (int i = 0; i < columns.size(); i++) {
      hash = hash * 31 + columns.get(i).hashCode();
    }
    return this.delay.shape(((long) hash << 1) | 1, table, index, columns, nowNanos);
  }

  /** How long a read of this shape waits before its hedge; {@link HedgeDelay#NONE} for none. */
  public long delayNanos(HedgeDelay.Shape shape) {
    return (this.fixedDelayNanos != HedgeDelay.NONE)
        ? this.fixedDelayNanos
        : this.delay.delayNanos(shape);
  }

  /** A hedgeable read starts: it earns its share of a hedge. */
  public void onRead() {
    this.budget.onRead();
  }

  /** The read answered after {@code latencyNanos}, or was left for its hedge then. */
  public void answered(HedgeDelay.Shape shape, long latencyNanos, long nowNanos) {
    this.delay.record(shape, latencyNanos, nowNanos);
  }

  /** Takes a token for a hedge due now; counted as sent, or as denied. */
  public boolean tryAcquire(long nowNanos) {
    return this.budget.tryAcquire(nowNanos);
  }

  /** The token taken was not spent: the read answered before its hedge was made. */
  public void giveBack() {
    this.budget.giveBack();
  }

  public void hedgeWon() {
    this.won.increment();
  }

  public void loserCancelled() {
    this.losersCancelled.increment();
  }

  /** Hedges sent: second attempts of reads that had not answered within their delay. */
  public long sent() {
    return this.budget.sent();
  }

  /** Hedges that answered before the read's first attempt, whose stream the application read. */
  public long won() {
    return this.won.sum();
  }

  /** Hedges that were due but refused, because the budget of extra calls was spent. */
  public long denied() {
    return this.budget.denied();
  }

  /**
   * Losing attempts cancelled, within their connection's budget of resets, rather than read to
   * their end: the resets hedging sent.
   */
  public long losersCancelled() {
    return this.losersCancelled.sum();
  }

  /** The extra calls hedging may add, as a share of hedgeable reads. */
  public double maxExtra() {
    return this.budget.maxExtra();
  }

  /** The hedges the budget holds now: how many could be sent at once. */
  public double budgetLeft() {
    return this.budget.available(System.nanoTime());
  }

  /** The extra calls hedging sent per hedgeable read over about the last minute. */
  public double extraRate() {
    return this.budget.extraRate(System.nanoTime());
  }

  /**
   * The delay learned over every hedgeable read, which a shape uses until it has enough samples of
   * its own; empty until enough reads were timed.
   */
  public Optional<Duration> delay() {
    return duration(this.delay.fallbackDelayNanos());
  }

  /**
   * The busiest shapes of read and their own delays, busiest first. Each query's statement is
   * normalized and fingerprinted here, when the endpoint asks, never on a call's path.
   */
  public List<ShapeFigures> busiestShapes() {
    return this.delay.busiest(SHAPES_SHOWN).stream().map(Hedging::figures).toList();
  }

  /** The own delay of the busiest shape; empty without one, or while it has too few samples. */
  public Optional<Duration> busiestDelay() {
    return this.delay.busiest(1).stream()
        .findFirst()
        .flatMap((shape) -> duration(shape.delayNanos()));
  }

  private static ShapeFigures figures(HedgeDelay.Shape shape) {
    Optional<Duration> delay = duration(shape.delayNanos());
    if (shape.isRead()) {
      String via = shape.index().isEmpty() ? "" : " via " + shape.index();
      String label = "read " + shape.text() + via + "(" + String.join(", ", shape.columns()) + ")";
      return new ShapeFigures(label, Optional.empty(), delay, shape.samples());
    }
    Normalized statement = StatementNormalizer.normalize(shape.text());
    return new ShapeFigures(
        "query " + statement.fingerprint(), statement.text(), delay, shape.samples());
  }

  private static Optional<Duration> duration(long nanos) {
    return (nanos == HedgeDelay.NONE) ? Optional.empty() : Optional.of(Duration.ofNanos(nanos));
  }

  /**
   * One shape of read and its hedge delay.
   *
   * @param shape what names it without a value of the application's: {@code query} and the
   *     fingerprint of its normalized statement ({@code query 3f2a9c0d1e4b5a67}), or {@code read},
   *     the table, the index if one, and the columns ({@code read Singers via
   *     SingersByName(SingerId, FirstName)})
   * @param statement a query's statement with every literal replaced by {@code ?} and no comment;
   *     empty for a read, and for a statement that could not be read unambiguously
   * @param delay its own learned delay; empty while it has too few samples and uses the shared one
   * @param samples the times to first response in its recent windows
   */
  public record ShapeFigures(
      String shape, Optional<String> statement, Optional<Duration> delay, int samples) {}
}
