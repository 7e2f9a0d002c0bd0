package io.github.spannertuning.reflect;

import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/**
 * Every member of google-cloud-spanner, gax and grpc-gcp that spanner-tuning reaches by reflection,
 * and the only place that reaches them. A native image keeps only the members it was told about:
 * the starter's runtime hints are made from {@link #members()} and {@link #resources()}, so a
 * lookup added here is a hint added there. Without a hint the lookup fails in the image and the
 * feature that needs it reports itself off (fail open), which is why nothing else in the starter
 * may call the reflection API.
 */
public final class ClientReflection {

  /** How a member is used, which decides the hint it needs. */
  public enum Access {
    /** A class looked up by name ({@code Class.forName}). */
    TYPE,
    /** A field read, private or not. */
    FIELD,
    /** A method or constructor whose presence and signature are checked, never called. */
    INTROSPECT,
    /** A method that is called. */
    INVOKE
  }

  /**
   * One reflective target.
   *
   * @param type the binary name of the class that declares it
   * @param access how it is used
   * @param name the field or method name, {@code <init>} for a constructor, {@code null} for a type
   * @param parameterTypes the binary names of a method's parameter types
   */
  public record Member(String type, Access access, String name, List<String> parameterTypes) {}

  /**
   * Every member declared below, in order: each is listed as it is made, so that no lookup can miss
   * its hint.
   */
  private static final List<Member> MEMBERS = new ArrayList<>();

  private static final String SPANNER_RPC = "com.google.cloud.spanner.spi.v1.SpannerRpc";
  private static final String GAPIC_SPANNER_RPC = "com.google.cloud.spanner.spi.v1.GapicSpannerRpc";
  private static final String GCP_MANAGED_CHANNEL_NAME = "com.google.cloud.grpc.GcpManagedChannel";
  private static final String REQUEST_ID = "com.google.cloud.spanner.XGoogSpannerRequestId";

  public static final Member GCP_MANAGED_CHANNEL = type(GCP_MANAGED_CHANNEL_NAME);
  public static final Member CHANNEL_REF = type(GCP_MANAGED_CHANNEL_NAME + "$ChannelRef");
  public static final Member XGOOG_SPANNER_REQUEST_ID = type(REQUEST_ID);

  public static final Member AFFINITY_CTX_KEY = field(GCP_MANAGED_CHANNEL_NAME, "AFFINITY_CTX_KEY");
  public static final Member CHANNEL_AFFINITY_REF_KEY =
      field(GCP_MANAGED_CHANNEL_NAME, "CHANNEL_AFFINITY_REF_KEY");

  public static final Member BUILDER_RPC_FACTORY =
      field("com.google.cloud.ServiceOptions$Builder", "serviceRpcFactory");
  public static final Member OPTIONS_RPC_FACTORY =
      field("com.google.cloud.ServiceOptions", "serviceRpcFactory");
  public static final Member BUILDER_GRPC_GCP_ENABLED =
      field("com.google.cloud.spanner.SpannerOptions$Builder", "grpcGcpExtensionEnabled");
  public static final Member BUILDER_INTERCEPTOR_PROVIDER =
      field("com.google.cloud.spanner.SpannerOptions$Builder", "interceptorProvider");
  public static final Member BUILDER_OPEN_TELEMETRY =
      field("com.google.cloud.spanner.SpannerOptions$Builder", "openTelemetry");

  // The way from a GapicSpannerRpc to its grpc-gcp pool.
  public static final Member RPC_SPANNER_STUB = field(GAPIC_SPANNER_RPC, "spannerStub");
  public static final Member STUB_BACKGROUND_RESOURCES =
      field("com.google.cloud.spanner.v1.stub.GrpcSpannerStub", "backgroundResources");
  public static final Member AGGREGATION_RESOURCES =
      field("com.google.api.gax.core.BackgroundResourceAggregation", "resources");
  public static final Member CHANNEL_POOL_ENTRIES =
      field("com.google.api.gax.grpc.ChannelPool", "entries");
  public static final Member CHANNEL_POOL_ENTRY_CHANNEL =
      field("com.google.api.gax.grpc.ChannelPool$Entry", "channel");

  public static final Member CHANNEL_REFS = field(GCP_MANAGED_CHANNEL_NAME, "channelRefs");

  public static final Member GET_CHANNEL_REF =
      method(Access.INVOKE, GCP_MANAGED_CHANNEL_NAME, "getChannelRef", "java.lang.String");
  public static final Member BIND =
      method(
          Access.INVOKE,
          GCP_MANAGED_CHANNEL_NAME,
          "bind",
          GCP_MANAGED_CHANNEL_NAME + "$ChannelRef",
          "java.util.List");
  public static final Member CHANNEL_REF_GET_CHANNEL =
      method(Access.INVOKE, GCP_MANAGED_CHANNEL_NAME + "$ChannelRef", "getChannel");
  public static final Member CHANNEL_REF_GET_ID =
      method(Access.INVOKE, GCP_MANAGED_CHANNEL_NAME + "$ChannelRef", "getId");

