package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** The load generator's handle on the {@link FrontendMain} process it started. */
final class Frontend implements AutoCloseable {

  private static final ObjectMapper json = new ObjectMapper();

  private final Process process;

  private final PrintStream commands;

  private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();

  private final JsonNode knobs;

  private final int port;

  private Frontend(Process process) throws Exception {
    this.process = process;
    this.commands = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
    Thread reader = new Thread(this::readReplies, "frontend-stdout");
    reader.setDaemon(true);
    reader.start();
    this.knobs = json.readTree(reply("KNOBS "));
    this.port = Integer.parseInt(reply("READY "));
  }

  /** Starts the frontend in a JVM of its own, on this JVM's classpath, with the given flags. */
  static Frontend start(Map<String, String> flags) throws Exception {
    return start(flags, null);
  }

  /** As {@link #start(Map)}, the JVM pinned to the given cores ({@code null}: any core). */
  static Frontend start(Map<String, String> flags, String cores) throws Exception {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> command = new ArrayList<>();
    if (cores != null) {
      command.addAll(CpuLimit.pinned(cores));
    }
    command.add(java.toString());
    command.add("-Xmx1g");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(FrontendMain.class.getName());
    flags.forEach(
        (name, value) -> {
          command.add("--" + name);
          command.add(value);
        });
    ProcessBuilder builder =
        new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
    return new Frontend(builder.start());
  }

  int port() {
    return this.port;
  }

  /** The frontend JVM's process id (taskset execs the JVM in its own process). */
  long pid() {
    return this.process.pid();
  }

  JsonNode knobs() {
    return this.knobs;
  }

  /** Forgets the connections of earlier clients and restarts the counters. */
  void mark() throws Exception {
    command("mark");
  }

  /** Slows one connection of the current client; returns it as the server names it, or "null". */
  String degrade(long millis, long seed) throws Exception {
    return command("degrade " + millis + " " + seed).trim();
  }

  /**
   * As {@link #degrade(long, long)}, one of the connections that carried a call in the last {@code
   * recentMillis}: on a dynamic pool, one the pool still has.
   */
  String degrade(long millis, long seed, long recentMillis) throws Exception {
    return command("degrade " + millis + " " + seed + " " + recentMillis).trim();
  }

  /**
   * Stops the busiest connection of the current client from answering; returns it as the server
   * names it, or "null".
   */
  String stall() throws Exception {
    return command("stall").trim();
  }

  /** The slowed or stalled connection answers as the others again. */
  void restore() throws Exception {
    command("restore");
  }

  /** The frontend's time per query from now on: a floor plus an exponential part of this mean. */
  void serviceTime(double floorMs, double meanMs) throws Exception {
    command("service " + floorMs + " " + meanMs);
  }

  /**
   * From now on each call is {@code lateMs} late with probability {@code share}, independently, on
   * top of the frontend's own time per query.
   */
  void stragglers(double share, double lateMs) throws Exception {
    command("stragglers " + share + " " + lateMs);
  }

  /** The frontend's own time per query again, without stragglers. */
  void defaultServiceTime() throws Exception {
    command("service default");
  }

  /** Sends the trailers of streams that end from now on this many ms after their last message. */
  void trailersDelay(double millis) throws Exception {
    command("trailers " + millis);
  }

  /** Restarts the counters; returns the frontend's process CPU time so far, in ns. */
  long resetCounters() throws Exception {
    return Long.parseLong(command("reset").trim());
  }

  synchronized JsonNode stats() throws Exception {
    this.commands.println("stats");
    return json.readTree(reply("STATS "));
  }

  /** One command and its reply; a window's fault timer may send one while the window runs. */
  private synchronized String command(String command) throws Exception {
    this.commands.println(command);
    return reply("OK");
  }

  private String reply(String prefix) throws Exception {
    String line = this.replies.poll(60, TimeUnit.SECONDS);
    if (line == null || !line.startsWith(prefix)) {
      throw new IllegalStateException(
          "The frontend answered '" + line + "' where '" + prefix + "...' was expected");
    }
    return line.substring(prefix.length());
  }

  private void readReplies() {
    try (BufferedReader in =
        new BufferedReader(
            new InputStreamReader(this.process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.startsWith("KNOBS ")
            || line.startsWith("READY ")
            || line.startsWith("OK")
            || line.startsWith("STATS ")
            || line.startsWith("ERROR")) {
          this.replies.add(line);
        } else {
          System.err.println("[frontend] " + line);
        }
      }
    } catch (IOException ex) {
      this.replies.add("ERROR frontend output closed: " + ex.getMessage());
    }
  }

  @Override
  public void close() throws InterruptedException {
    this.commands.println("quit");
    if (!this.process.waitFor(15, TimeUnit.SECONDS)) {
      this.process.destroyForcibly();
      this.process.waitFor(5, TimeUnit.SECONDS);
    }
  }
}
