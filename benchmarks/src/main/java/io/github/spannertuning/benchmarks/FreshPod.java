package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.spannertuning.client.SpannerTuning;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * The fresh-pod workload: every round starts a <b>new JVM</b> for the client, as a deploy, a
 * rolling restart or a scale-out starts a new pod, waits until it is ready, and sends it a burst at
 * once; the same burst again on the same process once it has served {@code --warm-s} of traffic.
 *
 * <p>In the child JVM: the client is built (stock: a plain client, ready as soon as it and its
 * database client are built, as a stock application reports ready; tuned: the starter's runtime
 * piece from a plain {@code SpannerOptions.Builder}, ready once {@code SpannerTuningState.warmUp}
 * returns, as the starter's readiness waits), then {@code --burst-threads} threads read {@code
 * --burst-reads} point selects each, all starting together; then {@code --warm-threads} threads in
 * a closed loop for {@code --warm-s}; then the same burst. Time to ready is from the JVM's start.
 *
 * <p>In the parent: the frontend (connections cost {@code --connection-set-up-ms} to set up), the
 * child under {@code taskset} on {@code --client-cpus} cores with {@code -XX:ActiveProcessorCount},
 * the frontend on the others; where the machine has no other core (2 on a 2-core machine), both
 * share every core and the report says so. Each round runs every variant, in an order that
 * alternates between rounds, and records the machine's CPU steal over it.
 */
final class FreshPod {

  private static final ObjectMapper json = new ObjectMapper();

  private static final String RESULT = "RESULT ";

  /** The child's point selects that failed, in the bursts and between them. */
  private static final java.util.concurrent.atomic.AtomicLong FAILED =
      new java.util.concurrent.atomic.AtomicLong();

  private FreshPod() {}

  public static void main(String[] args) throws Exception {
    Flags flags = Flags.parse(args);
    if (flags.optional("child-port") != null) {
      child(flags);
      System.exit(0);
    }
    String report = flags.optional("report");
    if (report != null) {
      FreshPodReport.write(Paths.get(report), flags.string("command", ""));
      return;
    }
    parent(flags);
  }

  /** A variant of the child: stock, or tuned with this many warm-up reads (-1: the default). */
  record Child(String label, boolean tuned, int reads) {

    static Child of(String name) {
      if (name.equals("stock")) {
        return new Child(name, false, 0);
      }
      if (name.equals("tuned")) {
        return new Child(name, true, SpannerTuning.DEFAULT_WARM_UP_READS);
      }
      if (name.startsWith("tuned-reads-")) {
        return new Child(name, true, Integer.parseInt(name.substring("tuned-reads-".length())));
      }
      throw new IllegalArgumentException(
          "--variants: unknown variant '" + name + "'; use stock, tuned or tuned-reads-N");
    }
  }

