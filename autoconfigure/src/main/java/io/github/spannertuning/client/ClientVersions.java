package io.github.spannertuning.client;

import com.google.api.gax.core.GaxProperties;
import com.google.cloud.spanner.SpannerOptions;
import io.grpc.ManagedChannel;

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
            ? implementationVersion(ClientSupport.grpcGcpChannelClass())
            : null,
        GaxProperties.getGaxVersion(),
        implementationVersion(ManagedChannel.class));
  }

  private static String implementationVersion(Class<?> type) {
    String version = type.getPackage().getImplementationVersion();
    return (version != null) ? version : "unknown";
  }
}
