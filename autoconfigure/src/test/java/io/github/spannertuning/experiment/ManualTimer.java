package io.github.spannertuning.experiment;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;

/**
 * A clock and a timer that move only when a test advances them: tasks run on the test's thread, in
 * order of their time, with the clock set to it. Wall clocks that move with it stand for the clocks
 * of instances, each set apart from the others by its own offset.
 */
final class ManualTimer implements ExperimentTimer, LongSupplier {

  private record Scheduled(
      long atNanos, long sequence, Runnable task, CompletableFuture<Void> run) {}

  private final PriorityQueue<Scheduled> queue =
      new PriorityQueue<>(
          Comparator.comparingLong(Scheduled::atNanos).thenComparingLong(Scheduled::sequence));

  /** Far from 0, as {@link System#nanoTime()} is. */
  private long nowNanos = 7_000_000_000_000L;

  private long sequence;

  @Override
  public long getAsLong() {
    return this.nowNanos;
  }

  @Override
  public Future<?> schedule(Runnable task, long delayNanos) {
    CompletableFuture<Void> run = new CompletableFuture<>();
    this.queue.add(new Scheduled(this.nowNanos + delayNanos, this.sequence++, task, run));
    return run;
  }

  /**
   * A wall clock, in nanoseconds since the epoch, that reads {@code at} now and moves with this
   * clock.
   */
  LongSupplier wallClock(Instant at) {
    long offset = at.getEpochSecond() * 1_000_000_000L + at.getNano() - this.nowNanos;
    return () -> this.nowNanos + offset;
  }

  /** Moves the clock on by {@code duration}, running every task due on the way. */
  void advance(Duration duration) {
    long until = this.nowNanos + duration.toNanos();
    while (!this.queue.isEmpty() && this.queue.peek().atNanos() <= until) {
      Scheduled next = this.queue.poll();
      this.nowNanos = next.atNanos();
      if (!next.run().isCancelled()) {
        next.task().run();
        next.run().complete(null);
      }
    }
    this.nowNanos = until;
  }

  /** Tasks scheduled and not cancelled. */
  long pending() {
    return this.queue.stream().filter((scheduled) -> !scheduled.run().isCancelled()).count();
  }
}