  private static void parent(Flags flags) throws Exception {
    String line = flags.string("line", "unknown");
    int rounds = flags.integer("rounds", 3, 1, 100);
    List<Integer> cpus =
        Arrays.stream(flags.string("client-cpus", "1,2").split(","))
            .map(String::trim)
            .map(Integer::parseInt)
            .toList();
    List<Child> variants =
        Arrays.stream(flags.string("variants", "stock,tuned").split(","))
            .map(String::trim)
            .map(Child::of)
            .toList();
    double setUpMs = flags.positive("connection-set-up-ms", 200);
    Path out = Paths.get(flags.string("out", "benchmarks/target/fresh-pod.json"));
    List<String> childFlags = new ArrayList<>();
    for (String name :
        List.of(
            "channels",
            "burst-threads",
            "burst-reads",
            "warm-s",
            "warm-threads",
            "warm-up-timeout-s")) {
      String value = flags.optional(name);
      if (value != null) {
        childFlags.add("--" + name);
        childFlags.add(value);
      }
    }
    String childJava =
        flags.string(
            "child-java", Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    String childJvmOptions = flags.string("child-jvm-options", "");
    flags.rejectUnknown();

    List<Map<String, Object>> results = new ArrayList<>();
    for (int clientCpus : cpus) {
      CpuLimit.Split split = CpuLimit.split(clientCpus);
      boolean pinned = split.skipped() == null;
      String sharing =
          pinned
              ? "client on core(s) "
                  + split.clientCores()
                  + ", frontend on "
                  + split.frontendCores()
              : "client and frontend share every core (" + split.skipped() + ")";
      BenchmarkMain.log("fresh-pod, %s, %d client CPU(s): %s", line, clientCpus, sharing);
      Map<String, String> frontendFlags = new LinkedHashMap<>();
      frontendFlags.put("connection-set-up-ms", Double.toString(setUpMs));
      try (Frontend frontend =
          Frontend.start(frontendFlags, pinned ? split.frontendCores() : null)) {
        for (int round = 0; round < rounds; round++) {
          List<Child> order = new ArrayList<>(variants);
          if (round % 2 == 1) {
            java.util.Collections.reverse(order);
          }
          for (Child variant : order) {
            frontend.mark();
            long serverCpuStart = frontend.resetCounters();
            MachineCpu machineStart = MachineCpu.now();
            List<String> command = new ArrayList<>();
            if (pinned) {
              command.addAll(CpuLimit.pinned(split.clientCores()));
            }
            command.add(childJava);
            command.add("-XX:ActiveProcessorCount=" + clientCpus);
            command.add("-Xmx512m");
            if (!childJvmOptions.isBlank()) {
              command.addAll(Arrays.asList(childJvmOptions.trim().split("\\s+")));
            }
            command.addAll(
                List.of(
                    "-cp",
                    System.getProperty("java.class.path"),
                    FreshPod.class.getName(),
                    "--child-port",
                    Integer.toString(frontend.port()),
                    "--child-variant",
                    variant.label()));
            command.addAll(childFlags);
            JsonNode child = runChild(command);
            JsonNode stats = frontend.stats();
            long serverCpu = stats.path("processCpuNanos").asLong() - serverCpuStart;
            MachineCpu.Share machine = machineStart.until(MachineCpu.now(), serverCpu);
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("line", line);
            result.put("clientCpus", clientCpus);
            result.put("pinned", pinned);
            result.put("variant", variant.label());
            result.put("round", round + 1);
            json.convertValue(child, Map.class).forEach((k, v) -> result.put((String) k, v));
            result.put(
                "readsThatWaited", stats.path("connections").path("readsThatWaited").asLong());
            result.put("steal", machine.steal());
            results.add(result);
            BenchmarkMain.log(
                "fresh-pod %s %d CPU round %d %-16s ready %5.0f ms (warm-up %4.0f ms, %d reads),"
                    + " first burst p50 %6.2f p99 %7.2f ms, warm p50 %6.2f p99 %6.2f ms,"
                    + " waited %d, steal %.1f%%",
                line,
                clientCpus,
                round + 1,
                variant.label(),
                child.path("readyMs").asDouble(),
                child.path("warmUpMs").asDouble(),
                child.path("warmUpReads").asInt(),
                child.path("firstP50Ms").asDouble(),
                child.path("firstP99Ms").asDouble(),
                child.path("warmP50Ms").asDouble(),
                child.path("warmP99Ms").asDouble(),
                stats.path("connections").path("readsThatWaited").asLong(),
                machine.steal() * 100);
          }
        }
      }
    }
    Map<String, Object> file = new LinkedHashMap<>();
    file.put("line", line);
    file.put("cpuModel", MachineCpu.model());
    file.put("machineCores", Runtime.getRuntime().availableProcessors());
    file.put("flags", flags.used());
    file.put("childJava", childJava);
    file.put("childJvmOptions", childJvmOptions);
    file.put("results", results);
    json.writerWithDefaultPrettyPrinter().writeValue(out.toFile(), file);
    BenchmarkMain.log("fresh-pod: %s", out);
  }

  private static JsonNode runChild(List<String> command) throws Exception {
    Process process =
        new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    JsonNode result = null;
    try (BufferedReader in =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String text;
      while ((text = in.readLine()) != null) {
        if (text.startsWith(RESULT)) {
          result = json.readTree(text.substring(RESULT.length()));
        }
      }
    }
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    if (result == null) {
      throw new IllegalStateException(
          "the fresh-pod child JVM gave no result (exit " + process.exitValue() + ")");
    }
    return result;
  }

  /** In the new JVM: build, get ready, burst, warm traffic, the same burst; print the figures. */
  private static void child(Flags flags) throws Exception {
    int port = Integer.parseInt(flags.string("child-port", "0"));
    Child variant = Child.of(flags.string("child-variant", "stock"));
    int channels = flags.integer("channels", 8, 1, 256);
    int burstThreads = flags.integer("burst-threads", 32, 1, 1000);
    int burstReads = flags.integer("burst-reads", 10, 1, 10_000);
    double warmSeconds = flags.positive("warm-s", 8);
    int warmThreads = flags.integer("warm-threads", 8, 1, 1000);
    double timeoutSeconds = flags.positive("warm-up-timeout-s", 10);
    long jvmStartMillis = ManagementFactory.getRuntimeMXBean().getStartTime();
    Map<String, Object> result = new LinkedHashMap<>();
    BenchClient client =
        variant.tuned()
            ? BenchClient.tuned(
                SpannerTuning.newBuilder().logWhenBuilt(false).warmUpReads(variant.reads()).build(),
                port,
                channels)
            : BenchClient.open(Variant.STOCK, port, ClientPool.fixed(channels));
    try (client) {
      long warmUpStart = System.nanoTime();
      int reads = 0;
      if (client.state() != null) {
        var warmUp = client.state().warmUp(Duration.ofMillis((long) (timeoutSeconds * 1000)));
        reads = warmUp.reads().answered();
      }
      long readyMillis = System.currentTimeMillis();
      result.put("readyMs", (double) (readyMillis - jvmStartMillis));
      result.put("warmUpMs", (System.nanoTime() - warmUpStart) / 1e6);
      result.put("warmUpReads", reads);
      long jitAtReady = jitMillis();
      Histogram first = burst(client, burstThreads, burstReads);
      long jitInFirst = jitMillis() - jitAtReady;
      long warmUntil = System.nanoTime() + (long) (warmSeconds * 1e9);
      Thread[] loop = new Thread[warmThreads];
      for (int i = 0; i < warmThreads; i++) {
        loop[i] =
            new Thread(
                () -> {
                  client.prepareThread();
                  while (System.nanoTime() < warmUntil) {
                    try {
                      client.pointSelect();
                    } catch (RuntimeException ex) {
                      FAILED.incrementAndGet();
                    }
                  }
                });
        loop[i].start();
      }
      for (Thread thread : loop) {
        thread.join();
      }
      long jitBeforeWarm = jitMillis();
      Histogram warm = burst(client, burstThreads, burstReads);
      long jitInWarm = jitMillis() - jitBeforeWarm;
      result.put("firstP50Ms", ms(first, 50));
      result.put("firstP99Ms", ms(first, 99));
      result.put("firstMaxMs", first.getMaxValue() / 1000.0);
      result.put("warmP50Ms", ms(warm, 50));
      result.put("warmP99Ms", ms(warm, 99));
      result.put("failed", FAILED.get());
      // The JIT compilers' time (over all their threads) while each burst ran: the mechanism of
      // a first burst's tail on few cores is code still being compiled beside it.
      result.put("jitAtReadyMs", jitAtReady);
      result.put("firstJitMs", jitInFirst);
      result.put("warmJitMs", jitInWarm);
    }
    System.out.println(RESULT + json.writeValueAsString(result));
    System.out.flush();
  }

  /** Threads that all start together, each reading its point selects one after another. */
  private static Histogram burst(BenchClient client, int threads, int reads) throws Exception {
    Histogram latencies = new ConcurrentHistogram(TimeUnit.SECONDS.toMicros(60), 3);
    CountDownLatch start = new CountDownLatch(1);
    Thread[] all = new Thread[threads];
    for (int i = 0; i < threads; i++) {
      all[i] =
          new Thread(
              () -> {
                client.prepareThread();
                try {
                  start.await();
                } catch (InterruptedException ex) {
                  Thread.currentThread().interrupt();
                  return;
                }
                for (int r = 0; r < reads; r++) {
                  long began = System.nanoTime();
                  try {
                    client.pointSelect();
                  } catch (RuntimeException ex) {
                    FAILED.incrementAndGet();
                  }
                  latencies.recordValue((System.nanoTime() - began) / 1000);
                }
              });
      all[i].start();
    }
    start.countDown();
    for (Thread thread : all) {
      thread.join();
    }
    return latencies;
  }

  private static long jitMillis() {
    var compilation = ManagementFactory.getCompilationMXBean();
    return (compilation != null && compilation.isCompilationTimeMonitoringSupported())
        ? compilation.getTotalCompilationTime()
        : -1;
  }

  private static double ms(Histogram histogram, double percentile) {
    return histogram.getValueAtPercentile(percentile) / 1000.0;
  }
}
