/**
 * The runtime: what spanner-tuning does to a Google Cloud Spanner client, with no Spring in it.
 *
 * <p>Its public API: {@link io.github.spannertuning.client.SpannerTuning} (configure it, then apply
 * it to a {@code SpannerOptions.Builder}), {@link
 * io.github.spannertuning.client.SpannerTuningState} (one client's feature states, counters,
 * per-channel load and runtime switches), {@link io.github.spannertuning.client.Feature}, {@link
 * io.github.spannertuning.client.FeatureState}, {@link
 * io.github.spannertuning.client.ClientVersions} and {@link
 * io.github.spannertuning.client.ChannelLoad} (the per-channel load the meters and the endpoint
 * read). {@link io.github.spannertuning.client.ClientReflection} is public for the starter's native
 * image hints only. Everything else in the package is package-private: the rpc subclass, the
 * channel picker, the stream guard and the interceptors.
 */
package io.github.spannertuning.client;
