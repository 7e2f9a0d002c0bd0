package io.github.spannertuning.client;

import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import io.github.spannertuning.reflect.ClientReflection;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.logging.Logger;

/**
 * The client's own {@link GapicSpannerRpc} with the stream-end guard, for clients whose streaming
 * methods take no request id (google-cloud-spanner 6.89 to 6.104 among them). Those versions end a
 * result set at the {@code last} message too, and cancel a stream closed on its last row.
 *
 * <p>The starter is compiled against a client whose {@code GapicSpannerRpc} has no such methods, so
 * these override the client's only where it has them, and reach the client's own through method
 * handles. Single-use routing is not applied here: the starter's routing is built around the
 * request-id methods, so on these versions single-use reads go where the client sends them.
 */
final class GuardOnlySpannerRpc extends ObservedSpannerRpc {

  private static final Logger logger = Logger.getLogger(GuardOnlySpannerRpc.class.getName());

  private static final MethodHandle EXECUTE_QUERY =
      superMethod(ClientReflection.EXECUTE_QUERY_WITHOUT_REQUEST_ID);

  private static final MethodHandle READ = superMethod(ClientReflection.READ_WITHOUT_REQUEST_ID);

  GuardOnlySpannerRpc(SpannerOptions options, SpannerTuningState state) {
    super(options, state);
  }

  /** Whether this client's {@code GapicSpannerRpc} has both methods this class overrides. */
  static boolean isSupported() {
    return EXECUTE_QUERY != null && READ != null;
  }

  public StreamingCall executeQuery(
      ExecuteSqlRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      boolean routeToLeader) {
    if (!this.state.isActive(Feature.STREAM_END_GUARD)) {
      return clientExecuteQuery(request, consumer, options, routeToLeader);
    }
    return GuardedStream.start(
        consumer,
        options,
        this.state,
        (target, callOptions) -> clientExecuteQuery(request, target, callOptions, routeToLeader));
  }

  public StreamingCall read(
      ReadRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      boolean routeToLeader) {
    if (!this.state.isActive(Feature.STREAM_END_GUARD)) {
      return clientRead(request, consumer, options, routeToLeader);
    }
    return GuardedStream.start(
        consumer,
        options,
        this.state,
        (target, callOptions) -> clientRead(request, target, callOptions, routeToLeader));
  }

  private StreamingCall clientExecuteQuery(
      ExecuteSqlRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      boolean routeToLeader) {
    try {
      return (StreamingCall)
          EXECUTE_QUERY.invokeExact(this, request, consumer, options, routeToLeader);
    } catch (RuntimeException | Error ex) {
      throw ex;
    } catch (Throwable ex) {
      throw new IllegalStateException(ex);
    }
  }

  private StreamingCall clientRead(
      ReadRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      boolean routeToLeader) {
    try {
      return (StreamingCall) READ.invokeExact(this, request, consumer, options, routeToLeader);
    } catch (RuntimeException | Error ex) {
      throw ex;
    } catch (Throwable ex) {
      throw new IllegalStateException(ex);
    }
  }

  private static MethodHandle superMethod(ClientReflection.Member member) {
    try {
      MethodHandle handle = ClientReflection.superMethod(member, GuardOnlySpannerRpc.class);
      return (handle.type().returnType() == StreamingCall.class) ? handle : null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      logger.fine(
          () -> "GapicSpannerRpc has no " + member.name() + member.parameterTypes() + ": " + ex);
      return null;
    }
  }
}
