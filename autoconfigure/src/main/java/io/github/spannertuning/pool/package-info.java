/**
 * The client's channel pool as spanner-tuning sees and steers it: the per-channel load the meters,
 * the endpoint and routing read ({@link io.github.spannertuning.pool.ChannelLoad}, kept by the
 * counting interceptor on every sub-channel), and routing's wiring into grpc-gcp ({@link
 * io.github.spannertuning.pool.PoolRouting}), over a fixed pool bound one affinity key per channel
 * or grpc-gcp's dynamic pool followed as its channels come and go. The rpc in {@code client} asks
 * {@code PoolRouting} for a {@link io.github.spannertuning.pool.ChannelReservation} and makes its
 * call inside it; nothing here calls the rpc back. Which channel a call goes to is routing's
 * decision ({@code io.github.spannertuning.routing}), made over numbers; this package hands it the
 * channels and carries it out.
 *
 * <p><b>Internal.</b> As {@code routing} is: its types are public only because {@code client},
 * which holds the rpc and the stream guard, and the starter's meters and endpoint are other
 * packages. They are not API: applications use {@code client}'s {@code SpannerTuning} and {@code
 * SpannerTuningState} (whose {@code channelLoad()} the meters and endpoint read), and anything here
 * may change in any release.
 */
package io.github.spannertuning.pool;
