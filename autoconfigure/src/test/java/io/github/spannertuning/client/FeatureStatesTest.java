package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.client.FeatureState.Status;
import io.github.spannertuning.testing.GuardLine;
import org.junit.jupiter.api.Test;

/**
 * The rules that decide a feature's state, given what the builder, the client line and the rpc
 * report. The client lines tested all have grpc-gcp on the classpath and a picker to install, as
 * the build pins them.
 */
class FeatureStatesTest {

  private static final String HOOK_MISSING = "the application set its own SpannerRpcFactory";

  @Test
  void theConfigurationTurnsAFeatureOffWhateverTheClientHas() {
    assertThat(FeatureStates.streamEndGuard(false, HOOK_MISSING))
        .isEqualTo(FeatureState.offByConfiguration());
    assertThat(FeatureStates.singleUse(false, HOOK_MISSING, false))
        .isEqualTo(FeatureState.offByConfiguration());
    assertThat(FeatureStates.grpcGcp(false, false, true))
        .isEqualTo(FeatureState.offByConfiguration());
    assertThat(FeatureState.offByConfiguration().byConfiguration()).isTrue();
  }

  @Test
  void aMissingHookLeavesTheGuardUnsupportedWithItsReason() {
    assertThat(FeatureStates.streamEndGuard(true, HOOK_MISSING))
        .isEqualTo(FeatureState.unsupported(HOOK_MISSING));
    assertThat(FeatureStates.streamEndGuard(true, null, false)).isEqualTo(FeatureState.on());
  }

  @Test
  void grpcGcpIsNativeWhereTheClientHasItOnAndOnWhereSpannerTuningSwitchesIt() {
    assertThat(FeatureStates.grpcGcp(true, true, true).status()).isEqualTo(Status.NATIVE);
    assertThat(FeatureStates.grpcGcp(true, true, false)).isEqualTo(FeatureState.on());
    assertThat(FeatureStates.grpcGcp(true, false, false).status()).isEqualTo(Status.UNSUPPORTED);
  }

  @Test
  void singleUseDistributionNeedsGrpcGcpAtTuningAndOnceBuilt() {
    assertThat(FeatureStates.singleUse(true, null, false))
        .isEqualTo(FeatureState.unsupported(FeatureStates.GRPC_GCP_OFF));
    FeatureState on = FeatureStates.singleUse(true, null, true);
    assertThat(on.status()).isEqualTo(RoutingSubject.expected());
    assertThat(FeatureStates.routingBuilt(on, true)).isSameAs(on);
    assertThat(FeatureStates.routingBuilt(on, false))
        .isEqualTo(FeatureState.unsupported(FeatureStates.GRPC_GCP_OFF));
    assertThat(FeatureStates.routingBuilt(FeatureState.offByConfiguration(), false))
        .as("off stays off, and says why")
        .isEqualTo(FeatureState.offByConfiguration());
  }

  @Test
  void transactionRoutingFollowsTheSameRulesAsSingleUseDistribution() {
    assertThat(FeatureStates.transactionRouting(false, HOOK_MISSING, true))
        .isEqualTo(FeatureState.offByConfiguration());
    assertThat(FeatureStates.transactionRouting(true, null, false))
        .isEqualTo(FeatureState.unsupported(FeatureStates.GRPC_GCP_OFF));
    assertThat(FeatureStates.transactionRouting(true, null, true))
        .as("the state the build expects of both routing features on this line")
        .isEqualTo(FeatureStates.singleUse(true, null, true));
    assertThat(FeatureStates.transactionRouting(true, null, true).status())
        .isEqualTo(RoutingSubject.expected());
  }

  @Test
  void withoutThePickerTheClientsOwnPickStaysInChargeWhereItHasOne() {
    assertThat(FeatureStates.withoutPicker(Feature.SINGLE_USE_DISTRIBUTION, "no pool", false))
        .isEqualTo(FeatureState.unsupported("no pool"));
    FeatureState kept =
        FeatureStates.withoutPicker(Feature.SINGLE_USE_DISTRIBUTION, "no pool", true);
    assertThat(kept.status()).isEqualTo(Status.NATIVE);
    assertThat(kept.reason())
        .endsWith(
            " sends each single-use read and each transaction to the least busy channel itself;"
                + " no pool");
  }

