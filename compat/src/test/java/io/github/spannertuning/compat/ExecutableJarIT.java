package io.github.spannertuning.compat;

import static io.github.spannertuning.compat.CompatLine.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import io.github.spannertuning.testing.ChildProcess;
import io.github.spannertuning.testing.MockSpannerServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The compat application repackaged by spring-boot-maven-plugin and started with {@code java -jar},
 * as Boot applications are deployed: its classes and the client's come from nested jars, which is
 * where the endpoint once reported grpc-gcp's version as {@code unknown}.
 */
class ExecutableJarIT {

  @Test
  void endpointOfAnExecutableJarReportsTheLine() throws Exception {
    Path jar = Path.of(CompatLine.property("compat.executable-jar"));
    assertThat(jar).as("repackaged application (mvn package runs before the ITs)").exists();
    Path log =
        Path.of(CompatLine.property("compat.report-dir"))
            .resolve("executable-jar-" + CompatLine.LINE + ".log");
    Files.createDirectories(log.getParent());
    int port = freePort();
    try (MockSpannerServer server = CompatLine.server().start()) {
      String java = ProcessHandle.current().info().command().orElse("java");
      try (ChildProcess app =
          ChildProcess.start(
              new ProcessBuilder(
                      List.of(
                          java,
                          // C1 only, as the test JVMs: what the jar reports is checked, not its
                          // speed, and C1 starts it faster.
                          "-XX:TieredStopAtLevel=1",
                          "-Dspring.aot.enabled=" + CompatLine.AOT,
                          "-jar",
                          jar.toString(),
                          "--server.port=" + port,
                          "--compat.spanner.host=http://127.0.0.1:" + server.port()))
                  .redirectErrorStream(true)
                  .redirectOutput(log.toFile()))) {
        awaitEndpoint(app.process(), port, log);
        CompatLine.Response selects = CompatLine.post(port, "/compat/point-selects?count=50", "");
        assertThat(selects.status()).as("point selects: %s", selects.body()).isEqualTo(200);
        assertThat(selects.json().get("rows").getAsInt()).isEqualTo(50);

        JsonObject client = Endpoint.client(port, "spanner");
        CompatLine.report("executable-jar.versions", client.get("versions"));
        Endpoint.assertVersionsAsExpected(client);
        Endpoint.assertFeaturesAsExpected(client);
        assertThat(text(client, "pool/kind")).isEqualTo("grpc-gcp");
        assertThat(Endpoint.calls(client)).isGreaterThanOrEqualTo(50);
        assertThat(server.calls("ExecuteStreamingSql")).hasSizeGreaterThanOrEqualTo(50);
      }
    }
  }

  private static void awaitEndpoint(Process app, int port, Path log) throws Exception {
    Instant deadline = Instant.now().plus(Duration.ofSeconds(90));
    while (Instant.now().isBefore(deadline)) {
      assertThat(app.isAlive()).as("application exited early:%n%s", tail(log)).isTrue();
      try {
        if (CompatLine.get(port, "/actuator/spannertuning").status() == 200) {
          return;
        }
      } catch (RuntimeException notYetListening) {
        // keep polling until the deadline
      }
      Thread.sleep(250);
    }
    throw new AssertionError("application did not answer within 90 s:\n" + tail(log));
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log);
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
