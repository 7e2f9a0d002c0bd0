package io.github.spannertuning.client;

import com.google.api.core.ApiFuture;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.XGoogSpannerRequestId;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.TransactionSelector;
import java.util.Map;

/**
 * The client's own {@link GapicSpannerRpc}, with the stream-end guard and single-use routing added
 * where the client hands out streams and queries. A subclass rather than a proxy: the client closes
 * a {@code GapicSpannerRpc} with {@code shutdownNow()} and anything else with a graceful shutdown
 * that waits for in-flight calls.
 *
 * <p>The path of one single-use query, with both features on:
 *
 * <ol>
 *   <li>The client calls {@link #executeQuery}: the request is a single-use read ({@link
 *       LeastBusyRouting#isSingleUse}), so the client's own channel choice is dropped from its
 *       options ({@link LeastBusyRouting#withoutChannelHint}).
 *   <li>A {@link GuardedStream} is put between the call and the client's consumer.
 *   <li>{@link ChannelPicker#enter} picks a channel by the wait the call may expect there, counts
 *       the call on it, and attaches a context holding grpc-gcp's affinity key for that channel and
 *       the {@link ChannelReservation}, which carries the guarded stream.
 *   <li>The client's own {@code executeQuery} runs; gax creates the gRPC call on this thread, and
 *       grpc-gcp sends it to the sub-channel the affinity key names.
 *   <li>On that sub-channel the {@link CountingInterceptor} claims the reservation (moving the
 *       count should the call have landed elsewhere), tells the guarded stream its sub-channel
 *       ({@link GuardedStream#linkStarting}) and wraps the call to count and time it.
 *   <li>{@link ChannelPicker#exit} restores the caller's context, and gives the count back if no
 *       call claimed it.
 *   <li>The first response times the sub-channel's {@link ChannelLatency}; the guarded stream notes
 *       the message marked {@code last} before the consumer sees it.
 *   <li>The application closes the result set at that message: the guarded stream drains instead of
 *       cancelling, unless its sub-channel has too few stream slots free.
 *   <li>The trailers arrive: the interceptor's call tells the guarded stream it closed OK ({@link
 *       GuardedStream#transportClosedOk}), which ends the drain, then stops counting the call in
 *       flight; gax's report of the end a hop later is dropped.
 * </ol>
 *
 * <p>A call that is neither routed nor guarded (a query in a transaction, a commit) meets only step
 * 5: counted on its sub-channel from its start to its close.
 */
final class TunedSpannerRpc extends ObservedSpannerRpc {

  /** {@code null} when single-use distribution is not on for this client. */
  private final ChannelPicker picker;

  TunedSpannerRpc(SpannerOptions options, SpannerTuningState state) {
    super(options, state);
    this.picker = picker(options, state);
  }

  /**
   * Sets up the pool before the client's first call; that is the only moment its keys can be bound
   * one per channel.
   */
  private ChannelPicker picker(SpannerOptions options, SpannerTuningState state) {
    if (!state.isActive(Feature.SINGLE_USE_DISTRIBUTION)) {
      state.builtWithPicker(false);
      return null;
    }
    try {
      ChannelPicker picker =
          ChannelPicker.install(this, options.getNumChannels(), state.channelLoad());
      state.builtWithPicker(true);
      return picker;
    } catch (RuntimeException ex) {
      state.builtWithPicker(false);
      state.pickerUnavailable("cannot set up the channel pool: " + ex.getMessage());
      return null;
    }
  }

  @Override
  public StreamingCall executeQuery(
      ExecuteSqlRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      XGoogSpannerRequestId requestId,
      boolean routeToLeader) {
    return stream(
        request.hasTransaction(),
        request.getTransaction(),
        consumer,
        options,
        (target, callOptions) ->
            super.executeQuery(request, target, callOptions, requestId, routeToLeader));
  }

  @Override
  public StreamingCall read(
      ReadRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      XGoogSpannerRequestId requestId,
      boolean routeToLeader) {
    return stream(
        request.hasTransaction(),
        request.getTransaction(),
        consumer,
        options,
        (target, callOptions) ->
            super.read(request, target, callOptions, requestId, routeToLeader));
  }

  @Override
  public ApiFuture<ResultSet> executeQueryAsync(
      ExecuteSqlRequest request, Map<Option, ?> options, boolean routeToLeader) {
    if (!routeToLeastBusy(request.hasTransaction(), request.getTransaction())) {
      return super.executeQueryAsync(request, options, routeToLeader);
    }
    ChannelReservation reservation = this.picker.enter(null);
    try {
      return super.executeQueryAsync(
          request, LeastBusyRouting.withoutChannelHint(options), routeToLeader);
    } finally {
      this.picker.exit(reservation);
    }
  }

  private StreamingCall stream(
      boolean hasTransaction,
      TransactionSelector selector,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      GuardedStream.Starter starter) {
    boolean leastBusy = routeToLeastBusy(hasTransaction, selector);
    Map<Option, ?> callOptions = leastBusy ? LeastBusyRouting.withoutChannelHint(options) : options;
    if (!this.state.isActive(Feature.STREAM_END_GUARD)) {
      return leastBusy
          ? routed(consumer, callOptions, starter, null)
          : starter.start(consumer, callOptions);
    }
    if (!leastBusy) {
      return GuardedStream.start(consumer, callOptions, this.state, starter);
    }
    GuardedStream guarded = new GuardedStream(consumer, this.state);
    return guarded.attach(routed(guarded, callOptions, starter, guarded));
  }

  private StreamingCall routed(
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      GuardedStream.Starter starter,
      GuardedStream guarded) {
    ChannelReservation reservation = this.picker.enter(guarded);
    try {
      return starter.start(consumer, options);
    } finally {
      this.picker.exit(reservation);
    }
  }

  private boolean routeToLeastBusy(boolean hasTransaction, TransactionSelector selector) {
    if (this.picker != null
        && this.state.isActive(Feature.SINGLE_USE_DISTRIBUTION)
        && LeastBusyRouting.isSingleUse(hasTransaction, selector)) {
      this.state.singleUseRouted();
      return true;
    }
    return false;
  }
}
