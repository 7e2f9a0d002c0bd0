package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.spannertuning.testing.MockSpannerServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * The simulated Spanner frontend, in its own JVM: autoconfigure's {@link MockSpannerServer} with
 * the knobs given as flags. It prints {@code KNOBS <json>} and {@code READY <port>}, then answers
 * one command per line on stdin with one line on stdout, so that the load generator can read the
 * server's counters without sharing its JVM (its CPU and allocations stay out of the client's
 * figures):
 *
 * <ul>
 *   <li>{@code mark}: the connections open so far belong to earlier clients; counters restart;
 *   <li>{@code degrade <ms> <seed>}: slow down one connection opened since the mark, picked at
 *       random with the seed ({@code 0} ms clears it);
 *   <li>{@code reset}: counters restart, connections stay; answers with the server's process CPU
 *       time so far, in ns;
 *   <li>{@code stats}: {@code STATS <json>}: point selects per connection opened since the mark,
 *       cancels the server saw, RST_STREAM frames the client sent and GOAWAY frames the server
 *       sent (counted on the wire), since the last mark or reset;
 *   <li>{@code quit}.
 * </ul>
 */
public final class FrontendMain {

  private static final ObjectMapper json = new ObjectMapper();

  private final MockSpannerServer server;

  private Set<SocketAddress> earlier = new HashSet<>();

  private SocketAddress degraded;

  private final boolean countFrames;

  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private FrontendMain(MockSpannerServer server, boolean countFrames) {
    this.server = server;
    this.countFrames = countFrames;
  }

  public static void main(String[] args) throws Exception {
    Flags flags = Flags.parse(args);
    FrontendKnobs knobs = FrontendKnobs.from(flags);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (MockSpannerServer server = knobs.start()) {
      FrontendMain frontend = new FrontendMain(server, knobs.countFrames());
      out.println("KNOBS " + json.writeValueAsString(knobs.asMap()));
      out.println("READY " + server.port());
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      String line;
      while ((line = in.readLine()) != null && !line.equals("quit")) {
        out.println(frontend.handle(line.trim().split("\\s+")));
      }
    }
  }

  private String handle(String[] command) throws Exception {
    switch (command[0]) {
      case "mark" -> {
        this.earlier = new HashSet<>(this.server.connections());
        this.server.reset();
        return "OK";
      }
      case "degrade" -> {
        long millis = Long.parseLong(command[1]);
        List<SocketAddress> fresh = freshConnections();
        fresh.sort((a, b) -> a.toString().compareTo(b.toString()));
        this.degraded =
            (millis > 0 && !fresh.isEmpty())
                ? fresh.get(new Random(Long.parseLong(command[2])).nextInt(fresh.size()))
                : null;
        this.server.slowDown(this.degraded, millis);
        return "OK " + this.degraded;
      }
      case "reset" -> {
        this.server.reset();
        return "OK " + this.os.getProcessCpuTime();
      }
      case "stats" -> {
        return "STATS " + json.writeValueAsString(stats());
      }
      default -> {
        return "ERROR unknown command " + String.join(" ", command);
      }
    }
  }

  private List<SocketAddress> freshConnections() {
    List<SocketAddress> fresh = new ArrayList<>(this.server.connections());
    fresh.removeAll(this.earlier);
    return fresh;
  }

  private Map<String, Object> stats() {
    Map<String, Long> perConnection = new LinkedHashMap<>();
    for (SocketAddress connection : freshConnections()) {
      perConnection.put(connection.toString(), 0L);
    }
    for (MockSpannerServer.Call call : this.server.calls("ExecuteStreamingSql")) {
      perConnection.computeIfPresent(call.connection().toString(), (key, count) -> count + 1);
    }
    Map<String, Object> stats = new LinkedHashMap<>();
    stats.put("queriesPerConnection", perConnection);
    stats.put("degraded", (this.degraded != null) ? this.degraded.toString() : null);
    stats.put("serverCancels", this.server.cancels());
    stats.put("processCpuNanos", this.os.getProcessCpuTime());
    stats.put("cores", Runtime.getRuntime().availableProcessors());
    if (this.countFrames) {
      stats.put("rstStreams", this.server.rstStreams());
      stats.put("goAways", this.server.goAways());
      stats.put("goAwaysForResets", this.server.goAwaysForResets());
    }
    return stats;
  }
}
