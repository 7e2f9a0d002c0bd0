package io.github.spannertuning.sample.load;

import io.github.spannertuning.sample.backend.SampleProperties;
import io.github.spannertuning.sample.music.SingerRepository;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.stereotype.Service;

/**
 * Sends the app a paced burst of single-use reads through its repository: alternately {@code
 * findById} (reads the row and the end of the stream) and {@code existsById} (Spring Data closes
 * the read after its one row: the close the stream-end guard is about).
 */
@Service
public class BurstService implements DisposableBean {

  /**
   * Reads in flight at most: enough to load several channels, bounded so a burst cannot run away.
   */
  static final int WORKERS = 64;

  private final SingerRepository singers;

  private final int singerCount;

  private final ExecutorService workers =
      Executors.newFixedThreadPool(
          WORKERS,
          (runnable) -> {
            Thread thread = new Thread(runnable, "burst-worker");
            thread.setDaemon(true);
            return thread;
          });

  private final AtomicBoolean running = new AtomicBoolean();

  BurstService(SingerRepository singers, SampleProperties properties) {
    this.singers = singers;
    this.singerCount = properties.seedSingers();
  }

  /** Runs one burst, or returns empty when one is already running. */
  public Optional<BurstResult> burst(int rate, int seconds) {
    if (!this.running.compareAndSet(false, true)) {
      return Optional.empty();
    }
    try {
      return Optional.of(run(rate, seconds));
    } finally {
      this.running.set(false);
    }
  }

  private BurstResult run(int rate, int seconds) {
    int total = rate * seconds;
    long[] latencies = new long[total];
    AtomicInteger errors = new AtomicInteger();
    AtomicReference<String> firstError = new AtomicReference<>();
    List<CompletableFuture<Void>> reads = new ArrayList<>(total);
    long intervalNanos = 1_000_000_000L / rate;
    long start = System.nanoTime();
    for (int i = 0; i < total; i++) {
      long due = start + i * intervalNanos;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      int index = i;
      long singerId = 1 + ThreadLocalRandom.current().nextInt(this.singerCount);
      reads.add(
          CompletableFuture.runAsync(
              () -> {
                long began = System.nanoTime();
                try {
                  if (index % 2 == 0) {
                    this.singers.findById(singerId);
                  } else {
                    this.singers.existsById(singerId);
                  }
                } catch (RuntimeException ex) {
                  errors.incrementAndGet();
                  firstError.compareAndSet(
                      null, ex.getClass().getSimpleName() + ": " + ex.getMessage());
                }
                latencies[index] = System.nanoTime() - began;
              },
              this.workers));
    }
    CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).join();
    long elapsed = System.nanoTime() - start;
    Arrays.sort(latencies);
    return new BurstResult(
        total,
        (total + 1) / 2,
        total / 2,
        errors.get(),
        firstError.get(),
        rate,
        seconds,
        elapsed / 1_000_000,
        total * 1e9 / elapsed,
        latencies[total / 2] / 1e6,
        latencies[Math.min(total - 1, (int) Math.ceil(total * 0.99) - 1)] / 1e6,
        latencies[total - 1] / 1e6);
  }

  @Override
  public void destroy() {
    this.workers.shutdownNow();
  }

  /** What a burst did; latencies in milliseconds, measured around each repository call. */
  public record BurstResult(
      int reads,
      int findById,
      int existsById,
      int errors,
      String firstError,
      int requestedRate,
      int seconds,
      long elapsedMs,
      double achievedRate,
      double p50Ms,
      double p99Ms,
      double maxMs) {}
}
