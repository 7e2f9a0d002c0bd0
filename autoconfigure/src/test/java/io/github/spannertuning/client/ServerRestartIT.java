package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.metrics.SpannerChannelMetrics;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A server restarted under load, gracefully (GOAWAY) and abruptly, with 16 threads of point selects
 * and transactions on a tuned client: no query hangs, the pool serves again, and the per-channel
 * meters neither grow nor go stale.
 *
 * <p>Tagged {@code shares-machine}: what it checks is counted, against waits of ten seconds, so it
 * runs beside another test JVM.
 */
@Tag("shares-machine")
class ServerRestartIT extends TunedClientTests {

  @Test
  void serverRestartAndGoAwayUnderLoadLeaveNoQueryHangingAndThePoolServesAgain() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new SpannerChannelMetrics(this.state, "faults", Tags.empty()).bindTo(registry);
    for (int i = 0; i < 50; i++) {
      pointSelect();
    }
    int channelsBefore;
    int metersBefore;

    LongAdder sent = new LongAdder();
    LongAdder succeeded = new LongAdder();
    Map<String, LongAdder> failed = new ConcurrentHashMap<>();
    List<Throwable> unexpected = Collections.synchronizedList(new ArrayList<>());
    AtomicBoolean done = new AtomicBoolean();
    int threads = 16;
    ExecutorService load = Executors.newFixedThreadPool(threads);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      workers.add(
          load.submit(
              () -> {
                while (!done.get()) {
                  sent.increment();
                  try {
                    if (ThreadLocalRandom.current().nextInt(10) == 0) {
                      this.client
                          .readWriteTransaction()
                          .run((tx) -> tx.executeUpdate(Statement.of(UPDATE)));
                    } else {
                      pointSelect();
                    }
                    succeeded.increment();
                  } catch (SpannerException ex) {
                    failed
                        .computeIfAbsent(ex.getErrorCode().name(), (k) -> new LongAdder())
                        .increment();
                  } catch (Throwable ex) {
                    unexpected.add(ex);
                  }
                }
              }));
    }
    long[] phases = new long[3];
    try {
      Thread.sleep(1_000);
      phases[0] = succeeded.sum();
      channelsBefore = this.state.channelLoad().channels().size();
      metersBefore = registry.getMeters().size();
      this.server.restart(true);
      Thread.sleep(1_000);
      phases[1] = succeeded.sum();
      this.server.restart(false);
      Thread.sleep(1_000);
      phases[2] = succeeded.sum();
    } finally {
      done.set(true);
      load.shutdown();
    }
    for (Future<?> worker : workers) {
      // The bound: a query that hangs keeps its worker, and this fails.
      worker.get(60, TimeUnit.SECONDS);
    }
    assertThat(load.awaitTermination(10, TimeUnit.SECONDS)).isTrue();

    Map<Integer, Long> callsBefore = calls(registry);
    for (int i = 0; i < 200; i++) {
      pointSelect();
    }
    Map<Integer, Long> callsAfter = calls(registry);
    long failedTotal = failed.values().stream().mapToLong(LongAdder::sum).sum();
    String figures =
        String.format(
            "[faults %s] 16 threads, graceful restart (GOAWAY) then abrupt restart: sent=%d"
                + " succeeded=%d failed=%d %s unexpected=%d | succeeded before/after GOAWAY/after"
                + " drop=%d/%d/%d | channels before=%d after=%d, meters before=%d after=%d,"
                + " calls per channel after 200 more queries=%s",
            ClientVersions.detected().spanner(),
            sent.sum(),
            succeeded.sum(),
            failedTotal,
            failed,
            unexpected.size(),
            phases[0],
            phases[1] - phases[0],
            phases[2] - phases[1],
            channelsBefore,
            this.state.channelLoad().channels().size(),
            metersBefore,
            registry.getMeters().size(),
            delta(callsBefore, callsAfter));

    assertThat(unexpected).as("failures that are not SpannerExceptions: " + figures).isEmpty();
    assertThat(succeeded.sum() + failedTotal)
        .as("succeeded + failed: " + figures)
        .isEqualTo(sent.sum());
    assertThat(phases[2] - phases[1])
        .as("queries served after both restarts: " + figures)
        .isPositive();
    // After the abrupt restart grpc-java reconnects each channel after its own backoff, seconds
    // for the last ones, and the warm-up primes each new connection with one call (counted on its
    // channel) as it comes up: once every channel is warm again, the streams counted are the
    // application's. A CI run counted such a priming call, started just after the streams were 0.
    assertThat(this.state.warmUp(Duration.ofSeconds(10)).warm())
        .as("every channel connected and primed again: " + figures)
        .isTrue();
    awaitNoActiveStreams();
    assertThat(this.state.channelLoad().channels())
        .as(
            "channels counted: a reconnected channel is the same channel, not a new one: "
                + figures)
        .hasSize(channelsBefore)
        .hasSizeLessThanOrEqualTo(CHANNELS);
    assertThat(registry.find("spanner.tuning.channel.active.streams").gauges())
        .as("per-channel meter sets after the restarts: one per channel counted: " + figures)
        .hasSize(this.state.channelLoad().channels().size());
    assertThat(registry.getMeters().size())
        .as("meters after the restarts: " + figures)
        .isEqualTo(metersBefore);
    // Read until 0, as awaitNoActiveStreams reads the channels: a call the warm-up or the client
    // starts on its own (a channel reconnected late, primed once it is up) may be in flight at any
    // one reading, and a count the meters leaked would never come back to 0.
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(
                        registry.find("spanner.tuning.channel.active.streams").gauges().stream()
                            .mapToDouble((gauge) -> gauge.value())
                            .sum())
                    .as("active streams on the meters: " + figures)
                    .isZero());
    assertThat(delta(callsBefore, callsAfter).values().stream().mapToLong(Long::longValue).sum())
        .as("calls the per-channel meters counted for 200 queries after the restarts: " + figures)
        .isGreaterThanOrEqualTo(200);
  }

  /** Calls per channel as the per-channel meters show them. */
  private static Map<Integer, Long> calls(SimpleMeterRegistry registry) {
    Map<Integer, Long> calls = new TreeMap<>();
    registry
        .find("spanner.tuning.channel.calls")
        .functionCounters()
        .forEach(
            (counter) ->
                calls.put(
                    Integer.valueOf(counter.getId().getTag("channel")), (long) counter.count()));
    return calls;
  }

  private static Map<Integer, Long> delta(Map<Integer, Long> before, Map<Integer, Long> after) {
    Map<Integer, Long> delta = new TreeMap<>();
    after.forEach((channel, calls) -> delta.put(channel, calls - before.getOrDefault(channel, 0L)));
    return delta;
  }
}