  /** The dynamic pool's channel primer, set where the pool primes the channels it adds (6.125+). */
  public static final Member POOL_OPTIONS_CHANNEL_PRIMER =
      method(
          Access.INVOKE,
          "com.google.cloud.grpc.GcpManagedChannelOptions$GcpChannelPoolOptions",
          "getChannelPrimer");

  /** A channel reference's channel id, which routing sets to the channel picked (6.119+). */
  public static final Member AFFINITY_REF_STATE =
      field(GCP_MANAGED_CHANNEL_NAME + "$ChannelAffinityRef", "state");

  /** A new channel reference, for a hedge's call (grpc-gcp 1.12+, absent before). */
  public static final Member AFFINITY_REF_CONSTRUCTOR =
      method(Access.INVOKE, GCP_MANAGED_CHANNEL_NAME + "$ChannelAffinityRef", "<init>");

  public static final Member EXECUTE_QUERY =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "executeQuery",
          "com.google.spanner.v1.ExecuteSqlRequest",
          SPANNER_RPC + "$ResultStreamConsumer",
          "java.util.Map",
          REQUEST_ID,
          "boolean");
  public static final Member READ =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "read",
          "com.google.spanner.v1.ReadRequest",
          SPANNER_RPC + "$ResultStreamConsumer",
          "java.util.Map",
          REQUEST_ID,
          "boolean");
  // The same streaming methods before the request id joined their signatures (6.89 to 6.104 among
  // them); GuardOnlySpannerRpc overrides them and calls the client's own through these.
  public static final Member EXECUTE_QUERY_WITHOUT_REQUEST_ID =
      method(
          Access.INVOKE,
          GAPIC_SPANNER_RPC,
          "executeQuery",
          "com.google.spanner.v1.ExecuteSqlRequest",
          SPANNER_RPC + "$ResultStreamConsumer",
          "java.util.Map",
          "boolean");
  public static final Member READ_WITHOUT_REQUEST_ID =
      method(
          Access.INVOKE,
          GAPIC_SPANNER_RPC,
          "read",
          "com.google.spanner.v1.ReadRequest",
          SPANNER_RPC + "$ResultStreamConsumer",
          "java.util.Map",
          "boolean");

  /** Absent from the protos of clients before 6.89, whose streams carry no {@code last}. */
  public static final Member PARTIAL_RESULT_SET_LAST =
      method(Access.INTROSPECT, "com.google.spanner.v1.PartialResultSet", "getLast");

  /**
   * google-cloud-spanner 6.125+: the result set's stream iterator drops its call when it takes the
   * message marked {@code last}, and {@code close()} then cancels nothing.
   */
  public static final Member STREAM_ITERATOR_CLEAR_CALL =
      method(Access.INTROSPECT, "com.google.cloud.spanner.GrpcStreamIterator", "clearCall");

  public static final Member EXECUTE_QUERY_ASYNC =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "executeQueryAsync",
          "com.google.spanner.v1.ExecuteSqlRequest",
          "java.util.Map",
          "boolean");
  // The unary methods a transaction's calls go through (the blocking ones call these).
  public static final Member BEGIN_TRANSACTION_ASYNC =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "beginTransactionAsync",
          "com.google.spanner.v1.BeginTransactionRequest",
          "java.util.Map",
          "boolean");
  public static final Member COMMIT_ASYNC =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "commitAsync",
          "com.google.spanner.v1.CommitRequest",
          "java.util.Map");
  public static final Member ROLLBACK_ASYNC =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "rollbackAsync",
          "com.google.spanner.v1.RollbackRequest",
          "java.util.Map");
  public static final Member EXECUTE_BATCH_DML_ASYNC =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "executeBatchDmlAsync",
          "com.google.spanner.v1.ExecuteBatchDmlRequest",
          "java.util.Map");
  public static final Member PARTITION_QUERY =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "partitionQuery",
          "com.google.spanner.v1.PartitionQueryRequest",
          "java.util.Map");
  public static final Member PARTITION_READ =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "partitionRead",
          "com.google.spanner.v1.PartitionReadRequest",
          "java.util.Map");

  public static final Member RPC_CONSTRUCTOR =
      method(
          Access.INTROSPECT,
          GAPIC_SPANNER_RPC,
          "<init>",
          "com.google.cloud.spanner.SpannerOptions");

  // Google's JDBC driver (io.github.spannertuning.jdbc): how its connect() builds the Connection
  // API's options, and the Connection API's configurator and pool key.
  private static final String JDBC_DRIVER_NAME = "com.google.cloud.spanner.jdbc.JdbcDriver";
  private static final String CONNECTION_OPTIONS =
      "com.google.cloud.spanner.connection.ConnectionOptions";

  /** The JDBC driver's configurator interface, implemented by a JDK proxy. */
  public static final Member JDBC_CONFIGURATOR =
      type(CONNECTION_OPTIONS + "$SpannerOptionsConfigurator");

  public static final Member JDBC_DRIVER = type(JDBC_DRIVER_NAME);
  public static final Member JDBC_MAYBE_ADD_USER_AGENT =
      method(Access.INVOKE, JDBC_DRIVER_NAME, "maybeAddUserAgent", "java.util.Properties");
  public static final Member JDBC_APPEND_PROPERTIES_TO_URL =
      method(
          Access.INVOKE,
          JDBC_DRIVER_NAME,
          "appendPropertiesToUrl",
          "java.lang.String",
          "java.util.Properties");
  public static final Member JDBC_BUILD_CONNECTION_OPTIONS =
      method(
          Access.INVOKE,
          JDBC_DRIVER_NAME,
          "buildConnectionOptions",
          "java.lang.String",
          "java.util.Properties");
  public static final Member JDBC_OPEN_TELEMETRY_PROPERTY_KEY =
      field(JDBC_DRIVER_NAME, "OPEN_TELEMETRY_PROPERTY_KEY");
  public static final Member JDBC_SET_CONFIGURATOR =
      method(
          Access.INVOKE,
          CONNECTION_OPTIONS + "$Builder",
          "setConfigurator",
          CONNECTION_OPTIONS + "$SpannerOptionsConfigurator");
  public static final Member JDBC_CONFIGURE =
      method(
          Access.INTROSPECT,
          CONNECTION_OPTIONS + "$SpannerOptionsConfigurator",
          "configure",
          "com.google.cloud.spanner.SpannerOptions$Builder");
  public static final Member JDBC_POOL_KEY_OF =
      method(
          Access.INVOKE,
          "com.google.cloud.spanner.connection.SpannerPool$SpannerPoolKey",
          "of",
          CONNECTION_OPTIONS);
  public static final Member JDBC_USE_MULTIPLEXED_SESSIONS =
      method(
          Access.INVOKE,
          "com.google.cloud.spanner.SessionPoolOptionsHelper",
          "useMultiplexedSessions",
          "com.google.cloud.spanner.SessionPoolOptions$Builder");
  public static final Member JDBC_USE_DIRECT_EXECUTOR =
      method(
          Access.INVOKE,
          "com.google.cloud.spanner.connection.ConnectionOptionsHelper",
          "useDirectExecutorIfNotUseVirtualThreads",
          "java.lang.String",
          CONNECTION_OPTIONS + "$Builder");

  /** grpc-gcp 1.9.0 carries its version only here (its manifest has none). */
  public static final String GRPC_GCP_POM_PROPERTIES =
      "META-INF/maven/com.google.cloud/grpc-gcp/pom.properties";

  /**
   * The client's own pom, which names the grpc-gcp release it was built against (the advice's
   * version skew check).
   */
  public static final String SPANNER_POM =
      "META-INF/maven/com.google.cloud/google-cloud-spanner/pom.xml";

  private static final ClassLoader OWN_LOADER = ClientReflection.class.getClassLoader();

  private ClientReflection() {}

  /**
   * Every reflective target, on any client line (a target a line lacks is simply not found there).
   *
   * @return the targets
   */
  public static List<Member> members() {
    return List.copyOf(MEMBERS);
  }

  /**
   * Interfaces the starter implements with a JDK proxy, each as the binary names of its interfaces.
   *
   * @return the proxies' interfaces
   */
  public static List<List<String>> proxies() {
    return List.of(List.of(JDBC_CONFIGURATOR.type()));
  }

  /**
   * A class of {@link #members()}, from the given class loader.
   *
   * @param member a member, of any access
   * @param loader where to look
   * @return the class that declares it
   * @throws ClassNotFoundException when the loader has no such class
   */
  public static Class<?> load(Member member, ClassLoader loader) throws ClassNotFoundException {
    return load(member.type(), loader);
  }

  /**
   * A field of {@link #members()}, from the given class loader, made accessible.
   *
   * @param member a field
   * @param loader where to look
   * @return the field
   * @throws ReflectiveOperationException when it is not there
   */
  public static Field field(Member member, ClassLoader loader) throws ReflectiveOperationException {
    requireAccess(member, Access.FIELD);
    Field field = load(member, loader).getDeclaredField(member.name());
    field.setAccessible(true);
    return field;
  }

  /**
   * A method of {@link #members()}, from the given class loader, made accessible when the starter
   * calls it.
   *
   * @param member a method
   * @param loader where to look
   * @return the method
   * @throws ReflectiveOperationException when it is not there
   */
  public static Method method(Member member, ClassLoader loader)
      throws ReflectiveOperationException {
    if (member.access() != Access.INVOKE && member.access() != Access.INTROSPECT) {
      throw new IllegalArgumentException(member + " is not a method");
    }
    Method method =
        load(member, loader).getDeclaredMethod(member.name(), parameterTypes(member, loader));
    if (member.access() == Access.INVOKE) {
      method.setAccessible(true);
    }
    return method;
  }

  /**
   * Class-path resources the starter reads.
   *
   * @return resource paths
   */
  public static List<String> resources() {
    return List.of(GRPC_GCP_POM_PROPERTIES, SPANNER_POM);
  }

  /**
   * One of {@link #resources()}, from the class loader that loaded {@code type}; null if absent.
   */
  public static InputStream open(String resource, Class<?> type) {
    if (!resources().contains(resource)) {
      throw new IllegalArgumentException(resource + " is not one of " + resources());
    }
    return type.getClassLoader().getResourceAsStream(resource);
  }

  public static Class<?> load(Member member) throws ClassNotFoundException {
    return load(member, OWN_LOADER);
  }

  public static Field field(Member member) throws ReflectiveOperationException {
    return field(member, OWN_LOADER);
  }

  public static Method method(Member member) throws ReflectiveOperationException {
    return method(member, OWN_LOADER);
  }

  /**
   * A constructor of {@link #members()} that the starter calls, made accessible.
   *
   * @param member a constructor ({@code <init>}) to invoke
   * @return the constructor
   * @throws ReflectiveOperationException when it is not there
   */
  public static Constructor<?> constructor(Member member) throws ReflectiveOperationException {
    requireAccess(member, Access.INVOKE);
    if (!member.name().equals("<init>")) {
      throw new IllegalArgumentException(member + " is not a constructor");
    }
    Constructor<?> constructor =
        load(member).getDeclaredConstructor(parameterTypes(member, OWN_LOADER));
    constructor.setAccessible(true);
    return constructor;
  }

  /**
   * A method of a superclass of {@code subclass}, bound as {@code super.method(...)} is from inside
   * {@code subclass}: an override that the starter cannot compile against (the client line it is
   * built with lacks the method) still reaches the client's own implementation.
   */
  public static MethodHandle superMethod(Member member, Class<?> subclass)
      throws ReflectiveOperationException {
    requireAccess(member, Access.INVOKE);
    Method method = method(member);
    return MethodHandles.privateLookupIn(subclass, MethodHandles.lookup())
        .unreflectSpecial(method, subclass);
  }

  /** Whether a constructor exists, with exactly these parameter types. */
  public static boolean hasConstructor(Member member) {
    try {
      requireAccess(member, Access.INTROSPECT);
      return load(member).getDeclaredConstructor(parameterTypes(member, OWN_LOADER)) != null;
    } catch (ReflectiveOperationException | LinkageError ex) {
      return false;
    }
  }

  private static Class<?>[] parameterTypes(Member member, ClassLoader loader)
      throws ClassNotFoundException {
    Class<?>[] types = new Class<?>[member.parameterTypes().size()];
    for (int i = 0; i < types.length; i++) {
      types[i] = load(member.parameterTypes().get(i), loader);
    }
    return types;
  }

  public static Class<?> load(String name) throws ClassNotFoundException {
    return load(name, OWN_LOADER);
  }

  private static Class<?> load(String name, ClassLoader loader) throws ClassNotFoundException {
    return switch (name) {
      case "boolean" -> boolean.class;
      case "int" -> int.class;
      case "long" -> long.class;
      default -> Class.forName(name, false, loader);
    };
  }

  private static void requireAccess(Member member, Access access) {
    if (member.access() != access) {
      throw new IllegalArgumentException(member + " is not " + access);
    }
  }

  private static Member type(String type) {
    return listed(new Member(type, Access.TYPE, null, List.of()));
  }

  private static Member field(String type, String name) {
    return listed(new Member(type, Access.FIELD, name, List.of()));
  }

  private static Member method(Access access, String type, String name, String... parameterTypes) {
    return listed(new Member(type, access, name, List.of(parameterTypes)));
  }

  private static Member listed(Member member) {
    MEMBERS.add(member);
    return member;
  }
}