  /**
   * No client hedges by itself: where the picker is missing, hedging is unsupported, never native.
   */
  @Test
  void hedgingIsOffByDefaultAndNeedsThePicker() {
    assertThat(FeatureStates.hedging(false, null, true))
        .isEqualTo(FeatureState.offByConfiguration());
    assertThat(FeatureStates.hedging(false, HOOK_MISSING, true))
        .as("off by default, and unsupported where it could not be switched on")
        .isEqualTo(FeatureState.unsupported(HOOK_MISSING));
    assertThat(FeatureStates.hedging(true, null, false))
        .isEqualTo(FeatureState.unsupported(FeatureStates.GRPC_GCP_OFF));
    assertThat(FeatureStates.hedging(true, HOOK_MISSING, true))
        .isEqualTo(FeatureState.unsupported(HOOK_MISSING));
    assertThat(FeatureStates.withoutPicker(Feature.HEDGING, "no pool", true))
        .as("even where the client picks the least busy channel itself")
        .isEqualTo(FeatureState.unsupported("no pool"));
    assertThat(FeatureStates.hedging(true, null, true)).isEqualTo(FeatureState.on());
    assertThat(FeatureStates.isSwitchable(Feature.HEDGING, FeatureState.offByConfiguration()))
        .isTrue();
  }

  @Test
  void aSwitchAtRuntimeIsNotTheConfiguration() {
    FeatureState off = FeatureStates.switched(Feature.STREAM_END_GUARD, false);
    assertThat(off).isEqualTo(FeatureState.off(FeatureStates.SWITCHED_OFF));
    assertThat(off.byConfiguration()).isFalse();
    assertThat(FeatureStates.switched(Feature.STREAM_END_GUARD, true).status())
        .as("switched back on, the guard is what this line makes it")
        .isEqualTo(GuardLine.expected());
  }

  @Test
  void theGuardsStateComesFromTheClientLine() {
    assertThat(FeatureStates.streamEndGuard(true, null).status())
        .as("the guard on google-cloud-spanner %s", ClientVersions.detected().spanner())
        .isEqualTo(GuardLine.expected());
    assertThat(ClientSupport.CLIENT_CLEARS_CALL_AT_LAST)
        .as("GrpcStreamIterator.clearCall on this line")
        .isEqualTo(GuardLine.clientSkipsCancelAtLast());
  }

  @Test
  void whereTheClientSkipsTheCancelAtLastTheGuardIsNativeAndSaysWhatItStillAdds() {
    FeatureState split = FeatureStates.streamEndGuard(true, null, true);
    assertThat(split.status()).isEqualTo(Status.NATIVE);
    assertThat(split.reason())
        .startsWith("google-cloud-spanner " + ClientVersions.detected().spanner())
        .contains("sends no cancel for a stream closed after its last message")
        .contains("cancelled at once when its connection has no stream slot to spare")
        .contains("cancelled after the drain timeout")
        .endsWith("and the counters");
    assertThat(FeatureStates.guardWorks(split)).as("spanner-tuning still does its part").isTrue();
    assertThat(FeatureStates.isSwitchable(Feature.STREAM_END_GUARD, split)).isTrue();
    assertThat(FeatureStates.streamEndGuard(true, null, false)).isEqualTo(FeatureState.on());
    assertThat(FeatureStates.streamEndGuard(true, HOOK_MISSING, true))
        .isEqualTo(FeatureState.unsupported(HOOK_MISSING));
    assertThat(FeatureStates.streamEndGuard(false, null, true))
        .isEqualTo(FeatureState.offByConfiguration());
    assertThat(FeatureStates.guardWorks(FeatureState.offByConfiguration())).isFalse();
    assertThat(FeatureStates.guardWorks(FeatureState.unsupported(HOOK_MISSING))).isFalse();
  }

  @Test
  void aFeatureTheClientDoesAllByItselfCannotBeSwitched() {
    FeatureState nativeRouting =
        FeatureStates.withoutPicker(Feature.SINGLE_USE_DISTRIBUTION, "no pool", true);
    assertThat(FeatureStates.isSwitchable(Feature.SINGLE_USE_DISTRIBUTION, nativeRouting))
        .isFalse();
    assertThat(
            FeatureStates.isSwitchable(
                Feature.STREAM_END_GUARD, FeatureState.unsupported(HOOK_MISSING)))
        .isFalse();
    assertThat(FeatureStates.isSwitchable(Feature.STREAM_END_GUARD, FeatureState.on())).isTrue();
  }
}
