package io.github.spannertuning.client;

/**
 * Every rule that decides a feature's state, in one place: from the configuration and the client on
 * the classpath when a builder is tuned ({@link SpannerTuning#applyTo}), from what the built client
 * shows ({@link SpannerTuningState}), and on a switch at runtime. The rpc and the picker only
 * report what they found; what state that puts a feature in is decided here.
 */
final class FeatureStates {

  static final String GRPC_GCP_ABSENT = "grpc-gcp is not on the classpath";

  static final String GRPC_GCP_OFF =
      "the grpc-gcp extension is off: gax's channel pool does not pick channels by load";

  static final String SWITCHED_OFF = "switched off at runtime";

  /** A feature switched off for a stock slice of a running experiment. */
  static final FeatureState STOCK_ARM =
      FeatureState.off("switched off for the stock slice of a running experiment");

  private static final String REPLACES_NATIVE_PICK =
      "replaces the client's least-busy pick with one by expected latency";

  private FeatureStates() {}

  /**
   * grpc-gcp, as the builder has it.
   *
   * @param readable whether this client version lets the builder's switch be read
   * @param enabled whether the builder has grpc-gcp on already
   */
  static FeatureState grpcGcp(boolean configured, boolean readable, boolean enabled) {
    if (!configured) {
      return FeatureState.offByConfiguration();
    }
    if (!ClientSupport.GRPC_GCP_PRESENT) {
      return FeatureState.unsupported(GRPC_GCP_ABSENT);
    }
    if (!readable) {
      return FeatureState.unsupported(
          "cannot tell whether this client version has grpc-gcp switched on");
    }
    return enabled ? FeatureState.nativeIn("the client already uses grpc-gcp") : FeatureState.on();
  }

  /**
   * The stream-end guard.
   *
   * @param hookMissing why the rpc cannot be installed on this client, or {@code null}
   */
  static FeatureState streamEndGuard(boolean configured, String hookMissing) {
    return streamEndGuard(configured, hookMissing, ClientSupport.CLIENT_CLEARS_CALL_AT_LAST);
  }

  /**
   * The stream-end guard on a client that does, or does not, skip the cancel at {@code last}
   * itself.
   *
   * @param hookMissing why the rpc cannot be installed on this client, or {@code null}
   * @param clientClearsCallAtLast whether the client drops its call when it takes the message
   *     marked {@code last} ({@link ClientSupport#CLIENT_CLEARS_CALL_AT_LAST})
   */
  static FeatureState streamEndGuard(
      boolean configured, String hookMissing, boolean clientClearsCallAtLast) {
    if (!configured) {
      return FeatureState.offByConfiguration();
    }
    if (hookMissing != null) {
      return FeatureState.unsupported(hookMissing);
    }
    return clientClearsCallAtLast ? guardSplit() : FeatureState.on();
  }

  /**
   * The guard where the client skips the cancel at {@code last} itself: the state is {@code
   * native}, and its reason names what spanner-tuning still does there.
   */
  static FeatureState guardSplit() {
    return FeatureState.nativeIn(
        "google-cloud-spanner "
            + ClientVersions.detected().spanner()
            + " "
            + GUARD_NATIVE_PART
            + "; "
            + GUARD_ADDED_PART);
  }

  /** What the client does itself from 6.125 on. */
  static final String GUARD_NATIVE_PART =
      "sends no cancel for a stream closed after its last message (it drops the call at last)";

  /** What spanner-tuning still adds where the client does that itself. */
  static final String GUARD_ADDED_PART =
      "spanner-tuning adds: a stream finished at last is cancelled at once when its connection has"
          + " no stream slot to spare (within a budget of resets per connection), a finished stream whose trailers do not come is cancelled"
          + " after the drain timeout, and the counters";

  /**
   * Whether spanner-tuning does work for the stream-end guard in this state: on, or native where
   * the client skips the cancel itself and spanner-tuning adds the rest ({@link #guardSplit()}).
   */
  static boolean guardWorks(FeatureState state) {
    return state.status() == FeatureState.Status.ON || state.status() == FeatureState.Status.NATIVE;
  }

  /**
   * Whether a feature in this state can be switched at runtime: not one the client does all by
   * itself, not one this client lacks a hook for. The guard's split state can: spanner-tuning's
   * part of it switches.
   */
  static boolean isSwitchable(Feature feature, FeatureState state) {
    return switch (state.status()) {
      case UNSUPPORTED -> false;
      case NATIVE -> feature == Feature.STREAM_END_GUARD;
      default -> true;
    };
  }

  /**
   * Single-use distribution.
   *
   * @param hookMissing why single-use routing cannot hook into this client, or {@code null}
   * @param grpcGcpOn whether the client will use grpc-gcp, as far as the builder tells
   */
  static FeatureState singleUse(boolean configured, String hookMissing, boolean grpcGcpOn) {
    return routing(Feature.SINGLE_USE_DISTRIBUTION, configured, hookMissing, grpcGcpOn);
  }

