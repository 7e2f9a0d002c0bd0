package io.github.spannertuning.pool;

import com.google.cloud.spanner.SpannerOptions;
import java.util.function.UnaryOperator;

/**
 * Where spanner-tuning's routing steps aside for a channel choice the client makes another way, and
 * why: a client that sends reads to endpoints of its own choosing (location-aware routing), and a
 * dynamic pool on a client before 6.119, whose calls name their channel by affinity keys the pool
 * binds and unbinds as its channels come and go. There the routing features and hedging are
 * unsupported, the client's pool is left as it is, and its own choice stays in charge. From 6.119,
 * routing follows the dynamic pool ({@link DynamicChannels}).
 */
public final class RoutingAside {

  /** The environment variable that turns on the client's location-aware routing. */
  public static final String LOCATION_API_ENV = "GOOGLE_SPANNER_EXPERIMENTAL_LOCATION_API";

  public static final String DYNAMIC_POOL = PoolRouting.DYNAMIC_POOL_WITHOUT_REFERENCES;

  public static final String LOCATION_API =
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
  public static String reason(SpannerOptions options, UnaryOperator<String> environment) {
    if (!PoolRouting.hasChannelReferences() && dynamicChannelPool(options)) {
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
