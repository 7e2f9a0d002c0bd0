package io.github.spannertuning.client;

import com.google.api.gax.grpc.GrpcInterceptorProvider;
import com.google.cloud.ServiceRpc;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.cloud.spanner.spi.v1.SpannerRpc;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.reflect.ClientReflection;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.logging.Logger;

/**
 * What the Spanner client on the classpath offers, found once per JVM. Every check fails closed
 * (the hook counts as missing) so that a client we do not know is left alone.
 */
final class ClientSupport {

  private static final Logger logger = Logger.getLogger(ClientSupport.class.getName());

  static final boolean GRPC_GCP_PRESENT = isPresent(ClientReflection.GCP_MANAGED_CHANNEL);

  /**
   * Whether {@link GapicSpannerRpc} has the streaming and query methods {@link TunedSpannerRpc}
   * overrides, with the signatures it was compiled against. On a client where they differ an
   * override would silently never be called.
   */
  static final boolean RPC_METHODS_MATCH = rpcMethodsMatch();

  /**
   * Whether {@link GapicSpannerRpc} has the unary methods of a transaction's calls that {@link
   * TunedSpannerRpc} overrides to keep a routed transaction on its channel, with the signatures it
   * was compiled against.
   */
  static final boolean TRANSACTION_METHODS_MATCH = transactionMethodsMatch();

  /**
   * Whether {@link GapicSpannerRpc} has the streaming methods without a request id that {@link
   * GuardOnlySpannerRpc} overrides, where {@link #RPC_METHODS_MATCH} is false.
   */
  static final boolean PLAIN_STREAM_METHODS_MATCH = plainStreamMethodsMatch();

  /**
   * Whether the protos mark the final message of a stream ({@code PartialResultSet.last}), which
   * the stream-end guard needs to tell a stream finished before its trailers.
   */
  static final boolean STREAMS_MARK_LAST = hasMethod(ClientReflection.PARTIAL_RESULT_SET_LAST);

  /**
   * Whether the client itself sends no cancel for a result set closed after it took the message
   * marked {@code last}: from google-cloud-spanner 6.125, {@code GrpcStreamIterator.computeNext}
   * clears its call ({@code clearCall()}) when it takes that message, and {@code close()} cancels
   * only a call it has not cleared. The stream-end guard's skip is then the client's own.
   */
  static final boolean CLIENT_CLEARS_CALL_AT_LAST =
      hasMethod(ClientReflection.STREAM_ITERATOR_CLEAR_CALL);

  /**
   * Whether {@link GapicSpannerRpc} has the public constructor the client's default factory uses.
   */
  static final boolean HAS_OPTIONS_CONSTRUCTOR = hasOptionsConstructor();

  /**
   * Whether the client gives each single-use read its own {@code ChannelAffinityRef}, which
   * grpc-gcp resolves to the least busy channel (google-cloud-spanner 6.119+ with grpc-gcp 1.12+).
   */
  static final boolean NATIVE_SINGLE_USE_ROUTING = nativeSingleUseRouting();

  /** grpc-gcp's context key that names a call's affinity key when its call options do not. */
  static final boolean AFFINITY_CONTEXT_PRESENT =
      GRPC_GCP_PRESENT && hasField(ClientReflection.AFFINITY_CTX_KEY);

  private static final Field BUILDER_RPC_FACTORY = field(ClientReflection.BUILDER_RPC_FACTORY);

  private static final Field OPTIONS_RPC_FACTORY = field(ClientReflection.OPTIONS_RPC_FACTORY);

  private static final Field BUILDER_GRPC_GCP_ENABLED =
      field(ClientReflection.BUILDER_GRPC_GCP_ENABLED);

  private static final Field BUILDER_INTERCEPTOR_PROVIDER =
      field(ClientReflection.BUILDER_INTERCEPTOR_PROVIDER);

  private static final Field BUILDER_OPEN_TELEMETRY =
      field(ClientReflection.BUILDER_OPEN_TELEMETRY);

  private ClientSupport() {}

  /**
   * Whether a client built from these options exports Google's built-in metrics; {@code null} where
   * this client version does not say.
   */
  static Boolean builtInMetricsExport(SpannerOptions options) {
    try {
      return options.isEnableBuiltInMetrics();
    } catch (LinkageError ex) {
      return null;
    }
  }

  static boolean canReadInterceptorProvider() {
    return BUILDER_INTERCEPTOR_PROVIDER != null;
  }

  static GrpcInterceptorProvider interceptorProvider(SpannerOptions.Builder builder) {
    return (GrpcInterceptorProvider) read(BUILDER_INTERCEPTOR_PROVIDER, builder);
  }

