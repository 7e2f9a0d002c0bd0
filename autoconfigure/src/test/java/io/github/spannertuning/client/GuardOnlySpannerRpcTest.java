package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.github.spannertuning.reflect.ClientReflection;
import io.github.spannertuning.reflect.ClientReflection.Access;
import io.github.spannertuning.reflect.ClientReflection.Member;
import java.lang.invoke.MethodHandle;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pieces of {@link GuardOnlySpannerRpc} that can run on the lines this module is tested on
 * (6.119 and 6.113, whose streaming methods all take a request id). Its guarded streams are checked
 * on the wire by the compat module's {@code boot-3.4} line (google-cloud-spanner 6.89).
 */
class GuardOnlySpannerRpcTest {

  /** Stands for the client's {@code GapicSpannerRpc}. */
  public static class ClientRpc {
    public String executeQuery(String request, boolean routeToLeader) {
      return "client " + request + " " + routeToLeader;
    }
  }

  /** Stands for {@link GuardOnlySpannerRpc}: overrides and reaches the client's own. */
  static class OverridingRpc extends ClientRpc {

    static final MethodHandle CLIENT = clientMethod();

    int overrideCalls;

    @Override
    public String executeQuery(String request, boolean routeToLeader) {
      this.overrideCalls++;
      try {
        return "guarded " + (String) CLIENT.invokeExact(this, request, routeToLeader);
      } catch (Throwable ex) {
        throw new IllegalStateException(ex);
      }
    }

    private static MethodHandle clientMethod() {
      try {
        return ClientReflection.superMethod(
            new Member(
                ClientRpc.class.getName(),
                Access.INVOKE,
                "executeQuery",
                List.of("java.lang.String", "boolean")),
            OverridingRpc.class);
      } catch (ReflectiveOperationException ex) {
        throw new IllegalStateException(ex);
      }
    }
  }

  @Test
  void theHandleCallsTheClientsMethodNotTheOverride() {
    OverridingRpc rpc = new OverridingRpc();
    assertThat(rpc.executeQuery("q", true)).isEqualTo("guarded client q true");
    assertThat(rpc.overrideCalls).as("the override ran once, not again through the handle").isOne();
  }

  @Test
  void aMemberThatIsNotCalledIsRefused() {
    Member introspected =
        new Member(ClientRpc.class.getName(), Access.INTROSPECT, "executeQuery", List.of());
    assertThatIllegalArgumentException()
        .isThrownBy(() -> ClientReflection.superMethod(introspected, OverridingRpc.class));
  }

  /**
   * 6.113 and 6.119 have the streaming methods with a request id only (read with javap): the
   * guard-only rpc finds nothing to override, and the tuned rpc is chosen.
   */
  @Test
  void onThisLineTheClientHasOnlyTheRequestIdMethods() {
    assertThat(GuardOnlySpannerRpc.isSupported()).isFalse();
    assertThat(ClientSupport.PLAIN_STREAM_METHODS_MATCH).isFalse();
    assertThat(ClientSupport.RPC_METHODS_MATCH).isTrue();
    assertThat(ClientSupport.STREAMS_MARK_LAST).isTrue();
  }
}
