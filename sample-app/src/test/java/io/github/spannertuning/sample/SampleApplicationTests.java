package io.github.spannertuning.sample;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.Spanner;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.SpannerTuningState;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** The sample starts on its embedded backend, and the starter tuned spring-cloud-gcp's client. */
@SpringBootTest
class SampleApplicationTests {

  @Autowired private SpannerTuningRegistry registry;

  @Autowired private Spanner spanner;

  @Test
  void burstRanOnATunedClient() {
    SpannerTuningState state = this.registry.client("spanner").orElseThrow();
    assertThat(state.isActive(Feature.STREAM_END_GUARD)).isTrue();
    assertThat(state.streamEndGuardSkippedCount()).isPositive();
    assertThat(this.spanner.getOptions().getHost()).startsWith("http://127.0.0.1:");
  }
}
