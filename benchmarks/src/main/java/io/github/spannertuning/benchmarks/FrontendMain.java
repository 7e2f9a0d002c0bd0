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
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The simulated Spanner frontend, in its own JVM: autoconfigure's {@link MockSpannerServer} with
 * the knobs given as flags. It prints {@code KNOBS <json>} and {@code READY <port>}, then answers
 * one command per line on stdin with one line on stdout, so that the load generator can read the
 * server's counters without sharing its JVM (its CPU and allocations stay out of the client's
 * figures):
 *
 * <ul>
 *   <li>{@code mark}: the connections open so far belong to earlier clients; counters restart;
 *   <li>{@code degrade <ms> <seed> [<recent ms>]}: slow down one connection opened since the mark,
 *       picked at random with the seed ({@code 0} ms clears it); with {@code recent ms}, one of
 *       those that carried a call in that last stretch of time, which a client's dynamic pool has
 *       not removed;
 *   <li>{@code stall}: the busiest connection opened since the mark stops answering: calls that
 *       arrive on it from now on are held unanswered until the client gives up on them;
 *   <li>{@code restore}: the slowed or stalled connection answers as the others again, for calls
 *       that arrive from now on;
 *   <li>{@code service <floor ms> <mean ms>|default}: the time per query from now on, a floor plus
 *       an exponential part of the given mean, or the knobs' own (which also ends stragglers);
 *   <li>{@code stragglers <share> <ms>}: from now on each call, independently, is {@code ms} late
 *       with probability {@code share}, on top of the knobs' own time per query;
 *   <li>{@code trailers <ms>}: streams that end from now on send their trailers this late;
 *   <li>{@code reset}: counters restart, connections stay; answers with the server's process CPU
 *       time so far, in ns;
 *   <li>{@code stats}: {@code STATS <json>}: queries (point selects, and a mixed workload's
 *       reports) per connection opened since the mark, streaming calls that arrived (a hedge is one
 *       more), calls made late as stragglers, cancels the server saw, RST_STREAM frames the client
 *       sent and GOAWAY frames the server sent (counted on the wire), and when calls arrived on the
 *       faulty connection and on all of them, since the last mark or reset; on a frontend whose
 *       connections cost a set-up or are retired, also the calls that waited for a set-up, the
 *       priming queries apart from the reads, and the connections set up ({@link SetUpWaits});
 *   <li>{@code quit}.
 * </ul>
 */
public final class FrontendMain {

  private static final ObjectMapper json = new ObjectMapper();

  /** The width of the buckets that arrivals are counted in for a faulty connection. */
  static final long ARRIVAL_BUCKET_MS = 100;

  /** How long after a fault began the client may still send calls to the faulty connection. */
  static final long FAULT_GRACE_MS = 200;

  private final MockSpannerServer server;

  private Set<SocketAddress> earlier = new HashSet<>();

  private SocketAddress degraded;

  /** When the connection was slowed or stalled, and when it recovered; 0 if not. */
  private long faultNanos;

  private long restoredNanos;

  private long resetNanos = System.nanoTime();

  /** The server's connections set up, over its life, at the last mark or reset. */
  private int setUpAtReset;

  private final FrontendKnobs knobs;

  /** Calls made late by the straggler tail since the last mark or reset. */
  private final AtomicLong lateCalls = new AtomicLong();

  private final boolean countFrames;

  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

  private FrontendMain(MockSpannerServer server, FrontendKnobs knobs) {
    this.server = server;
    this.knobs = knobs;
    this.countFrames = knobs.countFrames();
  }

