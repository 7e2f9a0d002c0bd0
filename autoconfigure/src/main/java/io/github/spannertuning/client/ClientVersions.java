package io.github.spannertuning.client;

import com.google.api.gax.core.GaxProperties;
import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.reflect.ClientReflection;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.security.CodeSource;
import java.util.Properties;

/**
 * Versions of the client libraries on the classpath, read from their jar manifests.
 *
 * @param spanner google-cloud-spanner
 * @param grpcGcp grpc-gcp, or {@code null} when it is not on the classpath
 * @param gax gax
 * @param grpc grpc-java
 */
public record ClientVersions(String spanner, String grpcGcp, String gax, String grpc) {

  private static final ClientVersions DETECTED = detect();

  /** The versions on this classpath. */
  public static ClientVersions detected() {
    return DETECTED;
  }

  private static ClientVersions detect() {
    return new ClientVersions(
        implementationVersion(SpannerOptions.class),
        ClientSupport.GRPC_GCP_PRESENT
            ? mavenVersion(
                ClientReflection.GRPC_GCP_POM_PROPERTIES,
                "grpc-gcp",
                ClientSupport.grpcGcpChannelClass())
            : null,
        GaxProperties.getGaxVersion(),
        implementationVersion(ManagedChannel.class));
  }

  /**
   * Reads the version Maven wrote into a jar. grpc-gcp shares its package with google-cloud-core,
   * so its package's implementation version may be the other jar's.
   */
  private static String mavenVersion(String resource, String artifactId, Class<?> type) {
    try (InputStream in = ClientReflection.open(resource, type)) {
      if (in != null) {
        Properties properties = new Properties();
        properties.load(in);
        return properties.getProperty("version", "unknown");
      }
    } catch (IOException ex) {
      // fall through to the jar's name
    }
    return versionFromJarName(artifactId, type);
  }

  /**
   * Some releases (grpc-gcp 1.9.0) carry no version at all but in the name Maven gave the jar. The
   * jar's location is a {@code file:} URL on a plain classpath and a nested one in an executable
   * jar ({@code jar:nested:/app.jar/!BOOT-INF/lib/grpc-gcp-1.9.0.jar!/} on Boot 3.2+, {@code
   * jar:file:/app.jar!/BOOT-INF/lib/grpc-gcp-1.9.0.jar!/} before): the name is the last path
   * segment once the trailing {@code !/} is gone.
   */
  static String versionFromJarName(String artifactId, Class<?> type) {
    CodeSource source = type.getProtectionDomain().getCodeSource();
    if (source == null || source.getLocation() == null) {
      return "unknown";
    }
    return versionFromJarLocation(artifactId, source.getLocation().toString());
  }

  static String versionFromJarLocation(String artifactId, String location) {
    String path = location;
    while (path.endsWith("!/") || path.endsWith("/")) {
      path = path.substring(0, path.length() - (path.endsWith("!/") ? 2 : 1));
    }
    String name = path.substring(path.lastIndexOf('/') + 1);
    if (name.startsWith(artifactId + "-") && name.endsWith(".jar")) {
      return name.substring(artifactId.length() + 1, name.length() - ".jar".length());
    }
    return "unknown";
  }

  private static String implementationVersion(Class<?> type) {
    String version = type.getPackage().getImplementationVersion();
    return (version != null) ? version : "unknown";
  }
}
