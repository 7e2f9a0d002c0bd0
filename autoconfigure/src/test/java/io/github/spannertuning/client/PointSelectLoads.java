package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;
import static io.github.spannertuning.testing.MockSpannerServer.REPORT;

import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.Loops;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Point selects on a {@link RoutingSubject}, open or closed loop, counted as made and failed. */
final class PointSelectLoads {

  private PointSelectLoads() {}

  /** Queries made and failed. */
  record Load(int ok, int failed) {}

  /**
   * Point selects arriving at {@code perSecond} for {@code time}, on a schedule: 400 threads, each
   * sending its share at fixed times, never two of its own at once (a query takes far less than a
   * thread's period here).
   */
  static Load openLoop(RoutingSubject subject, int perSecond, Duration time) {
    int threads = 400;
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    long start = System.nanoTime();
    long end = start + time.toNanos();
    long interval = TimeUnit.SECONDS.toNanos(1) / perSecond;
    Loops.onThreads(
        threads,
        (thread) -> {
          for (long at = start + thread * interval; at < end; at += threads * interval) {
            long wait = at - System.nanoTime();
            if (wait > 0) {
              TimeUnit.NANOSECONDS.sleep(wait);
            }
            pointSelect(subject, ok, failed);
          }
          return null;
        });
    return new Load(ok.get(), failed.get());
  }

  /** {@code threads} threads send point selects one after another for {@code time}. */
  static Load closedLoop(RoutingSubject subject, int threads, Duration time) {
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    long end = System.nanoTime() + time.toNanos();
    Loops.onThreads(
        threads,
        (thread) -> {
          while (System.nanoTime() < end) {
            pointSelect(subject, ok, failed);
          }
          return null;
        });
    return new Load(ok.get(), failed.get());
  }

  /** One point select, counted as made or failed. */
  private static void pointSelect(RoutingSubject subject, AtomicInteger ok, AtomicInteger failed) {
    try (ResultSet rs = subject.client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      (rs.next() ? ok : failed).incrementAndGet();
    } catch (RuntimeException ex) {
      failed.incrementAndGet();
    }
  }

  /** Queries made and failed, and the point selects' latencies in nanoseconds, sorted. */
  record Mixed(int ok, int failed, long[] pointNanos) {

    long percentile(double share) {
      return (this.pointNanos.length == 0)
          ? 0
          : this.pointNanos[
              (int) Math.min(this.pointNanos.length - 1, share * this.pointNanos.length)];
    }

    @Override
    public String toString() {
      return String.format(
          "point reads P50 %.2f ms, P99 %.2f ms, %d failed",
          percentile(0.50) / 1e6, percentile(0.99) / 1e6, this.failed);
    }
  }

  /**
   * {@code threads} threads send queries one after another for {@code time}, every {@code
   * reportEvery}-th of a thread's a report ({@code REPORT}) read to its end, the others point
   * selects, whose latencies are kept.
   */
  static Mixed mixedClosedLoop(
      RoutingSubject subject, int threads, int reportEvery, Duration time) {
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    ConcurrentLinkedQueue<Long> points = new ConcurrentLinkedQueue<>();
    long end = System.nanoTime() + time.toNanos();
    Loops.onThreads(
        threads,
        (thread) -> {
          for (int i = thread; System.nanoTime() < end; i++) {
            boolean report = i % reportEvery == 0;
            long start = System.nanoTime();
            try (ResultSet rs =
                subject
                    .client
                    .singleUse()
                    .executeQuery(Statement.of(report ? REPORT : POINT_SELECT))) {
              boolean read = rs.next();
              while (report && rs.next()) {
                // A report is read to its end.
              }
              if (!report) {
                points.add(System.nanoTime() - start);
              }
              (read ? ok : failed).incrementAndGet();
            } catch (RuntimeException ex) {
              failed.incrementAndGet();
            }
          }
          return null;
        });
    long[] sorted = points.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(sorted);
    return new Mixed(ok.get(), failed.get(), sorted);
  }
}
