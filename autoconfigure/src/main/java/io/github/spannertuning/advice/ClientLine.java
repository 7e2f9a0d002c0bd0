package io.github.spannertuning.advice;

import com.google.cloud.spanner.SpannerOptions;
import io.github.spannertuning.client.ClientVersions;
import io.github.spannertuning.reflect.ClientReflection;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The client line the rules judge a configuration against.
 *
 * @param spanner the google-cloud-spanner release on the classpath, or {@code unknown}
 * @param grpcGcp the grpc-gcp release on the classpath, {@code null} when it is absent
 * @param grpcGcpRequired the grpc-gcp release google-cloud-spanner was built against (its pom's
 *     dependency), or {@code unknown}
 */
public record ClientLine(String spanner, String grpcGcp, String grpcGcpRequired) {

  /**
   * The grpc-gcp dependency in the client's pom. The pom is Maven's as published: the dependency's
   * {@code artifactId} and then its {@code version}, with no other element between them that has a
   * version of its own.
   */
  private static final Pattern GRPC_GCP_DEPENDENCY =
      Pattern.compile(
          "<artifactId>\\s*grpc-gcp\\s*</artifactId>\\s*<version>\\s*([^<\\s]+)\\s*</version>");

  /** The line on this classpath. */
  public static ClientLine detected() {
    ClientVersions versions = ClientVersions.detected();
    return new ClientLine(versions.spanner(), versions.grpcGcp(), grpcGcpRequiredByClient());
  }

  private static String grpcGcpRequiredByClient() {
    try (InputStream in =
        ClientReflection.open(ClientReflection.SPANNER_POM, SpannerOptions.class)) {
      return (in != null)
          ? grpcGcpIn(new String(in.readAllBytes(), StandardCharsets.UTF_8))
          : "unknown";
    } catch (IOException ex) {
      return "unknown";
    }
  }

  /** The grpc-gcp version a google-cloud-spanner pom asks for, or {@code unknown}. */
  static String grpcGcpIn(String pom) {
    Matcher matcher = GRPC_GCP_DEPENDENCY.matcher(pom);
    return matcher.find() ? matcher.group(1) : "unknown";
  }
}
