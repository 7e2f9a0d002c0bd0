package io.github.spannertuning.autoconfigure;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches unless Boot's {@code management.observations.enable.*} turns off the observations named
 * {@code spanner.client}: as Boot reads that map, the longest of {@code spanner.client}, {@code
 * spanner} and {@code all} that is set decides. Checked here, and not only by Boot's predicate on
 * the observations, so that the frontend's meters, which are no observations, go with them.
 */
class SpannerClientObservationsEnabledCondition extends SpringBootCondition {

  private static final String PREFIX = "management.observations.enable.";

  @Override
  public ConditionOutcome getMatchOutcome(
      ConditionContext context, AnnotatedTypeMetadata metadata) {
    Environment environment = context.getEnvironment();
    for (String key : new String[] {"spanner.client", "spanner", "all"}) {
      Boolean enabled = environment.getProperty(PREFIX + key, Boolean.class);
      if (enabled != null) {
        return enabled
            ? ConditionOutcome.match(PREFIX + key + " is true")
            : ConditionOutcome.noMatch(PREFIX + key + " is false");
      }
    }
    return ConditionOutcome.match("spanner.client observations are not turned off");
  }
}
