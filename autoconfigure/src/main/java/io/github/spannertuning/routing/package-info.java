/**
 * Routing's decisions, as logic over numbers: which connection a call goes to ({@link
 * io.github.spannertuning.routing.ChannelPicker} over {@link
 * io.github.spannertuning.routing.Connection}s and their {@link
 * io.github.spannertuning.routing.ChannelLatency}), when a read is hedged and whether the budget
 * allows it, and the {@link io.github.spannertuning.routing.Imbalance} figure that shows how evenly
 * the calls fell. Nothing here imports a gRPC or Spanner type or reads a clock of its own: callers
 * pass the time, so every decision is tested with fed latencies and a test clock.
 *
 * <p><b>Internal.</b> The package follows grpc-java's {@code io.grpc.internal}: its types are
 * public only because the {@code io.github.spannertuning.client} package, which holds the hooks
 * into the Spanner client and calls these decisions, is another package, and Java has no narrower
 * visibility across packages. They are not API: applications use {@code client}'s {@code
 * SpannerTuning} and {@code SpannerTuningState}, and anything here may change in any release.
 * Spring Boot's {@code *.autoconfigure.*} model (public classes whose use is by convention through
 * the framework) fits code that Spring calls; this code is called by the client package alone.
 */
package io.github.spannertuning.routing;
