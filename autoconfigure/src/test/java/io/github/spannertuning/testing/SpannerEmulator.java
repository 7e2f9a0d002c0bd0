package io.github.spannertuning.testing;

import com.google.cloud.spanner.InstanceConfigId;
import com.google.cloud.spanner.InstanceId;
import com.google.cloud.spanner.InstanceInfo;
import com.google.cloud.spanner.Spanner;
import java.io.IOException;
import java.net.InetSocketAddress;
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

  private static final LocalBinary BINARY =
      new LocalBinary(
          "Cloud Spanner emulator",
          BINARY_ENV,
          List.of(
              Paths.get("/usr/lib/google-cloud-sdk").resolve(RELATIVE),
              Paths.get("/usr/share/google-cloud-sdk").resolve(RELATIVE),
              Paths.get("/opt/google-cloud-sdk").resolve(RELATIVE),
              Paths.get(System.getProperty("user.home"), "google-cloud-sdk").resolve(RELATIVE)),
          "set " + BINARY_ENV + " to its emulator_main");

  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

  private final LocalBinary.Running program;

  private SpannerEmulator(LocalBinary.Running program) {
    this.program = program;
  }

  /** The first executable candidate, if any. */
  public static Optional<Path> find() {
    return BINARY.find();
  }

  /** A sentence saying where the binary was looked for, for skip messages. */
  public static String notFoundMessage() {
    return BINARY.notFoundMessage();
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
    return LocalBinary.startOnFreePort(
        (port) -> {
          Path log = Files.createTempFile("spanner-emulator", ".log");
          // Deleted after the shutdown hooks, so after the emulator stopped writing to it.
          log.toFile().deleteOnExit();
          List<String> command =
              new ArrayList<>(List.of(binary.toString(), "--host_port", "127.0.0.1:" + port));
          command.addAll(List.of(flags));
          return new SpannerEmulator(
              LocalBinary.Running.start(new ProcessBuilder(command), port, log));
        },
        SpannerEmulator::awaitListening,
        SpannerEmulator::close);
  }

  /** {@code 127.0.0.1:port}, for {@code SpannerOptions.Builder.setEmulatorHost}. */
  public String hostPort() {
    return "127.0.0.1:" + this.program.port();
  }

  public int port() {
    return this.program.port();
  }

  /** The emulator's process: {@code emulator_main}, or a wrapper that started it. */
  ProcessHandle process() {
    return this.program.process().process().toHandle();
  }

  /** Stops the emulator and any process it started, and waits for them to exit. */
  @Override
  public void close() throws InterruptedException {
    this.program.process().close();
    try {
      Files.deleteIfExists(this.program.log());
    } catch (IOException ex) {
      // a temp file; leave it
    }
  }

  private void awaitListening() throws IOException, InterruptedException {
    LocalBinary.awaitReady(
        this.program,
        "emulator",
        hostPort(),
        STARTUP_TIMEOUT,
        Duration.ofMillis(20),
        () -> {
          try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(LocalBinary.loopback(), port()), 200);
            return true;
          }
        },
        () -> LocalBinary.tail(this.program.log(), 2000));
  }
}
