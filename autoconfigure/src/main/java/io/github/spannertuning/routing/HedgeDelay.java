package io.github.spannertuning.routing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * How long a read waits for its first response before it is hedged: a recent high percentile of the
 * time to first response of reads of the same shape (the same statement, or the same table, index
 * and columns), with a floor.
 *
 * <p>Tail at Scale defers a hedge until a request has taken longer than the 95th percentile "for
 * this class of requests"; Zanzibar keeps a delay estimator per kind of call at a recent Nth
 * percentile and warns that hedging pays only when requests of a kind cost about the same. So the
 * delay is learned per shape: one statement's expensive scans do not set the delay of another's
 * point reads. The percentile is tied to the budget of extra calls: at {@code 1 - maxExtra / 2}, a
 * healthy server sees hedges for half the budget (the calls past the percentile), and the other
 * half absorbs a spell in which more calls are slow before the budget refuses hedges. With the
 * default budget of 5 % that is the 97.5th percentile.
 *
 * <p>Shapes live in a bounded table ({@link TwoWayTable}), two ways per set: a new shape takes an
 * empty way, or one whose shape has not been used for {@link #IDLE_NANOS}; otherwise it is served
 * by the shared estimate over every read, the fallback that also serves a shape until it has {@link
 * #MIN_SAMPLES} of its own. So a stream of one-off statements cannot churn the table, and the table
 * holds at most {@link #SHAPES} shapes. Looking a shape up is two array reads and allocates
 * nothing; a new shape allocates its histogram, and a read's a copy of its columns.
 */
public final class HedgeDelay {

  /** No delay is known yet: the read is not hedged. */
  public static final long NONE = -1;

  /** Shapes the table holds at most. */
  static final int SHAPES = 256;

  /** Samples a shape needs before its own percentile is used. */
  static final int MIN_SAMPLES = 100;

  /** How long a shape goes unused before a new one may take its place. */
  static final long IDLE_NANOS = 1_000_000_000L;

  /** The delay is computed again from the histogram every this many samples. */
  private static final int RECOMPUTE_EVERY = 32;

  private final double quantile;

  private final long floorNanos;

  private final TwoWayTable<Shape> table = new TwoWayTable<>(SHAPES, IDLE_NANOS);

  private final Shape fallback;

  /**
   * @param quantile the percentile of the time to first response a read waits for, as a share
   * @param floorNanos the least delay
   * @param nowNanos the time now
   */
  public HedgeDelay(double quantile, long floorNanos, long nowNanos) {
    if (!(quantile > 0 && quantile < 1)) {
      throw new IllegalArgumentException("the quantile must be above 0 and below 1: " + quantile);
    }
    this.quantile = quantile;
    this.floorNanos = floorNanos;
    this.fallback = new Shape(0, null, null, null, nowNanos);
  }

  /** The percentile for a budget of {@code maxExtra} extra calls per call: half the budget. */
  public static double quantileFor(double maxExtra) {
    return 1.0 - maxExtra / 2;
  }

  /**
   * The shape of a query with this key, found, or placed in the table; the shared fallback where no
   * way is free.
   *
   * @param key the statement's hash
   * @param statement the statement, kept for the endpoint, which shows what may be shown of it
   */
  public Shape shape(long key, String statement, long nowNanos) {
    return shape(key, statement, null, null, nowNanos);
  }

  /**
   * The shape of a read with this key, found, or placed in the table; the shared fallback where no
   * way is free. The columns are copied only when the shape is placed.
   *
   * @param key the hash of the table, index and columns
   */
  public Shape shape(long key, String table, String index, List<String> columns, long nowNanos) {
    Shape shape = this.table.get(key, nowNanos);
    if (shape == null) {
      shape =
          this.table.find(
              key,
              nowNanos,
              (placed, at) ->
                  new Shape(
                      placed, table, index, (columns != null) ? List.copyOf(columns) : null, at));
    }
    return (shape != null) ? shape : this.fallback;
  }

  /**
   * How long a read of this shape waits for a first response before a hedge: its own percentile
   * once it has enough samples, else the fallback's, never below the floor; {@link #NONE} while
   * neither has enough.
   */
  public long delayNanos(Shape shape) {
    long own = shape.delayNanos;
    if (own != NONE) {
      return own;
    }
    return this.fallback.delayNanos;
  }

  /**
   * Counts the time to first response of a read of this shape (also in the fallback). A read whose
   * first attempt was left for a hedge that answered first is counted with the time until then: a
   * lower bound of its own, past the delay, which leaves the percentile as it would be.
   */
  public void record(Shape shape, long latencyNanos, long nowNanos) {
    if (shape != this.fallback) {
      add(shape, latencyNanos, nowNanos);
    }
    add(this.fallback, latencyNanos, nowNanos);
  }

  private void add(Shape shape, long latencyNanos, long nowNanos) {
    if (shape.histogram.record(latencyNanos, nowNanos) % RECOMPUTE_EVERY == 0) {
      int samples = shape.histogram.samples();
      shape.delayNanos =
          (samples >= MIN_SAMPLES)
              ? Math.max(this.floorNanos, shape.histogram.quantileNanos(this.quantile))
              : NONE;
    }
  }

  /** The shared estimate's delay over every read, or {@link #NONE}. */
  public long fallbackDelayNanos() {
    return this.fallback.delayNanos;
  }

  public double quantile() {
    return this.quantile;
  }

  /**
   * The shapes with the most recent samples, busiest first, at most {@code limit}: for the endpoint
   * and the meters, never on a call's path.
   */
  public List<Shape> busiest(int limit) {
    List<Shape> shapes = new ArrayList<>();
    for (int i = 0; i < this.table.size(); i++) {
      Shape shape = this.table.way(i);
      if (shape != null && shape.histogram.samples() > 0) {
        shapes.add(shape);
      }
    }
    shapes.sort(Comparator.comparingInt((Shape shape) -> shape.histogram.samples()).reversed());
    return shapes.subList(0, Math.min(limit, shapes.size()));
  }

  /** One shape of read: its recent times to first response and the delay they give. */
  public static final class Shape extends TwoWayTable.Entry {

    private final String text;

    private final String index;

    private final List<String> columns;

    private final LatencyHistogram histogram;

    private volatile long delayNanos = NONE;

    Shape(long key, String text, String index, List<String> columns, long nowNanos) {
      super(key, nowNanos);
      this.text = text;
      this.index = index;
      this.columns = columns;
      this.histogram = new LatencyHistogram(nowNanos);
    }

    /** The statement, or the table a read reads, as the caller named it; null for the fallback. */
    public String text() {
      return this.text;
    }

    /** Whether it is a read's, with an {@link #index()} and {@link #columns()}, not a query's. */
    public boolean isRead() {
      return this.columns != null;
    }

    /** The index a read reads through, empty for none; null for a query. */
    public String index() {
      return this.index;
    }

    /** The columns a read reads; null for a query. */
    public List<String> columns() {
      return this.columns;
    }

    /** Samples in its recent windows. */
    public int samples() {
      return this.histogram.samples();
    }

    /** Its own delay, or {@link #NONE} until it has enough samples. */
    public long delayNanos() {
      return this.delayNanos;
    }
  }
}
