package io.github.spannertuning.jdbc;

import com.google.cloud.spanner.SessionPoolOptions;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.connection.ConnectionOptions;
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

  static final String DRIVER = "com.google.cloud.spanner.jdbc.JdbcDriver";

  private static final String OPTIONS = "com.google.cloud.spanner.connection.ConnectionOptions";

  private static final String CONFIGURATOR = OPTIONS + "$SpannerOptionsConfigurator";

  private static final String POOL_KEY =
      "com.google.cloud.spanner.connection.SpannerPool$SpannerPoolKey";

  private static final String SESSION_POOL_HELPER =
      "com.google.cloud.spanner.SessionPoolOptionsHelper";

  private static final String OPTIONS_HELPER =
      "com.google.cloud.spanner.connection.ConnectionOptionsHelper";

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
    String member = DRIVER;
    try {
      Class<?> driver = Class.forName(DRIVER, false, loader);
      version = driver.getPackage().getImplementationVersion();
      member = DRIVER + ".maybeAddUserAgent(Properties)";
      this.maybeAddUserAgent =
          accessible(driver.getDeclaredMethod("maybeAddUserAgent", Properties.class));
      member = DRIVER + ".appendPropertiesToUrl(String, Properties)";
      this.appendPropertiesToUrl =
          accessible(
              driver.getDeclaredMethod("appendPropertiesToUrl", String.class, Properties.class));
      member = DRIVER + ".buildConnectionOptions(String, Properties)";
      this.buildConnectionOptions =
          accessible(
              driver.getDeclaredMethod("buildConnectionOptions", String.class, Properties.class));
      member = DRIVER + ".OPEN_TELEMETRY_PROPERTY_KEY";
      this.openTelemetryProperty =
          (String) driver.getField("OPEN_TELEMETRY_PROPERTY_KEY").get(null);
      member = CONFIGURATOR;
      this.configuratorType = Class.forName(CONFIGURATOR, false, loader);
      member = OPTIONS + ".Builder.setConfigurator(SpannerOptionsConfigurator)";
      this.setConfigurator =
          accessible(
              Class.forName(OPTIONS + "$Builder", false, loader)
                  .getDeclaredMethod("setConfigurator", this.configuratorType));
      this.configuratorType.getDeclaredMethod("configure", SpannerOptions.Builder.class);
      member = POOL_KEY + ".of(ConnectionOptions)";
      this.poolKeyOf =
          accessible(
              Class.forName(POOL_KEY, false, loader)
                  .getDeclaredMethod("of", ConnectionOptions.class));
      member = SESSION_POOL_HELPER + ".useMultiplexedSessions(SessionPoolOptions.Builder)";
      this.useMultiplexedSessions =
          Class.forName(SESSION_POOL_HELPER, false, loader)
              .getMethod("useMultiplexedSessions", SessionPoolOptions.Builder.class);
      member = OPTIONS_HELPER + ".useDirectExecutorIfNotUseVirtualThreads(String, Builder)";
      this.useDirectExecutor =
          Class.forName(OPTIONS_HELPER, false, loader)
              .getMethod(
                  "useDirectExecutorIfNotUseVirtualThreads",
                  String.class,
                  ConnectionOptions.Builder.class);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
      missing = member + " is not there (" + ex.getClass().getSimpleName() + ")";
    }
    this.missing = missing;
    this.driverVersion = (version != null) ? version : "unknown";
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

  private static Method accessible(Method method) {
    method.setAccessible(true);
    return method;
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
