package io.github.spannertuning.client;

import com.google.api.core.ApiFuture;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.XGoogSpannerRequestId;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.TransactionSelector;
import io.grpc.Context;
import java.util.Map;

/**
 * The client's own {@link GapicSpannerRpc}, with the stream-end guard and single-use routing
 * added where the client hands out streams and queries. A subclass rather than a proxy: the
 * client closes a {@code GapicSpannerRpc} with {@code shutdownNow()} and anything else with a
 * graceful shutdown that waits for in-flight calls.
 */
final class TunedSpannerRpc extends GapicSpannerRpc {

  /** Starts a stream on the client's own rpc, with the consumer and options given. */
  @FunctionalInterface
  private interface StreamStarter {
    StreamingCall start(ResultStreamConsumer consumer, Map<Option, ?> options);
  }

  private final SpannerTuningState state;

  TunedSpannerRpc(SpannerOptions options, SpannerTuningState state) {
    super(options);
    this.state = state;
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
    Context previous = LeastBusyRouting.enter();
    try {
      return super.executeQueryAsync(
          request, LeastBusyRouting.withoutChannelHint(options), routeToLeader);
    } finally {
      LeastBusyRouting.exit(previous);
    }
  }

  @Override
  public void shutdown() {
    try {
      super.shutdown();
    } finally {
      this.state.closed();
    }
  }

  @Override
  public void shutdownNow() {
    try {
      super.shutdownNow();
    } finally {
      this.state.closed();
    }
  }

  private StreamingCall stream(
      boolean hasTransaction,
      TransactionSelector selector,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      StreamStarter starter) {
    boolean leastBusy = routeToLeastBusy(hasTransaction, selector);
    if (!this.state.isActive(Feature.STREAM_END_GUARD)) {
      if (!leastBusy) {
        return starter.start(consumer, options);
      }
      Context previous = LeastBusyRouting.enter();
      try {
        return starter.start(consumer, LeastBusyRouting.withoutChannelHint(options));
      } finally {
        LeastBusyRouting.exit(previous);
      }
    }
    GuardedStream guarded = new GuardedStream(consumer, this.state);
    // The channel-load interceptor reads the stream from the context to report the end of its
    // call: gax creates the first attempt's gRPC call on this thread, before start returns.
    Context context = Context.current().withValue(GuardedStream.STARTING, guarded);
    if (leastBusy) {
      context = LeastBusyRouting.within(context);
    }
    Context previous = context.attach();
    StreamingCall call;
    try {
      call =
          starter.start(
              guarded, leastBusy ? LeastBusyRouting.withoutChannelHint(options) : options);
    } finally {
      context.detach(previous);
    }
    return guarded.attach(call);
  }

  private boolean routeToLeastBusy(
      boolean hasTransaction, TransactionSelector selector) {
    if (this.state.isActive(Feature.SINGLE_USE_DISTRIBUTION)
        && LeastBusyRouting.isSingleUse(hasTransaction, selector)) {
      this.state.singleUseRouted();
      return true;
    }
    return false;
  }
}
