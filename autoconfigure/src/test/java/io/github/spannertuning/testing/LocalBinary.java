package io.github.spannertuning.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A program a test runs where the machine has it, such as Prometheus or the Spanner emulator: named
 * by an environment variable, else looked for where its packages put it; started on a free loopback
 * port and waited for until it answers.
 */
final class LocalBinary {

  private final String name;

  private final String environmentVariable;

  private final List<Path> places;

  private final String hint;

  /**
   * @param name what the skip message calls it
   * @param environmentVariable the variable naming the binary, looked at first
   * @param places where its packages put it, in order
   * @param hint how to get it, for the skip message
   */
  LocalBinary(String name, String environmentVariable, List<Path> places, String hint) {
    this.name = name;
    this.environmentVariable = environmentVariable;
    this.places = List.copyOf(places);
    this.hint = hint;
  }

  /** Where the binary is looked for, in order. */
  List<Path> candidates() {
    List<Path> candidates = new ArrayList<>();
    String fromEnv = System.getenv(this.environmentVariable);
    if (fromEnv != null && !fromEnv.isBlank()) {
      candidates.add(Paths.get(fromEnv));
    }
    candidates.addAll(this.places);
    return candidates;
  }

  /** The first executable candidate, if any. */
  Optional<Path> find() {
    return candidates().stream()
        .filter((path) -> Files.isRegularFile(path) && Files.isExecutable(path))
        .findFirst();
  }

  /** A sentence saying where the binary was looked for, for skip messages. */
  String notFoundMessage() {
    return this.name
        + " not found at "
        + String.join(", ", candidates().stream().map(Path::toString).toList())
        + " ("
        + this.hint
        + "); skipping";
  }

  /** A started program: its process, the loopback port it listens on, and its log. */
  record Running(ChildProcess process, int port, Path log) {

    /** Starts the command, its output and errors going to the log. */
    static Running start(ProcessBuilder command, int port, Path log) throws IOException {
      ChildProcess process =
          ChildProcess.start(command.redirectErrorStream(true).redirectOutput(log.toFile()));
      return new Running(process, port, log);
    }
  }

  /** Starts the program on the given port, with whatever else it needs for one attempt. */
  @FunctionalInterface
  interface Launch<T> {
    T on(int port) throws IOException;
  }

  /** A step on a started program: waiting until it is ready, or stopping it. */
  @FunctionalInterface
  interface Step<T> {
    void run(T program) throws IOException, InterruptedException;
  }

  /** Whether the program answers yet; an IOException means it does not. */
  @FunctionalInterface
  interface Probe {
    boolean ready() throws IOException, InterruptedException;
  }

  /**
   * Launches the program on a free port and waits until it is ready. The port is found by binding
   * and releasing it, so another process may take it in between: a launch that does not become
   * ready is stopped and tried again on another port, three times in all.
   */
  static <T> T startOnFreePort(Launch<T> launch, Step<T> awaitReady, Step<T> stop)
      throws IOException, InterruptedException {
    IOException last = null;
    for (int attempt = 0; attempt < 3; attempt++) {
      T program = launch.on(freePort());
      try {
        awaitReady.run(program);
        return program;
      } catch (IOException ex) {
        stop.run(program);
        last = ex;
      }
    }
    throw last;
  }

  /**
   * Polls {@code probe} every {@code poll} until it says the program is ready; fails, with the tail
   * of its log, when its process exits or {@code timeout} passes first.
   *
   * @param name the program, for the failure message
   * @param where its address, for the failure message
   */
  static void awaitReady(
      Running program,
      String name,
      String where,
      Duration timeout,
      Duration poll,
      Probe probe,
      Supplier<String> logTail)
      throws IOException, InterruptedException {
    Process process = program.process().process();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException(name + " exited with " + process.exitValue() + ": " + logTail.get());
      }
      try {
        if (probe.ready()) {
          return;
        }
      } catch (IOException notYet) {
        // not listening yet
      }
      Thread.sleep(poll.toMillis());
    }
    throw new IOException(
        name + " not ready on " + where + " after " + timeout + ": " + logTail.get());
  }

  /** The last {@code chars} characters of a log, for a failure message. */
  static String tail(Path log, int chars) {
    try {
      String text = Files.readString(log);
      return text.length() > chars ? text.substring(text.length() - chars) : text;
    } catch (IOException ex) {
      return "(no log: " + ex + ")";
    }
  }

  static InetAddress loopback() throws IOException {
    return InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
  }

  /**
   * A loopback port free now: bound and released, so another process may take it in between, which
   * a test on a shared machine can afford.
   */
  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 0, loopback())) {
      return socket.getLocalPort();
    }
  }
}
