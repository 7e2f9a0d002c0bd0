package io.github.spannertuning.sample.backend;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The official Cloud Spanner emulator ({@code emulator_main}), run by the sample on a free port.
 * Stopped, with any process it started (the binary may be a wrapper), when the backend is closed
 * and at the latest when the JVM exits, whether or not the application context was closed.
 */
final class EmulatorProcess implements AutoCloseable {

  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

  private final Process process;

  private final int port;

  private final Path log;

  private final Thread shutdownHook;

  private EmulatorProcess(Process process, int port, Path log) {
    this.process = process;
    this.port = port;
    this.log = log;
    this.shutdownHook = new Thread(this::stopQuietly, "stop emulator " + process.pid());
  }

  /** Starts {@code binary} on a free loopback port and waits until it listens. */
  static EmulatorProcess start(Path binary) throws IOException, InterruptedException {
    IOException last = null;
    // The free port is found by binding and releasing it: another process may take it in
    // between, so try a few times.
    for (int attempt = 0; attempt < 3; attempt++) {
      int port = freePort();
      Path log = Files.createTempFile("spanner-emulator", ".log");
      // Deleted after the shutdown hooks, so after the emulator stopped writing to it.
      log.toFile().deleteOnExit();
      Process process =
          new ProcessBuilder(binary.toString(), "--host_port", "127.0.0.1:" + port)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      EmulatorProcess emulator = new EmulatorProcess(process, port, log);
      try {
        Runtime.getRuntime().addShutdownHook(emulator.shutdownHook);
      } catch (IllegalStateException exiting) {
        emulator.stopQuietly();
        throw exiting;
      }
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

  /** The process started: {@code emulator_main}, or a wrapper that started it. */
  ProcessHandle process() {
    return this.process.toHandle();
  }

  @Override
  public void close() throws InterruptedException {
    try {
      Runtime.getRuntime().removeShutdownHook(this.shutdownHook);
    } catch (IllegalStateException exiting) {
      // The JVM is exiting: the hook stops the emulator too; this waits for it as well.
    }
    stop();
    try {
      Files.deleteIfExists(this.log);
    } catch (IOException ex) {
      // Deleted on exit.
    }
  }

  private synchronized void stop() throws InterruptedException {
    // Listed before any is stopped: a wrapper's children pass to init when it exits, and are then
    // no longer among its descendants.
    List<ProcessHandle> tree = new ArrayList<>();
    tree.add(this.process.toHandle());
    this.process.descendants().forEach(tree::add);
    tree.forEach(ProcessHandle::destroy);
    if (!awaitExit(tree)) {
      tree.forEach(ProcessHandle::destroyForcibly);
      awaitExit(tree);
    }
  }

  private void stopQuietly() {
    try {
      stop();
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
    }
  }

  private static boolean awaitExit(List<ProcessHandle> tree) throws InterruptedException {
    long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
    while (tree.stream().anyMatch(ProcessHandle::isAlive)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
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