  /**
   * Whether the builder was given no OpenTelemetry instance, so that its client would use {@code
   * GlobalOpenTelemetry}; false where that cannot be read.
   */
  static boolean hasNoOpenTelemetry(SpannerOptions.Builder builder) {
    return BUILDER_OPEN_TELEMETRY != null && read(BUILDER_OPEN_TELEMETRY, builder) == null;
  }

  static boolean canReadRpcFactory() {
    return BUILDER_RPC_FACTORY != null && OPTIONS_RPC_FACTORY != null;
  }

  static boolean canReadGrpcGcpSwitch() {
    return BUILDER_GRPC_GCP_ENABLED != null;
  }

  static Object rpcFactory(SpannerOptions.Builder builder) {
    return read(BUILDER_RPC_FACTORY, builder);
  }

  static Object rpcFactory(SpannerOptions options) {
    return read(OPTIONS_RPC_FACTORY, options);
  }

  static boolean isGrpcGcpEnabled(SpannerOptions.Builder builder) {
    return Boolean.TRUE.equals(read(BUILDER_GRPC_GCP_ENABLED, builder));
  }

  static Class<?> grpcGcpChannelClass() {
    try {
      return ClientReflection.load(ClientReflection.GCP_MANAGED_CHANNEL);
    } catch (ClassNotFoundException ex) {
      throw new IllegalStateException(ex);
    }
  }

  /** Whether a factory is the client's own default, which {@link TunedSpannerRpc} replaces. */
  static boolean isDefaultRpcFactory(Object factory) {
    return factory == null
        || factory
            .getClass()
            .getName()
            .equals(SpannerOptions.class.getName() + "$DefaultSpannerRpcFactory");
  }

  private static boolean rpcMethodsMatch() {
    try {
      Method query = ClientReflection.method(ClientReflection.EXECUTE_QUERY);
      Method read = ClientReflection.method(ClientReflection.READ);
      Method unaryQuery = ClientReflection.method(ClientReflection.EXECUTE_QUERY_ASYNC);
      return query.getReturnType() == SpannerRpc.StreamingCall.class
          && read.getReturnType() == SpannerRpc.StreamingCall.class
          && unaryQuery != null
          && ServiceRpc.class.isAssignableFrom(GapicSpannerRpc.class)
          && hasOptionsConstructor();
    } catch (ReflectiveOperationException | LinkageError ex) {
      logger.fine(() -> "GapicSpannerRpc does not have the expected methods: " + ex);
      return false;
    }
  }

  private static boolean transactionMethodsMatch() {
    try {
      ClientReflection.method(ClientReflection.BEGIN_TRANSACTION_ASYNC);
      ClientReflection.method(ClientReflection.COMMIT_ASYNC);
      ClientReflection.method(ClientReflection.ROLLBACK_ASYNC);
      ClientReflection.method(ClientReflection.EXECUTE_BATCH_DML_ASYNC);
      ClientReflection.method(ClientReflection.PARTITION_QUERY);
      ClientReflection.method(ClientReflection.PARTITION_READ);
      return true;
    } catch (ReflectiveOperationException | LinkageError ex) {
      logger.fine(() -> "GapicSpannerRpc does not have a transaction's methods: " + ex);
      return false;
    }
  }

  private static boolean plainStreamMethodsMatch() {
    try {
      return GuardOnlySpannerRpc.isSupported() && hasOptionsConstructor();
    } catch (LinkageError ex) {
      // GapicSpannerRpc itself cannot be linked, for example without grpc-gcp.
      logger.fine(() -> "GapicSpannerRpc cannot be extended: " + ex);
      return false;
    }
  }

  private static boolean hasOptionsConstructor() {
    return ClientReflection.hasConstructor(ClientReflection.RPC_CONSTRUCTOR);
  }

  private static boolean nativeSingleUseRouting() {
    return GRPC_GCP_PRESENT
        && hasField(ClientReflection.CHANNEL_AFFINITY_REF_KEY)
        && PoolRouting.hasChannelReferences();
  }

  private static boolean isPresent(ClientReflection.Member type) {
    try {
      ClientReflection.load(type);
      return true;
    } catch (ClassNotFoundException | LinkageError ex) {
      return false;
    }
  }

  private static boolean hasMethod(ClientReflection.Member method) {
    try {
      return ClientReflection.method(method) != null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      return false;
    }
  }

  private static boolean hasField(ClientReflection.Member field) {
    return field(field) != null;
  }

  private static Field field(ClientReflection.Member member) {
    try {
      return ClientReflection.field(member);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      // LinkageError: a field of the class has a type that is not on the classpath (grpc-gcp's
      // options when grpc-gcp is absent), so none of its fields can be listed.
      logger.fine(() -> "Cannot read " + member.type() + "." + member.name() + ": " + ex);
      return null;
    }
  }

  private static Object read(Field field, Object target) {
    try {
      return field.get(target);
    } catch (IllegalAccessException ex) {
      throw new IllegalStateException(ex);
    }
  }
}
