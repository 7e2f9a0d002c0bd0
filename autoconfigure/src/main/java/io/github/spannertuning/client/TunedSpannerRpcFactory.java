package io.github.spannertuning.client;

import com.google.cloud.ServiceRpc;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.SpannerRpcFactory;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.pool.RoutingAside;
import java.util.logging.Logger;

/**
 * Creates a {@link TunedSpannerRpc} in place of the client's default rpc; on a client whose
 * streaming methods take no request id, a {@link GuardOnlySpannerRpc}; where neither matches this
 * client version, an {@link ObservedSpannerRpc} that only reports the client's close.
 */
final class TunedSpannerRpcFactory implements SpannerRpcFactory {

  private static final Logger logger = Logger.getLogger(TunedSpannerRpcFactory.class.getName());

  private final SpannerTuningState state;

  TunedSpannerRpcFactory(SpannerTuningState state) {
    this.state = state;
  }

  SpannerTuningState state() {
    return this.state;
  }

  @Override
  public ServiceRpc create(SpannerOptions options) {
    this.state.resolve(
        options.isGrpcGcpExtensionEnabled(),
        options.getNumChannels(),
        PoolRouting.dynamic(options),
        options.getOpenTelemetry());
    this.state.builtInMetricsExport(ClientSupport.builtInMetricsExport(options));
    String routingAside = RoutingAside.reason(options, this.state.tuning().environment());
    if (routingAside != null) {
      this.state.routingStepsAside(routingAside);
    }
    ServiceRpc rpc;
    if (!this.state.rpcInstalled()) {
      rpc = new ObservedSpannerRpc(options, this.state);
    } else if (ClientSupport.RPC_METHODS_MATCH) {
      rpc = new TunedSpannerRpc(options, this.state);
    } else {
      rpc = new GuardOnlySpannerRpc(options, this.state);
    }
    if (this.state.tuning().isLogWhenBuilt()) {
      logger.info(
          "spanner-tuning: tuned Spanner client of project '"
              + options.getProjectId()
              + "' "
              + this.state.summary());
    }
    return rpc;
  }
}
