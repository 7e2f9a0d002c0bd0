package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.routing.Hedging.ShapeFigures;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** What hedging shows of the shapes it times, from fed reads and a test clock. */
class HedgingTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final long T0 = 1_000_000 * MS;

  private final Hedging hedging = new Hedging(0.05, 10, 0.975, MS, HedgeDelay.NONE, T0);

  /**
   * {@code findById} and {@code existsById} read one table's row for different columns: two shapes
   * with delays of their own, which must not look alike.
   */
  @Test
  void twoReadsOfOneTableWithDifferentColumnsGetDifferentLabels() {
    answer(this.hedging.readShape("Singers", "", List.of("SingerId", "FirstName"), T0), 3);
    answer(this.hedging.readShape("Singers", "", List.of("SingerId"), T0), 2);
    assertThat(this.hedging.busiestShapes())
        .extracting(ShapeFigures::shape)
        .containsExactly("read Singers(SingerId, FirstName)", "read Singers(SingerId)");
    assertThat(this.hedging.busiestShapes())
        .extracting(ShapeFigures::statement)
        .allMatch((statement) -> statement.isEmpty());
  }

  @Test
  void aReadThroughAnIndexNamesIt() {
    answer(this.hedging.readShape("Singers", "SingersByName", List.of("SingerId"), T0), 1);
    assertThat(this.hedging.busiestShapes())
        .extracting(ShapeFigures::shape)
        .containsExactly("read Singers via SingersByName(SingerId)");
  }

  /** A query shows no value: its fingerprint, and its statement with {@code ?} for the endpoint. */
  @Test
  void aQueryIsNamedByTheFingerprintOfItsNormalizedStatement() {
    String sql = "SELECT * FROM Singers WHERE Email = 'ann@example.com' AND SingerId = 42";
    answer(this.hedging.queryShape(sql, T0), 1);
    ShapeFigures shape = this.hedging.busiestShapes().get(0);
    assertThat(shape.shape()).isEqualTo("query def541b87c060a4c");
    assertThat(shape.statement())
        .contains("SELECT * FROM Singers WHERE Email = ? AND SingerId = ?");
  }

  /** The read path looks a shape up on every hedgeable read: that must cost no allocation. */
  @Test
  void lookingUpAPlacedShapeAllocatesNothing() {
    String sql = "SELECT * FROM Singers WHERE SingerId = 42";
    List<String> columns = List.of("SingerId", "FirstName");
    HedgeDelay.Shape query = this.hedging.queryShape(sql, T0);
    HedgeDelay.Shape read = this.hedging.readShape("Singers", "", columns, T0);
    lookUp(sql, columns, 100_000);
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long before = threads.getCurrentThreadAllocatedBytes();
    int found = lookUp(sql, columns, 100_000);
    long allocated = threads.getCurrentThreadAllocatedBytes() - before;
    assertThat(allocated).as("bytes allocated by 200,000 lookups").isLessThan(1024);
    assertThat(found).isEqualTo(200_000);
    assertThat(this.hedging.queryShape(sql, T0)).isSameAs(query);
    assertThat(this.hedging.readShape("Singers", "", columns, T0)).isSameAs(read);
  }

  private int lookUp(String sql, List<String> columns, int times) {
    int found = 0;
    for (int i = 0; i < times; i++) {
      found += (this.hedging.queryShape(sql, T0 + i).samples() == 0) ? 1 : 0;
      found += (this.hedging.readShape("Singers", "", columns, T0 + i).samples() == 0) ? 1 : 0;
    }
    return found;
  }

  private void answer(HedgeDelay.Shape shape, int reads) {
    for (int i = 0; i < reads; i++) {
      this.hedging.answered(shape, 3 * MS, T0);
    }
  }
}
