/**
 * Each Spanner call as a Micrometer observation: {@code spanner.client.operation} per operation,
 * {@code spanner.client.attempt} per gRPC call, and the frontend's own time from Spanner's {@code
 * server-timing} header as {@code spanner.client.server.duration}. Knows Micrometer's Observation
 * API and nothing of the client's internals: the hooks in {@code client} and {@code pool} feed it
 * through {@link io.github.spannertuning.client.CallObserver}.
 */
package io.github.spannertuning.observation;
