/**
 * What spanner-tuning writes on the Spanner client's own OpenTelemetry spans: the attribute names
 * and values ({@code spanner_tuning.channel}, {@code spanner_tuning.route}, {@code
 * spanner_tuning.stream_end}, {@code spanner_tuning.attempt}, {@code spanner_tuning.hedge.won}, a
 * public contract, listed in docs/metrics-and-endpoint.md), whether a client traces at all, and the
 * hand-over from the call being made to the channel interceptor that sees where it went. No Spring
 * in it, and nothing of the client's internals: channels are their pool index.
 *
 * <p><b>Internal.</b> As {@code io.github.spannertuning.routing}, {@link
 * io.github.spannertuning.trace.Traces} is public only because the {@code
 * io.github.spannertuning.client} package, which holds the hooks into the Spanner client and calls
 * it, is another package. It is not API: applications switch traces on through the client's
 * OpenTelemetry, and read the attributes on its spans.
 */
package io.github.spannertuning.trace;
