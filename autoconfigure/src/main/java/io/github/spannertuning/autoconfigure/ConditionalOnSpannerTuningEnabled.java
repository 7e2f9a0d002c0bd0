package io.github.spannertuning.autoconfigure;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;

/**
 * Matches unless {@code spanner.tuning.enabled} is {@code false}: the master switch, also reachable
 * as the environment variable {@code SPANNER_TUNING_ENABLED=false}.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Documented
@ConditionalOnBooleanProperty(name = "spanner.tuning.enabled", matchIfMissing = true)
public @interface ConditionalOnSpannerTuningEnabled {}
