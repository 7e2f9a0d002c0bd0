package io.github.spannertuning.pool;

import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.grpc.Context;

/**
 * A stream the {@link CountingInterceptor} reports to: the stream-end guard's stream learns the
 * sub-channel of its first attempt's call as the call is made, and hears of that call's OK close
 * before gax tells its consumer. The stream reaches the interceptor in the call's context: in the
 * {@link ChannelReservation} of a routed call, or under {@link #STARTING} while it starts a call
 * routing left to the client.
 */
public interface StreamLink {

  /**
   * The stream being started on this thread, for the interceptor that sees its gRPC call made. Set
   * only while the stream starts: gax creates the first attempt's call on the starting thread.
   */
  Context.Key<StreamLink> STARTING = Context.key("spanner-tuning-guarded-stream");

  /**
   * Whether the gRPC call now being created is this stream's first attempt, the one whose end the
   * interceptor reports: true once.
   */
  boolean linkTransport();

  /** The linked call was made on this sub-channel. */
  void onChannel(ChannelStats channel);

  /** The linked call closed with status OK. */
  void transportClosedOk();

  /** Whether this is an attempt of a hedged read, which records itself in an experiment. */
  boolean hedgeAttempt();

  /**
   * A cancel this stream decided while its linked call was open reached the call after it closed,
   * having met the call's end on its way down through gax: returns whether to drop it there. Below,
   * it would do nothing but reach the application's interceptors as a cancel of a call that ended.
   */
  boolean dropCancelOfClosedCall();

  /** The stream being started on this thread, linked to a call being created on {@code channel}. */
  static StreamLink linkStarting(ChannelStats channel) {
    return link(STARTING.get(), channel);
  }

  /**
   * Links {@code starting} to the call now being created on {@code channel} if that call is its
   * first attempt; returns the stream, or {@code null} when there is none to link.
   */
  static StreamLink link(StreamLink starting, ChannelStats channel) {
    if (starting != null && starting.linkTransport()) {
      starting.onChannel(channel);
      return starting;
    }
    return null;
  }
}
