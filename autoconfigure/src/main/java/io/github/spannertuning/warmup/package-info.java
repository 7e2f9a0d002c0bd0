/**
 * The warm-up of a client's read path: reads through the client's own database client before the
 * application takes traffic, so that a new JVM's first burst does not load and interpret the
 * client's code. {@link io.github.spannertuning.warmup.ReadBudget} decides, over numbers, how many
 * reads and until when; {@link io.github.spannertuning.warmup.ReadWarmUp} sends them.
 *
 * <p><b>Internal.</b> Applications warm up with {@code SpannerTuningState.warmUp} (or the starter's
 * readiness), configured by {@code SpannerTuning.Builder.warmUpReads}.
 */
package io.github.spannertuning.warmup;
