/**
 * JMH microbenchmarks of the per-call work the starter adds, in the runtime's package so that they
 * can drive its package-private pieces directly.
 */
package io.github.spannertuning.client;
