package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.ProjectFiles;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The meter table of docs/metrics-and-endpoint.md lists exactly the meters a tuned client's binder
 * registers once its channels carried calls.
 */
class SpannerChannelMetricsDocumentationTests {

  /** A table row whose first cell is a {@code spanner.tuning.*} meter name in backquotes. */
  private static final Pattern TABLE_ROW =
      Pattern.compile("^\\|\\s*`(spanner\\.tuning\\.[a-z0-9.]+)`\\s*\\|", Pattern.MULTILINE);

  @Test
  void meterTableListsEveryMeter() throws Exception {
    Set<String> registered = new TreeSet<>();
    try (MockSpannerServer server = MockSpannerServer.start()) {
      SpannerOptions.Builder builder = server.clientOptions(2);
      SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
      try (Spanner spanner = builder.build().getService()) {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        new SpannerChannelMetrics(state, "spanner", Tags.empty()).bindTo(registry);
        MockSpannerServer.pointSelects(spanner.getDatabaseClient(MockSpannerServer.DATABASE), 1);
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> registry.find("spanner.tuning.channel.calls").meters().size() > 0);
        for (Meter meter : registry.getMeters()) {
          registered.add(meter.getId().getName());
        }
      }
    }
    Set<String> documented = new TreeSet<>();
    Matcher row =
        TABLE_ROW.matcher(
            Files.readString(ProjectFiles.root().resolve("docs/metrics-and-endpoint.md")));
    while (row.find()) {
      documented.add(row.group(1));
    }
    assertThat(documented).containsExactlyElementsOf(registered);
  }
}
