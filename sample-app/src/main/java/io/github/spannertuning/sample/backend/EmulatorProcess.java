package io.github.spannertuning.sample.backend;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The official Cloud Spanner emulator ({@code emulator_main}), run by the sample on a free port.
 */
final class EmulatorProcess implements AutoCloseable {

  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

  private final Process process;

  private final int port;

  private final Path log;

  private EmulatorProcess(Process process, int port, Path log) {
    this.process = process;
    this.port = port;
    this.log = log;
  }

  /** Starts {@code binary} on a free loopback port and waits until it listens. */
  static EmulatorProcess start(Path binary) throws IOException, InterruptedException {
    IOException last = null;
    // The free port is found by binding and releasing it: another process may take it in
    // between, so try a few times.
    for (int attempt = 0; attempt < 3; attempt++) {
      int port = freePort();
      Path log = Files.createTempFile("spanner-emulator", ".log");
      Process process =
          new ProcessBuilder(binary.toString(), "--host_port", "127.0.0.1:" + port)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      EmulatorProcess emulator = new EmulatorProcess(process, port, log);
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

  String hostPort() {
    return "127.0.0.1:" + this.port;
  }

  @Override
  public void close() throws InterruptedException {
    this.process.descendants().forEach(ProcessHandle::destroy);
    this.process.destroy();
    if (!this.process.waitFor(10, TimeUnit.SECONDS)) {
      this.process.descendants().forEach(ProcessHandle::destroyForcibly);
      this.process.destroyForcibly();
      this.process.waitFor(10, TimeUnit.SECONDS);
    }
    try {
      Files.deleteIfExists(this.log);
    } catch (IOException ex) {
      // A temp file: the OS cleans it up.
    }
  }

  private void awaitListening() throws IOException, InterruptedException {
    long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
    while (System.nanoTime() < deadline) {
      if (!this.process.isAlive()) {
        throw new IOException(
            "emulator exited with " + this.process.exitValue() + ": " + logTail());
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
