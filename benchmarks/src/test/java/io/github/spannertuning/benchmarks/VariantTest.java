package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.SpannerTuningState;
import org.junit.jupiter.api.Test;

/**
 * The observed variant parses by its name and label, is listed, and observes its client's calls.
 */
class VariantTest {

  @Test
  void observedParsesByNameAndLabel() {
    assertThat(Variant.of("observed")).isEqualTo(Variant.OBSERVED);
    assertThat(Variant.of("tuned-+-observations")).isEqualTo(Variant.OBSERVED);
    assertThat(Variant.OBSERVED.label()).isEqualTo("tuned + observations");
  }

  @Test
  void unknownVariantListsObserved() {
    assertThatThrownBy(() -> Variant.of("nope"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("observed");
  }

  @Test
  void observedTurnsObservationsOnAndTunedDoesNot() {
    assertThat(state(Variant.OBSERVED).observations().status()).isEqualTo(FeatureState.Status.ON);
    assertThat(state(Variant.TUNED).observations().status()).isNotEqualTo(FeatureState.Status.ON);
  }

  private static SpannerTuningState state(Variant variant) {
    return variant.configure(
        SpannerOptions.newBuilder()
            .setProjectId("bench-project")
            .setCredentials(NoCredentials.getInstance()));
  }
}
