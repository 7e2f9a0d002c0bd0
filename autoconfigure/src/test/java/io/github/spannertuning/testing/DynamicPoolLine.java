package io.github.spannertuning.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.client.FeatureState;
import java.util.Locale;

/**
 * What the build expects of routing on grpc-gcp's dynamic channel pool on the client line the tests
 * run on, from the system property its profile sets: {@code on} where each call carries a grpc-gcp
 * channel reference that routing can set (6.119+), {@code unsupported} before that (6.113, whose
 * dynamic pool names channels by affinity keys it binds and unbinds itself). Never read from the
 * code under test.
 */
public final class DynamicPoolLine {

  public static final String PROPERTY = "spanner-tuning.expected.dynamic-pool-routing";

  private DynamicPoolLine() {}

  /** Single-use distribution's state on a dynamic pool on this line, configured on. */
  public static FeatureState.Status expected() {
    String property = System.getProperty(PROPERTY);
    assertThat(property)
        .as("system property %s, set by the build profile (on or unsupported)", PROPERTY)
        .isIn("on", "unsupported");
    return FeatureState.Status.valueOf(property.toUpperCase(Locale.ROOT));
  }

  /** Whether routing follows the dynamic pool on this line. */
  public static boolean routes() {
    return expected() == FeatureState.Status.ON;
  }
}