  public static void main(String[] args) throws Exception {
    Flags flags = Flags.parse(args);
    FrontendKnobs knobs = FrontendKnobs.from(flags);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    try (MockSpannerServer server = knobs.start()) {
      FrontendMain frontend = new FrontendMain(server, knobs);
      out.println("KNOBS " + json.writeValueAsString(knobs.asMap()));
      out.println("READY " + server.port());
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
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
        this.degraded = null;
        this.server.slowDown((SocketAddress) null, 0);
        this.server.stall(null);
        this.faultNanos = 0;
        this.restoredNanos = 0;
        reset();
        return "OK";
      }
      case "degrade" -> {
        long millis = Long.parseLong(command[1]);
        List<SocketAddress> fresh = freshConnections();
        if (command.length > 3) {
          fresh.retainAll(usedSince(System.nanoTime() - Long.parseLong(command[3]) * 1_000_000));
        }
        fresh.sort((a, b) -> a.toString().compareTo(b.toString()));
        this.degraded =
            (millis > 0 && !fresh.isEmpty())
                ? fresh.get(new Random(Long.parseLong(command[2])).nextInt(fresh.size()))
                : null;
        this.server.slowDown(this.degraded, millis);
        this.faultNanos = (this.degraded != null) ? System.nanoTime() : 0;
        return "OK " + this.degraded;
      }
      case "stall" -> {
        Map<SocketAddress, Long> arrivals = new LinkedHashMap<>();
        freshConnections().forEach((connection) -> arrivals.put(connection, 0L));
        for (MockSpannerServer.Arrival arrival : this.server.arrivals()) {
          arrivals.computeIfPresent(arrival.connection(), (key, count) -> count + 1);
        }
        this.degraded =
            arrivals.entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .map(Map.Entry::getKey)
                .orElse(null);
        this.server.stall(this.degraded);
        this.faultNanos = (this.degraded != null) ? System.nanoTime() : 0;
        return "OK " + this.degraded;
      }
      case "restore" -> {
        this.server.slowDown((SocketAddress) null, 0);
        this.server.stall(null);
        this.restoredNanos = System.nanoTime();
        return "OK";
      }
      case "service" -> {
        this.server.setServiceTime(
            command[1].equals("default")
                ? this.knobs.serviceTime()
                : MockSpannerServer.ServiceTime.floorPlusExponential(
                    FrontendKnobs.millis(Double.parseDouble(command[1])),
                    FrontendKnobs.millis(Double.parseDouble(command[2]))));
        return "OK";
      }
      case "stragglers" -> {
        double share = Double.parseDouble(command[1]);
        long lateNanos = FrontendKnobs.millis(Double.parseDouble(command[2])).toNanos();
        MockSpannerServer.ServiceTime base = this.knobs.serviceTime();
        AtomicLong late = this.lateCalls;
        this.server.setServiceTime(
            () -> {
              long nanos = base.sampleNanos();
              if (ThreadLocalRandom.current().nextDouble() < share) {
                late.incrementAndGet();
                nanos += lateNanos;
              }
              return nanos;
            });
        return "OK";
      }
      case "trailers" -> {
        this.server.setTrailersDelay(
            java.time.Duration.ofNanos((long) (Double.parseDouble(command[1]) * 1_000_000)));
        return "OK";
      }
      case "reset" -> {
        reset();
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

  private void reset() {
    this.server.reset();
    this.lateCalls.set(0);
    this.resetNanos = System.nanoTime();
    this.setUpAtReset = this.server.connectionsSetUp();
  }

  /** The connections that carried a call that arrived after the given time. */
  private Set<SocketAddress> usedSince(long nanos) {
    Set<SocketAddress> used = new HashSet<>();
    for (MockSpannerServer.Arrival arrival : this.server.arrivals()) {
      if (arrival.nanos() - nanos > 0) {
        used.add(arrival.connection());
      }
    }
    return used;
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
    if (this.degraded != null) {
      stats.put("faultArrivals", faultArrivals());
    }
    stats.put("streamingCalls", this.server.arrivals().size());
    stats.put("lateCalls", this.lateCalls.get());
    stats.put("serverCancels", this.server.cancels());
    stats.put("processCpuNanos", this.os.getProcessCpuTime());
    stats.put("cores", Runtime.getRuntime().availableProcessors());
    if (this.countFrames) {
      stats.put("rstStreams", this.server.rstStreams());
      stats.put("goAways", this.server.goAways());
      stats.put("goAwaysForResets", this.server.goAwaysForResets());
    }
    if (this.knobs.modelsConnections()) {
      stats.put(
          "connections",
          SetUpWaits.of(
                  this.server.calls(),
                  this.server.callsThatWaitedForSetUp(),
                  this.server.connectionsSetUp() - this.setUpAtReset)
              .toMap());
    }
    return stats;
  }

  /**
   * Calls that arrived since the last reset, on every connection and on the faulty one: per bucket
   * of {@link #ARRIVAL_BUCKET_MS}, and after the fault's first {@link #FAULT_GRACE_MS}. Times are
   * ms since the reset.
   */
  private Map<String, Object> faultArrivals() {
    long bucketNanos = ARRIVAL_BUCKET_MS * 1_000_000L;
    long graceEnds = this.faultNanos + FAULT_GRACE_MS * 1_000_000L;
    List<Long> all = new ArrayList<>();
    List<Long> faulty = new ArrayList<>();
    long late = 0;
    long lateOnFaulty = 0;
    for (MockSpannerServer.Arrival arrival : this.server.arrivals()) {
      int bucket = (int) Math.max(0, (arrival.nanos() - this.resetNanos) / bucketNanos);
      while (all.size() <= bucket) {
        all.add(0L);
        faulty.add(0L);
      }
      boolean onFaulty = arrival.connection().equals(this.degraded);
      all.set(bucket, all.get(bucket) + 1);
      if (onFaulty) {
        faulty.set(bucket, faulty.get(bucket) + 1);
      }
      if (arrival.nanos() > graceEnds) {
        late++;
        lateOnFaulty += onFaulty ? 1 : 0;
      }
    }
    Map<String, Object> arrivals = new LinkedHashMap<>();
    arrivals.put("bucketMs", ARRIVAL_BUCKET_MS);
    arrivals.put("all", all);
    arrivals.put("faulty", faulty);
    arrivals.put("graceMs", FAULT_GRACE_MS);
    arrivals.put("afterGrace", late);
    arrivals.put("afterGraceOnFaulty", lateOnFaulty);
    arrivals.put(
        "restoredAtMs",
        (this.restoredNanos > this.resetNanos)
            ? (this.restoredNanos - this.resetNanos) / 1e6
            : null);
    return arrivals;
  }
}
