/**
 * The runtime: what spanner-tuning does to a Google Cloud Spanner client, with no Spring in it.
 *
 * <p>Its public API: {@link io.github.spannertuning.client.SpannerTuning} (configure it, then apply
 * it to a {@code SpannerOptions.Builder}), {@link
 * io.github.spannertuning.client.SpannerTuningState} (one client's feature states, counters,
 * per-channel load and runtime switches), {@link io.github.spannertuning.client.Feature}, {@link
 * io.github.spannertuning.client.FeatureState} and {@link
 * io.github.spannertuning.client.ClientVersions}; the per-channel load the meters and the endpoint
 * read is the pool package's {@link io.github.spannertuning.pool.ChannelLoad}. Everything else here
 * is package-private: the rpc subclass, the stream guard, hedged reads and the feature states'
 * rules. What it reaches by reflection is listed in {@code reflect}. Routing's decisions are in
 * {@code routing}, its wiring into the client's channel pool in {@code pool}.
 */
package io.github.spannertuning.client;
