package io.github.spannertuning.testing;

import com.google.cloud.spanner.InstanceConfigId;
import com.google.cloud.spanner.InstanceId;
import com.google.cloud.spanner.InstanceInfo;
import com.google.cloud.spanner.Spanner;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The official Cloud Spanner emulator ({@code emulator_main}), started on a free loopback port for
 * one test class and stopped, with any process it started, on {@link #close()} or at the latest
 * when the JVM exits (see {@link ChildProcess}).
 *
 * <p>The binary is looked for in {@code SPANNER_EMULATOR_BINARY}, then where the gcloud packages
 * put it. Tests should {@link #find() find} it first and skip themselves when it is absent: it
 * cannot be installed from the registries every machine reaches.
 */
public final class SpannerEmulator implements AutoCloseable {

  /** Environment variable naming the {@code emulator_main} binary to use. */
  public static final String BINARY_ENV = "SPANNER_EMULATOR_BINARY";

  private static final String RELATIVE = "bin/cloud_spanner_emulator/emulator_main";

  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

  private final ChildProcess process;

  private final int port;

  private final Path log;

  private SpannerEmulator(ChildProcess process, int port, Path log) {
    this.process = process;
    this.port = port;
    this.log = log;
  }

  /** Where the binary is looked for, in order. */
  public static List<Path> candidates() {
    List<Path> candidates = new ArrayList<>();
    String fromEnv = System.getenv(BINARY_ENV);
    if (fromEnv != null && !fromEnv.isBlank()) {
      candidates.add(Paths.get(fromEnv));
    }
    candidates.add(Paths.get("/usr/lib/google-cloud-sdk").resolve(RELATIVE));
    candidates.add(Paths.get("/usr/share/google-cloud-sdk").resolve(RELATIVE));
    candidates.add(Paths.get("/opt/google-cloud-sdk").resolve(RELATIVE));
    candidates.add(
        Paths.get(System.getProperty("user.home"), "google-cloud-sdk").resolve(RELATIVE));
    return candidates;
  }

  /** The first executable candidate, if any. */
  public static Optional<Path> find() {
    return candidates().stream()
        .filter((path) -> Files.isRegularFile(path) && Files.isExecutable(path))
        .findFirst();
  }

  /** A sentence saying where the binary was looked for, for skip messages. */
  public static String notFoundMessage() {
    return "Cloud Spanner emulator not found at "
        + String.join(", ", candidates().stream().map(Path::toString).toList())
        + " (set "
        + BINARY_ENV
        + " to its emulator_main); skipping";
  }

  /**
   * Creates an instance on the emulator's one instance config.
   *
   * @param spanner a client of the emulator
   * @param project the project
   * @param instance the instance id
   * @throws Exception if the emulator does not create it within 60 s
   */
  public static void createInstance(Spanner spanner, String project, String instance)
      throws Exception {
    spanner
        .getInstanceAdminClient()
        .createInstance(
            InstanceInfo.newBuilder(InstanceId.of(project, instance))
                .setInstanceConfigId(InstanceConfigId.of(project, "emulator-config"))
                .setDisplayName("spanner-tuning test")
                .setNodeCount(1)
                .build())
        .get(60, TimeUnit.SECONDS);
  }

  /**
   * Starts the emulator found by {@link #find()} on a free loopback port, with the given extra
   * flags (such as {@code --enable_fault_injection}).
   */
  public static SpannerEmulator start(String... flags) throws IOException, InterruptedException {
    return start(find().orElseThrow(() -> new IllegalStateException(notFoundMessage())), flags);
  }

  static SpannerEmulator start(Path binary, String... flags)
      throws IOException, InterruptedException {
    IOException last = null;
    // The free port is found by binding and releasing it: another process may take it in
    // between, so try a few times.
    for (int attempt = 0; attempt < 3; attempt++) {
      int port = freePort();
      Path log = Files.createTempFile("spanner-emulator", ".log");
      // Deleted after the shutdown hooks, so after the emulator stopped writing to it.
      log.toFile().deleteOnExit();
      List<String> command =
          new ArrayList<>(List.of(binary.toString(), "--host_port", "127.0.0.1:" + port));
      command.addAll(List.of(flags));
      ChildProcess process =
          ChildProcess.start(
              new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()));
      SpannerEmulator emulator = new SpannerEmulator(process, port, log);
      try {
        emulator.awaitListening();
        return emulator;
      } catch (IOException ex) {
        emulator.close();
        last = ex;
      }
    }
    throw last;
  }

  /** {@code 127.0.0.1:port}, for {@code SpannerOptions.Builder.setEmulatorHost}. */
  public String hostPort() {
    return "127.0.0.1:" + this.port;
  }

  public int port() {
    return this.port;
  }

  /** The emulator's process: {@code emulator_main}, or a wrapper that started it. */
  ProcessHandle process() {
    return this.process.process().toHandle();
  }

  /** Stops the emulator and any process it started, and waits for them to exit. */
  @Override
  public void close() throws InterruptedException {
    this.process.close();
    try {
      Files.deleteIfExists(this.log);
    } catch (IOException ex) {
      // a temp file; leave it
    }
  }

  private void awaitListening() throws IOException, InterruptedException {
    long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      Process process = this.process.process();
      if (!process.isAlive()) {
        throw new IOException("emulator exited with " + process.exitValue() + ": " + logTail());
      }
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress(loopback(), this.port), 200);
        return;
      } catch (IOException ex) {
        Thread.sleep(20);
      }
    }
    throw new IOException(
        "emulator not listening on " + hostPort() + " after " + STARTUP_TIMEOUT + ": " + logTail());
  }

  private String logTail() {
    try {
      String text = Files.readString(this.log);
      return text.length() > 2000 ? text.substring(text.length() - 2000) : text;
    } catch (IOException ex) {
      return "(no log: " + ex + ")";
    }
  }

  private static InetAddress loopback() throws IOException {
    return InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 0, loopback())) {
      return socket.getLocalPort();
    }
  }
}
