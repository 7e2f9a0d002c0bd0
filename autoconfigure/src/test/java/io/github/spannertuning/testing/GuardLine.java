package io.github.spannertuning.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.SpannerTuningState;
import java.util.Locale;

/**
 * What the build expects of the stream-end guard on the client line the tests run on, from the
 * system property its profile sets: {@code on} where the client cancels a stream closed at its
 * {@code last} message (up to 6.124), {@code native} where the client drops its call at {@code
 * last} and sends no cancel itself (6.125+). Never read from the code under test.
 */
public final class GuardLine {

  public static final String PROPERTY = "spanner-tuning.expected.stream-end-guard";

  private GuardLine() {}

  /** The guard's state on this line when it is configured on. */
  public static FeatureState.Status expected() {
    String property = System.getProperty(PROPERTY);
    assertThat(property)
        .as("system property %s, set by the build profile (on or native)", PROPERTY)
        .isIn("on", "native");
    return FeatureState.Status.valueOf(property.toUpperCase(Locale.ROOT));
  }

  /** {@link #expected()} as the endpoint writes it. */
  public static String expectedName() {
    return expected().name().toLowerCase(Locale.ROOT);
  }

  /** Whether the client on this line sends no cancel for a stream closed after {@code last}. */
  public static boolean clientSkipsCancelAtLast() {
    return expected() == FeatureState.Status.NATIVE;
  }

  /**
   * The counter that a point select closed on its only row (marked {@code last}, trailers a little
   * later) moves on this line: skipped where the guard skips the client's cancel; drained where the
   * client sends none and the guard only watches the stream drain.
   */
  public static long closedAtLastCount(SpannerTuningState state) {
    return clientSkipsCancelAtLast()
        ? state.streamEndGuardDrainedCount()
        : state.streamEndGuardSkippedCount();
  }

  /** The endpoint's field of {@link #closedAtLastCount}. */
  public static String closedAtLastField() {
    return clientSkipsCancelAtLast() ? "streamEndGuardDrained" : "streamEndGuardSkipped";
  }
}
