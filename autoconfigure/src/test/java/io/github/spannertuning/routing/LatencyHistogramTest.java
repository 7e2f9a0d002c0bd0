package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The percentile of recent latencies, from fed samples on a clock the test sets. */
class LatencyHistogramTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final long T0 = 1_000_000 * MS;

  @Test
  void aHighPercentileFallsWithinABucketOfTheTrueOne() {
    LatencyHistogram histogram = new LatencyHistogram(T0);
    // 2 to 5 ms, evenly, with 2 % at 52 ms: the 97.5th percentile is 4.98 ms.
    for (int i = 0; i < 1000; i++) {
      long latency = (i % 50 == 0) ? 52 * MS : 2 * MS + (3 * MS * (i % 49)) / 48;
      histogram.record(latency, T0 + i * MS);
    }
    assertThat(histogram.quantileNanos(0.975) / (double) MS)
        .as("97.5th percentile of 2-5 ms with 2 %% at 52 ms")
        .isCloseTo(4.98, within(0.45));
    assertThat(histogram.quantileNanos(0.995) / (double) MS)
        .as("99.5th percentile, among the stragglers")
        .isCloseTo(52, within(5.0));
  }

  @Test
  void thePercentileFollowsAChangeWithinTwoWindows() {
    LatencyHistogram histogram = new LatencyHistogram(T0);
    long now = T0;
    for (int i = 0; i < 2 * LatencyHistogram.WINDOW_SAMPLES; i++) {
      histogram.record(3 * MS, now += MS);
    }
    for (int i = 0; i < 2 * LatencyHistogram.WINDOW_SAMPLES; i++) {
      histogram.record(50 * MS, now += MS);
    }
    assertThat(histogram.quantileNanos(0.5))
        .as("the median after two windows at 50 ms, two at 3 ms before")
        .isGreaterThan(45 * MS);
  }

  @Test
  void aSeldomMadeKindClosesItsWindowByTime() {
    LatencyHistogram histogram = new LatencyHistogram(T0);
    long now = T0;
    for (int i = 0; i < 100; i++) {
      histogram.record(3 * MS, now += 100 * MS);
    }
    // 100 samples over 10 s closed the first window; the next 200 fill the current and the one
    // closed after them, so the 3 ms samples are gone.
    for (int i = 0; i < 200; i++) {
      histogram.record(40 * MS, now += 100 * MS);
    }
    assertThat(histogram.samples()).as("samples in the two windows").isLessThan(300);
    assertThat(histogram.quantileNanos(0.1)).as("10th percentile").isGreaterThan(35 * MS);
  }

  @Test
  void bucketsCoverTheirBoundsWithoutGaps() {
    for (int i = 0; i < LatencyHistogram.BUCKETS - 1; i++) {
      long low = LatencyHistogram.lowerBound(i);
      long high = LatencyHistogram.lowerBound(i + 1);
      assertThat(LatencyHistogram.bucket(low)).as("bucket of %d", low).isEqualTo(i);
      assertThat(LatencyHistogram.bucket(high - 1)).as("bucket of %d", high - 1).isEqualTo(i);
      assertThat((high - low) / (double) low)
          .as("width of bucket %d", i)
          .isLessThanOrEqualTo(0.125);
    }
  }

  @Test
  void noSamplesNoPercentile() {
    assertThat(new LatencyHistogram(T0).quantileNanos(0.95)).isEqualTo(-1);
  }
}
