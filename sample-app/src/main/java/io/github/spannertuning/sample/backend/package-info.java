/**
 * Which Spanner backend the sample runs on (an emulator already running, the official emulator
 * started by the sample, Cloud Spanner, or the embedded fake), and the embedded fake itself.
 */
package io.github.spannertuning.sample.backend;
