package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

/** The fresh instance's first and warm stretches, read from a window's series of buckets. */
class FreshInstanceStretchesTest {

  /** First second, then the second one burst period (5 s) later: a 6 s window. */
  private static final Workload.Instance INSTANCE = new Workload.Instance(5, 1, 5);

  @Test
  void theFirstStretchIsTheBucketsOfTheFirstSecondAndTheWarmOneABurstPeriodLater() {
    // 0.25 s buckets; each holds one query, its latency in ms the bucket's number + 1.
    Histogram[] series = series(24);

    Histogram first = INSTANCE.first(series, 0.25);
    Histogram warm = INSTANCE.warm(series, 0.25);

    assertThat(INSTANCE.windowSeconds()).isEqualTo(6.0);
    assertThat(first.getTotalCount()).isEqualTo(4);
    assertThat(ms(first.getMaxValue())).isEqualTo(4);
    assertThat(ms(first.getMinValue())).isEqualTo(1);
    assertThat(warm.getTotalCount()).isEqualTo(4);
    assertThat(ms(warm.getMinValue())).isEqualTo(21);
    assertThat(ms(warm.getMaxValue())).isEqualTo(24);
  }

  @Test
  void theWarmStretchStartsAtTheFirstWholeBurstPeriodAfterTheFirstStretch() {
    assertThat(Workload.Instance.of(5, 1, 5).warmFromSeconds()).isEqualTo(5.0);
    assertThat(Workload.Instance.of(5, 1, 1).warmFromSeconds()).isEqualTo(1.0);
    assertThat(Workload.Instance.of(5, 1, 0.4).warmFromSeconds()).isCloseTo(1.2, within(1e-9));
    assertThat(Workload.Instance.of(5, 1, 0.4).windowSeconds()).isCloseTo(2.2, within(1e-9));
  }

  @Test
  void aBucketThatCrossesTheStretchsEdgeIsLeftOut() {
    // 0.3 s buckets: the fourth (0.9 to 1.2 s) lies across the first second's end.
    Histogram[] series = series(20);

    Histogram first = Workload.Instance.between(series, 0.3, 0, 1);

    assertThat(first.getTotalCount()).isEqualTo(3);
    assertThat(ms(first.getMaxValue())).isEqualTo(3);
  }

  @Test
  void theP99OfAStretchIsOverItsBucketsMerged() {
    Histogram[] series = new Histogram[8];
    for (int i = 0; i < series.length; i++) {
      series[i] = new Histogram(2);
      for (int q = 0; q < 99; q++) {
        series[i].recordValue(5_000);
      }
    }
    // One slow query in the first second's last bucket: 1 of 396, under the 1 % the P99 allows.
    series[3].recordValue(300_000);
    // Five in the second second: 5 of 401, over it.
    for (int q = 0; q < 5; q++) {
      series[5].recordValue(300_000);
    }

    assertThat(ms(Workload.Instance.between(series, 0.25, 0, 1).getValueAtPercentile(99)))
        .isEqualTo(5);
    assertThat(ms(Workload.Instance.between(series, 0.25, 1, 2).getValueAtPercentile(99)))
        .isBetween(297L, 305L);
  }

  /** Buckets of one query each, bucket {@code i}'s at {@code i + 1} ms. */
  private static Histogram[] series(int buckets) {
    Histogram[] series = new Histogram[buckets];
    for (int i = 0; i < buckets; i++) {
      series[i] = new Histogram(2);
      series[i].recordValue((i + 1) * 1000L);
    }
    return series;
  }

  private static long ms(long micros) {
    return Math.round(micros / 1000.0);
  }
}
