/**
 * The load benchmark: a frontend of real loopback gRPC with a latency model, real Spanner clients
 * configured as stock, tuned and each feature alone, the workloads and the capacity sweep, and the
 * report that compares them. Run by {@code benchmarks/run.sh}; not part of the published artifacts.
 */
package io.github.spannertuning.benchmarks;
