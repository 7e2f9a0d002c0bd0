package io.github.spannertuning.client;

import com.google.cloud.spanner.SpannerOptions;
import java.util.function.UnaryOperator;

/**
 * Where spanner-tuning's routing steps aside for a channel choice the client makes another way, and
 * why. The picker binds one affinity key per channel of a fixed pool when the client is built, and
 * routes calls through grpc-gcp's pool: neither fits a pool whose channels come and go, nor a
 * client that sends reads to endpoints of its own choosing. There the routing features are
 * unsupported, the client's pool is left as it is, and its own choice stays in charge.
 */
final class RoutingAside {

  /** The environment variable that turns on the client's location-aware routing. */
  static final String LOCATION_API_ENV = "GOOGLE_SPANNER_EXPERIMENTAL_LOCATION_API";

  static final String DYNAMIC_POOL =
      "the client's dynamic channel pool is on (enableDynamicChannelPool()): its channels come and"
          + " go, and the picker binds one key per channel of a fixed pool when the client is"
          + " built; the client's pool and its own least-busy pick are left as they are";

  static final String LOCATION_API =
      "location-aware routing is on ("
          + LOCATION_API_ENV
          + "=true): the client picks an endpoint per request by key range and sends routed reads"
          + " past the channel pool; spanner-tuning's routing steps aside so that the two do not"
          + " fight";

  private RoutingAside() {}

  /**
   * Why routing steps aside on a client built from these options, or {@code null} when it does not.
   *
   * @param environment reads an environment variable ({@code System::getenv} outside tests)
   */
  static String reason(SpannerOptions options, UnaryOperator<String> environment) {
    if (dynamicChannelPool(options)) {
      return DYNAMIC_POOL;
    }
    if (locationApi(options) || Boolean.parseBoolean(environment.apply(LOCATION_API_ENV))) {
      return LOCATION_API;
    }
    return null;
  }

  private static boolean dynamicChannelPool(SpannerOptions options) {
    try {
      return options.isDynamicChannelPoolEnabled();
    } catch (LinkageError ex) {
      // A client from before the dynamic pool.
      return false;
    }
  }

  private static boolean locationApi(SpannerOptions options) {
    try {
      return options.isEnableLocationApi();
    } catch (LinkageError ex) {
      return false;
    }
  }
}
