package io.github.spannertuning.client;

import com.google.api.gax.grpc.GrpcInterceptorProvider;
import com.google.cloud.ServiceOptions;
import com.google.cloud.ServiceRpc;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.cloud.spanner.spi.v1.SpannerRpc;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.logging.Logger;

/**
 * What the Spanner client on the classpath offers, found once per JVM. Every check fails closed
 * (the hook counts as missing) so that a client we do not know is left alone.
 */
final class ClientSupport {

  private static final Logger logger = Logger.getLogger(ClientSupport.class.getName());

  private static final String GCP_MANAGED_CHANNEL = "com.google.cloud.grpc.GcpManagedChannel";

  static final boolean GRPC_GCP_PRESENT = isPresent(GCP_MANAGED_CHANNEL);

  /**
   * Whether {@link GapicSpannerRpc} has the streaming and query methods {@link TunedSpannerRpc}
   * overrides, with the signatures it was compiled against. On a client where they differ an
   * override would silently never be called.
   */
  static final boolean RPC_METHODS_MATCH = rpcMethodsMatch();

  /**
   * Whether the client gives each single-use read its own {@code ChannelAffinityRef}, which
   * grpc-gcp resolves to the least busy channel (google-cloud-spanner 6.119+ with grpc-gcp 1.12+).
   */
  static final boolean NATIVE_SINGLE_USE_ROUTING = nativeSingleUseRouting();

  /** grpc-gcp's context key that names a call's affinity key when its call options do not. */
  static final boolean AFFINITY_CONTEXT_PRESENT =
      GRPC_GCP_PRESENT && hasField(GCP_MANAGED_CHANNEL, "AFFINITY_CTX_KEY");

  private static final Field BUILDER_RPC_FACTORY =
      field(ServiceOptions.Builder.class, "serviceRpcFactory");

  private static final Field OPTIONS_RPC_FACTORY = field(ServiceOptions.class, "serviceRpcFactory");

  private static final Field BUILDER_GRPC_GCP_ENABLED =
      field(SpannerOptions.Builder.class, "grpcGcpExtensionEnabled");

  private static final Field BUILDER_INTERCEPTOR_PROVIDER =
      field(SpannerOptions.Builder.class, "interceptorProvider");

  private ClientSupport() {}

  static boolean canReadInterceptorProvider() {
    return BUILDER_INTERCEPTOR_PROVIDER != null;
  }

  static GrpcInterceptorProvider interceptorProvider(SpannerOptions.Builder builder) {
    return (GrpcInterceptorProvider) read(BUILDER_INTERCEPTOR_PROVIDER, builder);
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
      return Class.forName(GCP_MANAGED_CHANNEL, false, ClientSupport.class.getClassLoader());
    } catch (ClassNotFoundException ex) {
      throw new IllegalStateException(ex);
    }
  }

  /** Whether a factory is the client's own default, which {@link TunedSpannerRpc} replaces. */
  static boolean isDefaultRpcFactory(Object factory) {
    return factory == null
        || factory.getClass().getName().equals(SpannerOptions.class.getName() + "$DefaultSpannerRpcFactory");
  }

  private static boolean rpcMethodsMatch() {
    try {
      Class<?> requestId =
          Class.forName(
              "com.google.cloud.spanner.XGoogSpannerRequestId",
              false,
              ClientSupport.class.getClassLoader());
      Method query =
          GapicSpannerRpc.class.getMethod(
              "executeQuery",
              ExecuteSqlRequest.class,
              SpannerRpc.ResultStreamConsumer.class,
              Map.class,
              requestId,
              boolean.class);
      Method read =
          GapicSpannerRpc.class.getMethod(
              "read",
              ReadRequest.class,
              SpannerRpc.ResultStreamConsumer.class,
              Map.class,
              requestId,
              boolean.class);
      Method unaryQuery =
          GapicSpannerRpc.class.getMethod(
              "executeQueryAsync", ExecuteSqlRequest.class, Map.class, boolean.class);
      return query.getReturnType() == SpannerRpc.StreamingCall.class
          && read.getReturnType() == SpannerRpc.StreamingCall.class
          && unaryQuery != null
          && ServiceRpc.class.isAssignableFrom(GapicSpannerRpc.class)
          && GapicSpannerRpc.class.getConstructor(SpannerOptions.class) != null;
    } catch (ReflectiveOperationException | LinkageError ex) {
      logger.fine(() -> "GapicSpannerRpc does not have the expected methods: " + ex);
      return false;
    }
  }

  private static boolean nativeSingleUseRouting() {
    if (!GRPC_GCP_PRESENT || !hasField(GCP_MANAGED_CHANNEL, "CHANNEL_AFFINITY_REF_KEY")) {
      return false;
    }
    for (SpannerRpc.Option option : SpannerRpc.Option.values()) {
      if (option.name().equals("CHANNEL_ID_AFFINITY")) {
        return true;
      }
    }
    return false;
  }

  private static boolean isPresent(String className) {
    try {
      Class.forName(className, false, ClientSupport.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError ex) {
      return false;
    }
  }

  private static boolean hasField(String className, String fieldName) {
    try {
      Class.forName(className, false, ClientSupport.class.getClassLoader()).getField(fieldName);
      return true;
    } catch (ReflectiveOperationException | LinkageError ex) {
      return false;
    }
  }

  private static Field field(Class<?> type, String name) {
    try {
      Field field = type.getDeclaredField(name);
      field.setAccessible(true);
      return field;
    } catch (ReflectiveOperationException | RuntimeException ex) {
      logger.fine(() -> "Cannot read " + type.getName() + "." + name + ": " + ex);
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
