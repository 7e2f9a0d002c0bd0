package io.github.spannertuning.compat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.spannertuning.testing.MockSpannerServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * The line under test and what the tests expect of it, as the Maven profile set them (never read
 * back from the starter), plus the small helpers the tests share: HTTP without a Spring client
 * (whose packages differ between Boot 3 and 4) and a report file the compatibility script reads.
 */
final class CompatLine {

  static final String LINE = property("compat.line");

  static final String BOOT = property("compat.boot");

  static final String SPRING_CLOUD_GCP = property("compat.spring-cloud-gcp");

  static final String SPANNER = property("compat.google-cloud-spanner");

  static final String GRPC_GCP = property("compat.grpc-gcp");

  /** Whether spring-cloud-gcp's Spanner auto-configuration exists on this line. */
  static final boolean SPRING_CLOUD_GCP_SPANNER =
      Boolean.parseBoolean(property("compat.expect.spring-cloud-gcp-spanner"));

  /**
   * Whether the test server marks the final message of a stream {@code last}, as Cloud Spanner
   * does; off where the line's protos lack the field (its client could not see it either).
   */
  static final boolean MARK_LAST = Boolean.parseBoolean(property("compat.server.mark-last"));

  /** Whether the application runs from Spring AOT's generated bean definitions. */
  static final boolean AOT = Boolean.parseBoolean(property("compat.aot"));

  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private CompatLine() {}

  /** The production-like test server, as far as this line's protos allow. */
  static MockSpannerServer.Builder server() {
    return MockSpannerServer.builder().markLast(MARK_LAST);
  }

  /** The state the endpoint must show for a feature on this line: on, native or unsupported. */
  static String expected(String feature) {
    return property("compat.expect." + feature);
  }

  static String property(String name) {
    String value = System.getProperty(name);
    if (value == null || value.isBlank()) {
      throw new IllegalStateException(
          "System property '"
              + name
              + "' is not set: run the compat tests through Maven (failsafe)");
    }
    return value;
  }

  static Response get(int port, String path) {
    return send(HttpRequest.newBuilder(uri(port, path)).GET());
  }

  static Response post(int port, String path, String json) {
    return send(
        HttpRequest.newBuilder(uri(port, path))
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  private static URI uri(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static Response send(HttpRequest.Builder request) {
    try {
      HttpResponse<String> response =
          HTTP.send(
              request.timeout(Duration.ofSeconds(30)).build(),
              HttpResponse.BodyHandlers.ofString());
      return new Response(response.statusCode(), response.body());
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(ex);
    }
  }

  /** Appends {@code key=value} lines to this line's report, for scripts/compatibility.sh. */
  static synchronized void report(String key, Object value) {
    Path dir = Path.of(property("compat.report-dir"));
    try {
      Files.createDirectories(dir);
      Files.writeString(
          dir.resolve(LINE + ".properties"),
          key + "=" + String.valueOf(value).replace('\n', ' ') + System.lineSeparator(),
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND);
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
    System.out.println("[compat " + LINE + "] " + key + " = " + value);
  }

  record Response(int status, String body) {

    JsonObject json() {
      return JsonParser.parseString(this.body).getAsJsonObject();
    }
  }

  /** A string at a slash-separated path of a JSON object, or null. */
  static String text(JsonObject root, String path) {
    JsonElement element = root;
    for (String part : path.split("/")) {
      if (element == null || !element.isJsonObject()) {
        return null;
      }
      element = element.getAsJsonObject().get(part);
    }
    return (element == null || element.isJsonNull()) ? null : element.getAsString();
  }
}
