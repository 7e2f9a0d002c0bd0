package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The hedge delay learned per shape of read, from fed times to first response. */
class HedgeDelayTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final long T0 = 1_000_000 * MS;

  private final HedgeDelay delay = new HedgeDelay(HedgeDelay.quantileFor(0.05), MS, T0);

  @Test
  void theQuantileIsHalfTheBudgetFromTheTop() {
    assertThat(HedgeDelay.quantileFor(0.05)).isEqualTo(0.975);
    assertThat(HedgeDelay.quantileFor(0.10)).isEqualTo(0.95);
  }

  @Test
  void noDelayUntilEnoughReadsWereTimed() {
    HedgeDelay.Shape point = this.delay.shape(1, "SELECT 1", T0);
    feed(point, 3 * MS, HedgeDelay.MIN_SAMPLES - 1, T0);
    assertThat(this.delay.delayNanos(point)).isEqualTo(HedgeDelay.NONE);
    feed(point, 3 * MS, 40, T0 + 1000 * MS);
    assertThat(this.delay.delayNanos(point)).isBetween(3 * MS, 4 * MS);
  }

  /**
   * Zanzibar's warning: hedging pays only when requests of a kind cost about the same. A statement
   * whose reads take 40 ms must not set the delay of one whose reads take 3, nor the other way.
   */
  @Test
  void eachShapeHasItsOwnDelay() {
    HedgeDelay.Shape point = fed(1, "point", 3 * MS, 500);
    HedgeDelay.Shape scan = fed(2, "scan", 40 * MS, 500);
    assertThat(this.delay.delayNanos(point)).isBetween(3 * MS, 4 * MS);
    assertThat(this.delay.delayNanos(scan)).isBetween(40 * MS, 44 * MS);
  }

  @Test
  void aNewShapeUsesTheSharedEstimateUntilItHasItsOwn() {
    HedgeDelay.Shape point = this.delay.shape(1, "point", T0);
    feed(point, 3 * MS, 500, T0);
    HedgeDelay.Shape fresh = this.delay.shape(7, "new", T0 + 600 * MS);
    assertThat(this.delay.delayNanos(fresh))
        .as("a shape with no samples of its own")
        .isEqualTo(this.delay.fallbackDelayNanos())
        .isBetween(3 * MS, 4 * MS);
  }

  @Test
  void theDelayNeverFallsBelowTheFloor() {
    HedgeDelay.Shape fast = this.delay.shape(1, "fast", T0);
    feed(fast, 100_000, 500, T0);
    assertThat(this.delay.delayNanos(fast)).isEqualTo(MS);
  }

  /**
   * The table is bounded: once full of shapes in use, a new shape is served by the shared estimate
   * and takes no way, so a stream of one-off statements cannot churn it; a way whose shape has gone
   * unused for a while is taken.
   */
  @Test
  void aFullTableServesNewShapesFromTheSharedEstimateAndRecyclesIdleWays() {
    long now = T0;
    for (long key = 1; key <= 10 * HedgeDelay.SHAPES; key++) {
      this.delay.shape(key, "s" + key, now);
    }
    assertThat(this.delay.busiest(Integer.MAX_VALUE)).isEmpty();
    int placed = 0;
    for (long key = 1; key <= 10 * HedgeDelay.SHAPES; key++) {
      HedgeDelay.Shape shape = this.delay.shape(key, "s" + key, now);
      if (shape.text() != null) {
        this.delay.record(shape, MS, now);
        placed++;
      }
    }
    assertThat(placed).as("shapes with a way of their own").isEqualTo(HedgeDelay.SHAPES);
    assertThat(this.delay.busiest(Integer.MAX_VALUE)).hasSize(placed);
    HedgeDelay.Shape late = this.delay.shape(99_999, "late", now + HedgeDelay.IDLE_NANOS + 1);
    assertThat(late.text()).as("a shape once the others were idle for a second").isEqualTo("late");
  }

  @Test
  void theBusiestShapesComeFirst() {
    fed(1, "seldom", 3 * MS, 10);
    fed(2, "often", 3 * MS, 50);
    assertThat(this.delay.busiest(1)).extracting(HedgeDelay.Shape::text).containsExactly("often");
  }

  /** A shape placed at {@code T0} and fed {@code samples} reads of {@code latency} from then. */
  private HedgeDelay.Shape fed(long key, String text, long latency, int samples) {
    HedgeDelay.Shape shape = this.delay.shape(key, text, T0);
    feed(shape, latency, samples, T0);
    return shape;
  }

  private void feed(HedgeDelay.Shape shape, long latency, int samples, long from) {
    for (int i = 0; i < samples; i++) {
      this.delay.record(shape, latency, from + i * MS);
    }
  }
}
