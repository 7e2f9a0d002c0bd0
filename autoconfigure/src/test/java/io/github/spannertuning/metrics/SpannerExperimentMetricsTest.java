package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.testing.MockSpannerServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The experiment's meters, tagged {@code kind} and {@code arm}, show what its result shows: a real
 * tuned client against the test server, point selects from one thread, one pair of 2.5 s slices
 * (the client drains for at most 500 ms, so the carry-over is 2 s).
 *
 * <p>Tagged {@code default-line}: the meters are the starter's own code, the same on every client
 * line; what the experiment records of each line's calls is {@code ExperimentRecordingTest}'s.
 */
@Tag("default-line")
class SpannerExperimentMetricsTest {

  private static final SpannerTuning TUNING =
      SpannerTuning.newBuilder().streamEndGuardDrainTimeout(Duration.ofMillis(500)).build();

  @Test
  void callsPerKindAndArmMatchTheExperimentsResult() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      SpannerOptions.Builder builder = server.clientOptions(2);
      SpannerTuningState state = TUNING.applyTo(builder);
      MeterRegistry registry = new SimpleMeterRegistry();
      new SpannerChannelMetrics(state, "spanner", Tags.empty()).bindTo(registry);
      try (Spanner spanner = builder.build().getService()) {
        assertThat(gauge(registry, "spanner.tuning.experiment.running")).isZero();
        assertThat(counter(registry, "spanner.tuning.experiment.calls", "single-use", "tuned"))
            .isZero();
        assertThat(gauge(registry, "spanner.tuning.experiment.p99", "single-use", "stock")).isNaN();
        AtomicBoolean running = new AtomicBoolean(true);
        Thread traffic = new Thread(() -> pointSelectsWhile(spanner, running));
        traffic.start();
        try {
          state.startExperiment(
              state.experimentPlan(Duration.ofMillis(5000), Duration.ofMillis(2500)));
          assertThat(gauge(registry, "spanner.tuning.experiment.running")).isEqualTo(1);
          await().atMost(Duration.ofSeconds(30)).until(() -> !state.isExperimentRunning());
        } finally {
          running.set(false);
          traffic.join();
        }
        ExperimentResult result = state.experiment();
        assertThat(result.state()).isEqualTo("done");
        assertThat(gauge(registry, "spanner.tuning.experiment.running")).isZero();
        KindResult singleUse = result.results().get("single-use");
        assertThat(singleUse.calls().tuned()).isPositive();
        assertThat(singleUse.calls().stock()).isPositive();
        assertThat(counter(registry, "spanner.tuning.experiment.calls", "single-use", "tuned"))
            .isEqualTo((double) singleUse.calls().tuned());
        assertThat(counter(registry, "spanner.tuning.experiment.calls", "single-use", "stock"))
            .isEqualTo((double) singleUse.calls().stock());
        assertThat(counter(registry, "spanner.tuning.experiment.failed", "single-use", "stock"))
            .isZero();
        assertThat(counter(registry, "spanner.tuning.experiment.calls", "commit", "tuned"))
            .isZero();
        // One slice per arm: its P99 is the arm's figure.
        assertThat(gauge(registry, "spanner.tuning.experiment.p99", "single-use", "tuned"))
            .isEqualTo(singleUse.p99Seconds().tuned());
        assertThat(gauge(registry, "spanner.tuning.experiment.p99", "single-use", "stock"))
            .isEqualTo(singleUse.p99Seconds().stock());
        assertThat(gauge(registry, "spanner.tuning.experiment.p50", "single-use", "stock"))
            .isPositive();
        // The timers hold exactly the calls the slices recorded: none of a carry-over.
        for (String kind : new String[] {"single-use", "transaction-query", "commit"}) {
          for (String arm : new String[] {"tuned", "stock"}) {
            assertThat((double) timer(registry, kind, arm).count())
                .as("%s calls in the %s arm", kind, arm)
                .isEqualTo(counter(registry, "spanner.tuning.experiment.calls", kind, arm));
          }
        }
        assertThat(timer(registry, "single-use", "stock").max(TimeUnit.SECONDS))
            .isGreaterThanOrEqualTo(singleUse.p99Seconds().stock() / 1.01);
        // The test server has no reset limit: it sends no GOAWAY.
        assertThat(goAways(registry, "tuned") + goAways(registry, "stock")).isZero();
      }
    }
  }

  private static double counter(MeterRegistry registry, String name, String kind, String arm) {
    return registry
        .get(name)
        .tags("client", "spanner", "kind", kind, "arm", arm)
        .functionCounter()
        .count();
  }

  private static Timer timer(MeterRegistry registry, String kind, String arm) {
    return registry
        .get("spanner.tuning.experiment.latency")
        .tags("client", "spanner", "kind", kind, "arm", arm)
        .timer();
  }

  private static double goAways(MeterRegistry registry, String arm) {
    return registry
        .get("spanner.tuning.experiment.goaways")
        .tags("client", "spanner", "arm", arm)
        .functionCounter()
        .count();
  }

  private static double gauge(MeterRegistry registry, String name, String kind, String arm) {
    return registry.get(name).tags("client", "spanner", "kind", kind, "arm", arm).gauge().value();
  }

  private static double gauge(MeterRegistry registry, String name) {
    return registry.get(name).tags("client", "spanner").gauge().value();
  }

  private static void pointSelectsWhile(Spanner spanner, AtomicBoolean running) {
    DatabaseClient client = spanner.getDatabaseClient(MockSpannerServer.DATABASE);
    while (running.get()) {
      MockSpannerServer.pointSelect(client);
    }
  }
}
