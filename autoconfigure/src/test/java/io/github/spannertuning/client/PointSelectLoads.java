package io.github.spannertuning.client;

import static io.github.spannertuning.testing.MockSpannerServer.POINT_SELECT;

import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.Loops;
import java.time.Duration;
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
            try (ResultSet rs =
                subject.client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
              (rs.next() ? ok : failed).incrementAndGet();
            } catch (RuntimeException ex) {
              failed.incrementAndGet();
            }
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
            try (ResultSet rs =
                subject.client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
              (rs.next() ? ok : failed).incrementAndGet();
            } catch (RuntimeException ex) {
              failed.incrementAndGet();
            }
          }
          return null;
        });
    return new Load(ok.get(), failed.get());
  }
}
