package io.github.spannertuning.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;

/**
 * Matches unless {@code spanner.tuning.enabled} is {@code false}: the master switch, also reachable
 * as the environment variable {@code SPANNER_TUNING_ENABLED=false}.
 *
 * <p>{@code @ConditionalOnProperty}, not Boot 3.5's {@code @ConditionalOnBooleanProperty}: on Boot
 * 3.3 and 3.4 that annotation does not exist, Spring drops it without a word, and the switch would
 * stop working.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Documented
@ConditionalOnProperty(name = "spanner.tuning.enabled", havingValue = "true", matchIfMissing = true)
public @interface ConditionalOnSpannerTuningEnabled {}
