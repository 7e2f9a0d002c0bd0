package io.github.spannertuning.jdbc;

import com.google.cloud.spanner.SessionPoolOptions;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.connection.ConnectionOptions;
import io.github.spannertuning.reflect.ClientReflection;
import io.github.spannertuning.reflect.ClientReflection.Member;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Properties;
import java.util.function.Consumer;

/**
 * The members of the JDBC driver and of the Connection API that spanner-tuning reaches, found once
 * by name. None is public API: {@code JdbcDriver}'s option building and {@code SpannerPoolKey.of}
 * are package-private, and so is the configurator that {@code SpannerPool.createSpanner} applies
 * last to the options of the client it builds. A driver version that renames or drops one is found
 * here, before any connection is opened, and {@link #missing()} names the member.
 */
final class JdbcDriverHooks {

  private final String missing;

  private final String driverVersion;

  private Method maybeAddUserAgent;

  private Method appendPropertiesToUrl;

  private Method buildConnectionOptions;

  private String openTelemetryProperty;

  private Class<?> configuratorType;

  private Method setConfigurator;

  private Method poolKeyOf;

  private Method useMultiplexedSessions;

  private Method useDirectExecutor;

  private JdbcDriverHooks(ClassLoader loader) {
    String missing = null;
    String version = null;
    Member member = ClientReflection.JDBC_DRIVER;
    try {
      version = ClientReflection.load(member, loader).getPackage().getImplementationVersion();
      member = ClientReflection.JDBC_MAYBE_ADD_USER_AGENT;
      this.maybeAddUserAgent = ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_APPEND_PROPERTIES_TO_URL;
      this.appendPropertiesToUrl = ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_BUILD_CONNECTION_OPTIONS;
      this.buildConnectionOptions = ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_OPEN_TELEMETRY_PROPERTY_KEY;
      this.openTelemetryProperty = (String) ClientReflection.field(member, loader).get(null);
      member = ClientReflection.JDBC_CONFIGURATOR;
      this.configuratorType = ClientReflection.load(member, loader);
      member = ClientReflection.JDBC_CONFIGURE;
      ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_SET_CONFIGURATOR;
      this.setConfigurator = ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_POOL_KEY_OF;
      this.poolKeyOf = ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_USE_MULTIPLEXED_SESSIONS;
      this.useMultiplexedSessions = ClientReflection.method(member, loader);
      member = ClientReflection.JDBC_USE_DIRECT_EXECUTOR;
      this.useDirectExecutor = ClientReflection.method(member, loader);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      missing = describe(member) + " is not there (" + ex.getClass().getSimpleName() + ")";
    }
    this.missing = missing;
    this.driverVersion = (version != null) ? version : "unknown";
  }

  private static String describe(Member member) {
    return (member.name() == null)
        ? member.type()
        : member.type()
            + "."
            + member.name()
            + "("
            + String.join(", ", member.parameterTypes())
            + ")";
  }

  static JdbcDriverHooks resolve(ClassLoader loader) {
    return new JdbcDriverHooks(loader);
  }

  /** The first member found missing, or {@code null} when every hook is there. */
  String missing() {
    return this.missing;
  }

  /** The JDBC driver's version, from its jar's manifest. */
  String driverVersion() {
    return this.driverVersion;
  }

  /** As the driver's {@code connect} does it: the user agent, then the properties in the URI. */
  String connectionUri(String url, Properties info) {
    invoke(this.maybeAddUserAgent, info);
    return (String) invoke(this.appendPropertiesToUrl, url.substring("jdbc:".length()), info);
  }

  /** The options the driver's {@code connect} builds for this URI. */
  ConnectionOptions driverOptions(String uri, Properties info) {
    return (ConnectionOptions) invoke(this.buildConnectionOptions, uri, info);
  }

  /**
   * The driver's options for this URI, built again with a configurator that the Connection API
   * applies to the client it builds, last.
   */
  ConnectionOptions configuredOptions(
      String uri, Properties info, Consumer<SpannerOptions.Builder> configurator) {
    ConnectionOptions.Builder builder =
        ConnectionOptions.newBuilder().setTracingPrefix("JDBC").setUri(uri);
    Object openTelemetry = info.get(this.openTelemetryProperty);
    if (openTelemetry instanceof io.opentelemetry.api.OpenTelemetry telemetry) {
      builder.setOpenTelemetry(telemetry);
    }
    builder.setSessionPoolOptions(
        ((SessionPoolOptions.Builder)
                invoke(this.useMultiplexedSessions, SessionPoolOptions.newBuilder()))
            .build());
    builder = (ConnectionOptions.Builder) invoke(this.useDirectExecutor, uri, builder);
    invokeOn(builder, this.setConfigurator, configurator(configurator));
    return builder.build();
  }

  /** The key under which the Connection API pools the client for these options. */
  Object poolKey(ConnectionOptions options) {
    return invoke(this.poolKeyOf, options);
  }

  private Object configurator(Consumer<SpannerOptions.Builder> configure) {
    return Proxy.newProxyInstance(
        this.configuratorType.getClassLoader(),
        new Class<?>[] {this.configuratorType},
        (proxy, method, args) ->
            switch (method.getName()) {
              case "configure" -> {
                configure.accept((SpannerOptions.Builder) args[0]);
                yield null;
              }
              case "equals" -> proxy == args[0];
              case "hashCode" -> System.identityHashCode(proxy);
              case "toString" -> "spanner-tuning configurator";
              default -> throw new UnsupportedOperationException(method.getName());
            });
  }

  private static Object invoke(Method method, Object... args) {
    return invokeOn(null, method, args);
  }

  private static Object invokeOn(Object target, Method method, Object... args) {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException ex) {
      Throwable cause = ex.getCause();
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      throw new IllegalStateException(cause);
    } catch (IllegalAccessException ex) {
      throw new IllegalStateException(ex);
    }
  }
}
