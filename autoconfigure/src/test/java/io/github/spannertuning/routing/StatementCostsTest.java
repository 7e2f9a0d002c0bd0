package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A costly statement told apart from a slow connection, with fed latencies: point reads of 2 to 5
 * ms and one query in ten a report that takes 100 ms more on every connection, over eight
 * connections, one of which adds 20 ms to everything it carries. What each call tells of its
 * connection, and what the picker makes of it.
 */
class StatementCostsTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final long POINT = 1;

  private static final long REPORT = 2;

  private static final int CHANNELS = 8;

  private static final int SLOW = 3;

  private final Random random = new Random(42);

  private final StatementCosts costs = new StatementCosts();

  private long now = 1_000 * MS;

  /** A point read's time on a healthy connection: 2 to 5 ms. */
  private long point() {
    return 2 * MS + (long) (this.random.nextDouble() * 3 * MS);
  }

  /** One call of {@code kind} on {@code channel}: what its connection's estimate takes. */
  private long call(long kind, int channel) {
    long latency = point() + ((kind == REPORT) ? 100 * MS : 0) + ((channel == SLOW) ? 20 * MS : 0);
    this.now += MS / 4;
    return this.costs.answered(this.costs.kind(kind, this.now), latency);
  }

  /** The median of what a report and a point read tell of their connection. */
  private record Told(long report, long point) {}

  /**
   * 200 reports and 200 point reads on {@code channel}, the others carrying the rest of the traffic
   * meanwhile: the median of what each kind tells of the connection.
   */
  private Told onConnection(int channel) {
    long[] reports = new long[200];
    long[] points = new long[200];
    for (int i = 0; i < 200; i++) {
      reports[i] = call(REPORT, channel);
      points[i] = call(POINT, channel);
      otherConnections(channel);
    }
    return new Told(median(reports), median(points));
  }

  /** The connections but {@code channel} carry the rest of the traffic, reports among it. */
  private void otherConnections(int channel) {
    for (int other = 0; other < 2 * CHANNELS; other++) {
      if (other % CHANNELS != channel) {
        call((other % 5 == 0) ? REPORT : POINT, other % CHANNELS);
      }
    }
  }

  /** 4,000 calls, one in ten a report, spread over the channels in turn. */
  private void traffic() {
    for (int i = 0; i < 4_000; i++) {
      call((i % 10 == 0) ? REPORT : POINT, i % CHANNELS);
    }
  }

  @Test
  void aReportOnAHealthyConnectionWeighsAsAPointReadDoes() {
    traffic();
    Told told = onConnection(0);
    assertThat(told.report())
        .as("a report on a healthy connection, less its extra cost: %d us", told.report() / 1000)
        .isBetween(1 * MS, 6 * MS);
    assertThat(told.point())
        .as("a point read is taken as it is: %d us", told.point() / 1000)
        .isBetween(2 * MS, 5 * MS);
  }

  @Test
  void aConnectionSlowForEveryStatementStaysSlowForReportsToo() {
    traffic();
    Told told = onConnection(SLOW);
    assertThat(told.report())
        .as("a report on the connection 20 ms slower: %d us", told.report() / 1000)
        .isBetween(20 * MS, 26 * MS);
    assertThat(told.point()).isBetween(22 * MS, 25 * MS);
  }

  /**
   * Fed into the channels' estimates, reports make no healthy connection look slower than the
   * others, and the slow one stays out of the picker's band: it takes no read while the healthy
   * ones have room, as it would without reports.
   */
  @Test
  void thePickerKeepsOffTheSlowConnectionAndOnEveryHealthyOne() {
    Connection[] pool = new Connection[CHANNELS];
    for (int i = 0; i < CHANNELS; i++) {
      pool[i] = new Connection(this.now);
    }
    for (int i = 0; i < 4_000; i++) {
      int channel = i % CHANNELS;
      long kind = (this.random.nextInt(10) == 0) ? REPORT : POINT;
      long told = call(kind, channel);
      pool[channel].latency().answered(this.now - told, this.now);
    }
    ChannelPicker picker = new ChannelPicker(ChannelPicker.Rule.defaults(90));
    int[] picks = new int[CHANNELS];
    for (int i = 0; i < 800; i++) {
      int channel = picker.pick(pool, this.now);
      picks[channel]++;
      pool[channel].uncountCall();
    }
    assertThat(picks[SLOW]).as("picks: %s", Arrays.toString(picks)).isZero();
    for (int i = 0; i < CHANNELS; i++) {
      if (i != SLOW) {
        assertThat(picks[i]).as("picks: %s", Arrays.toString(picks)).isPositive();
      }
    }
  }

  @Test
  void aKindWithTooFewSamplesOrNoWayIsTakenAtThePoolsBase() {
    for (int i = 0; i < 100; i++) {
      call(POINT, 0);
    }
    StatementCosts.Cost fresh = this.costs.kind(REPORT, this.now);
    assertThat(this.costs.extraNanos(fresh)).isZero();
    assertThat(this.costs.extraNanos(null)).isZero();
    assertThat(this.costs.answered(null, 150 * MS)).isEqualTo(150 * MS);
  }

  /**
   * The table is bounded: a kind whose set's two ways are in recent use gets none, and a way whose
   * kind went idle is taken.
   */
  @Test
  void theTableHoldsAtMostItsKindsAndIdleOnesGiveWay() {
    int placed = 0;
    for (long key = 0; key < 10_000; key++) {
      if (this.costs.kind(key, this.now) != null) {
        placed++;
      }
    }
    assertThat(placed).isEqualTo(StatementCosts.KINDS);
    this.now += 2 * StatementCosts.IDLE_NANOS;
    assertThat(this.costs.kind(20_000, this.now)).isNotNull();
  }

  /**
   * Every timed call looks its kind up and reports its answer: that must cost no allocation, the
   * least of three passes taken so that one-off work of the JVM in this thread does not count.
   */
  @Test
  void aCallsLookUpAndAnswerAllocateNothing() {
    traffic();
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long least = Long.MAX_VALUE;
    for (int pass = 0; pass < 3; pass++) {
      long before = threads.getCurrentThreadAllocatedBytes();
      for (int i = 0; i < 100_000; i++) {
        this.costs.answered(this.costs.kind((i % 10 == 0) ? REPORT : POINT, this.now + i), 3 * MS);
      }
      least = Math.min(least, threads.getCurrentThreadAllocatedBytes() - before);
    }
    assertThat(least).as("bytes allocated by 100,000 calls").isLessThan(1024);
  }

  private static long median(long[] values) {
    long[] sorted = values.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }
}