  private static FeatureState routing(
      Feature feature, boolean configured, String hookMissing, boolean grpcGcpOn) {
    if (!configured) {
      return FeatureState.offByConfiguration();
    }
    if (!ClientSupport.GRPC_GCP_PRESENT) {
      return FeatureState.unsupported(GRPC_GCP_ABSENT);
    }
    if (!grpcGcpOn) {
      return FeatureState.unsupported(GRPC_GCP_OFF);
    }
    if (hookMissing != null) {
      return withoutPicker(feature, hookMissing, ClientSupport.NATIVE_SINGLE_USE_ROUTING);
    }
    if (!ClientSupport.AFFINITY_CONTEXT_PRESENT) {
      return withoutPicker(
          feature,
          "grpc-gcp "
              + ClientVersions.detected().grpcGcp()
              + " cannot take an affinity key per call"
              + ((feature == Feature.HEDGING) ? ", which sends a hedge to another channel" : ""),
          ClientSupport.NATIVE_SINGLE_USE_ROUTING);
    }
    return on(feature);
  }

  /**
   * Hedged reads: they need the picker to send a hedge to another channel, so they hook in where
   * routing does, on a client that has no hedging of its own. Off by default: a client that could
   * not hedge says so as {@code unsupported} whatever the configuration, so that nobody switches it
   * on at runtime to find it cannot be.
   *
   * @param hookMissing why routing cannot hook into this client, or {@code null}
   * @param grpcGcpOn whether the client will use grpc-gcp, as far as the builder tells
   */
  static FeatureState hedging(boolean configured, String hookMissing, boolean grpcGcpOn) {
    FeatureState supported = routing(Feature.HEDGING, true, hookMissing, grpcGcpOn);
    return (configured || !supported.isApplied()) ? supported : FeatureState.offByConfiguration();
  }

  /**
   * Transaction routing: the same picker as single-use distribution, on the unary methods of a
   * transaction's calls too.
   *
   * @param hookMissing why routing cannot hook into this client, or {@code null}
   * @param grpcGcpOn whether the client will use grpc-gcp, as far as the builder tells
   */
  static FeatureState transactionRouting(
      boolean configured, String hookMissing, boolean grpcGcpOn) {
    if (hookMissing == null && !ClientSupport.TRANSACTION_METHODS_MATCH) {
      hookMissing =
          "GapicSpannerRpc in google-cloud-spanner "
              + ClientVersions.detected().spanner()
              + " does not have the transaction methods transaction routing hooks into";
    }
    return routing(Feature.TRANSACTION_ROUTING, configured, hookMissing, grpcGcpOn);
  }

  /**
   * Single-use distribution or transaction routing once the client is built: where the built
   * options have grpc-gcp off after all, there is no pool that picks channels by load.
   */
  static FeatureState routingBuilt(FeatureState current, boolean grpcGcpEnabled) {
    if (!grpcGcpEnabled
        && (current.status() == FeatureState.Status.ON
            || current.status() == FeatureState.Status.NATIVE)) {
      return FeatureState.unsupported(GRPC_GCP_OFF);
    }
    return current;
  }

  /**
   * Single-use distribution or transaction routing where spanner-tuning cannot route: the client's
   * own least-busy pick stays in charge where it has one; elsewhere calls go where the client sends
   * them.
   *
   * @param clientPicksLeastBusy whether this client version sends single-use reads and each
   *     transaction to the least busy channel itself
   */
  static FeatureState withoutPicker(Feature feature, String reason, boolean clientPicksLeastBusy) {
    return (clientPicksLeastBusy && feature != Feature.HEDGING)
        ? FeatureState.nativeIn(nativeSingleUseReason() + "; " + reason)
        : FeatureState.unsupported(reason);
  }

  /** A feature switched at runtime. */
  static FeatureState switched(Feature feature, boolean enabled) {
    return enabled ? on(feature) : FeatureState.off(SWITCHED_OFF);
  }

  /** The state of a feature spanner-tuning applies on this client version. */
  static FeatureState on(Feature feature) {
    if (feature == Feature.STREAM_END_GUARD) {
      return ClientSupport.CLIENT_CLEARS_CALL_AT_LAST ? guardSplit() : FeatureState.on();
    }
    return (isRouting(feature) && ClientSupport.NATIVE_SINGLE_USE_ROUTING)
        ? FeatureState.on(REPLACES_NATIVE_PICK)
        : FeatureState.on();
  }

  /** Whether the feature is one of the two that route calls through the picker. */
  static boolean isRouting(Feature feature) {
    return feature == Feature.SINGLE_USE_DISTRIBUTION || feature == Feature.TRANSACTION_ROUTING;
  }

  /**
   * Whether the feature needs the picker, which is set up when the client is built: the routing
   * features and hedging, whose hedge goes to another channel by it.
   */
  static boolean needsPicker(Feature feature) {
    return isRouting(feature) || feature == Feature.HEDGING;
  }

  /** Why the client's own routing is left in charge, where it has one. */
  private static String nativeSingleUseReason() {
    return "google-cloud-spanner "
        + ClientVersions.detected().spanner()
        + " sends each single-use read and each transaction to the least busy channel itself";
  }
}
