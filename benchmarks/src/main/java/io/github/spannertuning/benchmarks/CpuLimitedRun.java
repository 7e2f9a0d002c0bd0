package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The CPU-limited part of a run ({@code --client-cpus N}, 0 to skip it): the client JVM on N cores
 * with {@code -XX:ActiveProcessorCount=N}, as a JVM in a container with an N-vCPU limit sizes
 * itself, and the frontend JVM on the other cores. The load generator cannot move itself onto fewer
 * cores with the JVM sized to match, so it starts a child JVM under {@code taskset} for this part,
 * which starts its own frontend under {@code taskset} and writes its results back.
 *
 * <p>In that child: a capacity sweep (steady open-loop point selects at rising rates, each variant
 * until it falls behind: P99 over the SLO or a backlog of more than {@code --backlog-s} of
 * arrivals; its capacity is the highest rate before that and before its first failed query, and its
 * capacity by P99 the highest rate before it fell behind), then the steady load at a share of
 * stock's capacity by P99 ({@code --capacity-share}), then each of {@code --limited-workloads} with
 * its base rate set to a share of that ({@code --limited-base-share}) and its own burst multiplier.
 */
final class CpuLimitedRun {

  private static final ObjectMapper json = new ObjectMapper();

  static final String CAPACITY = "capacity";

  private final BenchmarkMain main;

  private final Flags flags;

  private final int clientCpus;

  private final List<String> workloadNames;

  private final List<Workload> all;

  private final List<Variant> variants;

  private final BenchmarkMain.Phase phase;

  private final BenchmarkMain.Phase sweepPhase;

  private final int jvmWarmupQueries;

  private final double sloMs;

  private final double[] rates;

  private final int sweepThreads;

  private final double backlogSeconds;

  private final double capacityShare;

  private final double baseShare;

  private final String childFrontendCores;

  private final String childOut;

  CpuLimitedRun(Flags flags, List<Workload> all, BenchmarkMain main) {
    this.main = main;
    this.flags = flags;
    this.all = all;
    this.clientCpus = flags.integer("client-cpus", 1, 0, 1024);
    this.workloadNames =
        Arrays.stream(flags.string("limited-workloads", "capacity,bursty,spiky").split(","))
            .map(String::trim)
            .filter((name) -> !name.isEmpty())
            .toList();
    for (Workload workload : referenceWorkloads()) {
      if (workload.connections() != null) {
        throw new IllegalArgumentException(
            "--limited-workloads "
                + workload.name()
                + " is not on the CPU-limited client: it runs on frontends of its own, which this"
                + " part does not pin to the other cores");
      }
    }
    this.variants =
        Arrays.stream(flags.string("limited-variants", "stock,tuned").split(","))
            .map(String::trim)
            .map(Variant::of)
            .toList();
    int warmup = flags.integer("limited-warmup-queries", 2000, 0, 1_000_000);
    this.phase =
        new BenchmarkMain.Phase(
            flags.integer("limited-rounds", 3, 1, 1000),
            flags.positive("limited-window-s", 15),
            warmup);
    this.sweepPhase =
        new BenchmarkMain.Phase(
            flags.integer("capacity-rounds", 2, 1, 1000),
            flags.positive("capacity-window-s", 5),
            warmup);
    this.jvmWarmupQueries = flags.integer("jvm-warmup-queries", 20_000, 0, 10_000_000);
    this.sloMs = flags.positive("slo-ms", 20);
    this.rates =
        Arrays.stream(
                flags
                    .string(
                        "capacity-rates",
                        "100,200,400,800,1200,1600,2000,2400,2800,3200,3600,4000,4800,5600")
                    .split(","))
            .map(String::trim)
            .mapToDouble(Double::parseDouble)
            .sorted()
            .toArray();
    this.sweepThreads = flags.integer("capacity-threads", 128, 1, 10_000);
    this.backlogSeconds = flags.positive("backlog-s", 1);
    this.capacityShare = flags.positive("capacity-share", 0.75);
    this.baseShare = flags.positive("limited-base-share", 1.0 / 3);
    this.childFrontendCores = flags.optional("child-frontend-cores");
    this.childOut = flags.optional("child-out");
    if (this.workloadNames.contains(CAPACITY)
        && all.stream().noneMatch((w) -> w.name().equals("steady"))) {
      throw new IllegalStateException("The capacity sweep needs the steady workload's shape");
    }
  }

  /** {@code --jvm-warmup-queries}: point selects per variant that warm the JVM, not recorded. */
  int jvmWarmupQueries() {
    return this.jvmWarmupQueries;
  }

  boolean enabled() {
    return this.clientCpus > 0 && !this.workloadNames.isEmpty();
  }

  boolean isChild() {
    return this.childFrontendCores != null;
  }

  /** In the load generator: runs this part in a pinned child JVM; its results, or why not. */
  Map<String, Object> runInChild(Path out) throws Exception {
    Map<String, Object> skipped = new LinkedHashMap<>();
    skipped.put("clientCpus", this.clientCpus);
    CpuLimit.Split split = CpuLimit.split(this.clientCpus);
    if (split.skipped() != null) {
      BenchmarkMain.log("CPU-limited client SKIPPED: %s", split.skipped());
      skipped.put("skipped", split.skipped());
      return skipped;
    }
    Path part = out.resolve("cpu-limited-part.json");
    Files.deleteIfExists(part);
    List<String> command = new ArrayList<>(CpuLimit.pinned(split.clientCores()));
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    List<String> jvmOptions = new ArrayList<>();
    for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (option.startsWith("-Xmx") || option.startsWith("-Xms")) {
        jvmOptions.add(option);
      }
    }
    jvmOptions.add("-XX:ActiveProcessorCount=" + this.clientCpus);
    command.addAll(jvmOptions);
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(BenchmarkMain.class.getName());
    this.flags
        .given()
        .forEach(
            (name, value) -> {
              command.add("--" + name);
              command.add(value);
            });
    command.addAll(
        List.of("--child-frontend-cores", split.frontendCores(), "--child-out", part.toString()));
    BenchmarkMain.log(
        "CPU-limited client: client JVM on core(s) %s, frontend on %s",
        split.clientCores(), split.frontendCores());
    Process child = new ProcessBuilder(command).inheritIO().start();
    child.waitFor();
    if (child.exitValue() != 0 || !Files.exists(part)) {
      // The unlimited figures stand without this part: it is reported missing, with the reason.
      String reason =
          "the CPU-limited child JVM failed (exit " + child.exitValue() + "); its output is above";
      BenchmarkMain.log("CPU-limited client SKIPPED: %s", reason);
      skipped.put("skipped", reason);
      return skipped;
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> results = json.readValue(part.toFile(), LinkedHashMap.class);
    Files.delete(part);
    results.put("clientCores", split.clientCores());
    results.put("frontendCores", split.frontendCores());
    results.put("clientJvmOptions", jvmOptions);
    return results;
  }

  /** In the pinned child JVM: runs this part and writes its results where the parent reads them. */
  void runAsChild(Map<String, String> frontendFlags) throws Exception {
    long started = System.nanoTime();
    Map<String, Object> results = new LinkedHashMap<>();
    results.put("clientCpus", this.clientCpus);
    try (Frontend frontend = Frontend.start(frontendFlags, this.childFrontendCores);
        ProcessMeters meters = new ProcessMeters()) {
      CpuLimit.Watch watch = new CpuLimit.Watch(frontend.pid());
      this.main.watch(watch);
      BenchmarkMain.log(
          "CPU-limited client: this JVM sees %d processor(s), may run on %s; frontend may run on %s",
          Runtime.getRuntime().availableProcessors(),
          CpuLimit.allowed("self"),
          CpuLimit.allowed(Long.toString(frontend.pid())));
      for (Variant variant : this.variants) {
        try (BenchClient client = BenchClient.open(variant, frontend.port(), this.main.pool())) {
          BenchmarkMain.warmUp(client, 16, this.jvmWarmupQueries);
        }
      }
      if (referenceWorkloads().stream().anyMatch(Workload::jdbc)) {
        // The JDBC driver's code compiles here too, not in the first variant's first window.
        for (Variant variant : this.variants) {
          try (BenchClient client =
              BenchClient.openJdbc(variant, frontend.port(), this.main.channels(), 0)) {
            BenchmarkMain.warmUp(client, 16, this.jvmWarmupQueries);
          }
        }
      }
      double stockCapacity = 0;
      if (this.workloadNames.contains(CAPACITY)) {
        Map<String, Object> capacity = sweep(frontend, meters);
        results.put("capacity", capacity);
        stockCapacity = stockScale(capacity);
      }
      List<Map<String, Object>> workloads = new ArrayList<>();
      for (Workload workload : referenceWorkloads()) {
        double rate = (stockCapacity > 0) ? stockCapacity * this.baseShare : workload.baseRate();
        workloads.add(
            this.main.runWorkload(
                frontend,
                meters,
                workload.rebased(rate, workload.threads(), this.variants),
                this.phase,
                Integer.MAX_VALUE));
      }
      results.put("workloads", workloads);
      results.put("baseShareOfStockCapacity", (stockCapacity > 0) ? this.baseShare : null);
      results.put("cores", watch.toJson());
    }
    results.put("durationSeconds", (System.nanoTime() - started) / 1e9);
    json.writeValue(Paths.get(this.childOut).toFile(), results);
    BenchmarkMain.log("CPU-limited part done in %.0f s", (System.nanoTime() - started) / 1e9);
  }

  /** The limited workloads other than the capacity sweep. */
  private List<Workload> referenceWorkloads() {
    return BenchmarkMain.choose(
        this.all,
        String.join(
            ",", this.workloadNames.stream().filter((name) -> !name.equals(CAPACITY)).toList()));
  }

  /**
   * Rising rates until each variant's P99 passes the SLO or it falls behind, then the steady load
   * at a share of stock's capacity. The first rate is run once unrecorded first: a child JVM's
   * first windows still pay for compilation and for its heap settling, and without it whichever
   * variant runs first there would pay for both.
   */
  private Map<String, Object> sweep(Frontend frontend, ProcessMeters meters) throws Exception {
    Workload steady = BenchmarkMain.choose(this.all, "steady").get(0);
    BenchmarkMain.log("capacity: settling at %.0f/s, not recorded", this.rates[0]);
    this.main.runWorkload(
        frontend,
        meters,
        steady.rebased(this.rates[0], this.sweepThreads, this.variants),
        new BenchmarkMain.Phase(
            1, this.sweepPhase.windowSeconds(), this.sweepPhase.warmupQueries()),
        (int) Math.max(this.sweepThreads, this.rates[0] * this.backlogSeconds));
    List<Variant> active = new ArrayList<>(this.variants);
    Map<String, Object> capacityRate = new LinkedHashMap<>();
    Map<String, Object> p99CapacityRate = new LinkedHashMap<>();
    Map<String, Object> firstFailureAt = new LinkedHashMap<>();
    Map<String, Object> fellBehindAt = new LinkedHashMap<>();
    this.variants.forEach((v) -> capacityRate.put(v.label(), 0.0));
    this.variants.forEach((v) -> p99CapacityRate.put(v.label(), 0.0));
    List<Map<String, Object>> points = new ArrayList<>();
    for (double rate : this.rates) {
      if (active.isEmpty()) {
        break;
      }
      int queueLimit = (int) Math.max(this.sweepThreads, rate * this.backlogSeconds);
      Map<String, Object> point =
          this.main.runWorkload(
              frontend,
              meters,
              steady.rebased(rate, this.sweepThreads, List.copyOf(active)),
              this.sweepPhase,
              queueLimit);
      point.put("rate", rate);
      for (Object entry : (List<?>) point.get("variants")) {
        @SuppressWarnings("unchecked")
        Map<String, Object> variant = (Map<String, Object>) entry;
        String label = (String) variant.get("variant");
        boolean p99Within = p99WithinSlo(variant, this.sloMs);
        boolean within = withinSlo(variant, this.sloMs);
        variant.put("withinSlo", within);
        variant.put("p99WithinSlo", p99Within);
        if (!within && !firstFailureAt.containsKey(label)) {
          firstFailureAt.put(label, rate);
        }
        if (within && !firstFailureAt.containsKey(label)) {
          capacityRate.put(label, rate);
        }
        if (p99Within) {
          p99CapacityRate.put(label, rate);
        } else {
          fellBehindAt.put(label, rate);
          active.removeIf((v) -> v.label().equals(label));
          BenchmarkMain.log("capacity: %s fell behind at %.0f/s", label, rate);
        }
      }
      points.add(point);
    }
    Map<String, Object> capacity = new LinkedHashMap<>();
    capacity.put("sloMs", this.sloMs);
    capacity.put("threads", this.sweepThreads);
    capacity.put("backlogS", this.backlogSeconds);
    capacity.put("rates", this.rates);
    capacity.put("capacityRate", capacityRate);
    capacity.put("firstFailureAt", firstFailureAt);
    capacity.put("p99CapacityRate", p99CapacityRate);
    capacity.put("fellBehindAt", fellBehindAt);
    capacity.put("points", points);
    double stock = stockScale(capacity);
    if (stock > 0) {
      Map<String, Object> atShare =
          this.main.runWorkload(
              frontend,
              meters,
              steady.rebased(
                  Math.round(stock * this.capacityShare), this.sweepThreads, this.variants),
              this.phase,
              Integer.MAX_VALUE);
      atShare.put("shareOfStockCapacity", this.capacityShare);
      capacity.put("atShare", atShare);
    }
    return capacity;
  }

  /**
   * The rate the other CPU-limited loads are scaled to: stock's capacity by P99 alone. Stock's
   * resets make the frontend send GOAWAY at any rate, and the queries in flight then fail, so its
   * capacity with no failed query measures that, not what one vCPU carries.
   */
  static double stockScale(Map<String, Object> capacity) {
    Object stock = ((Map<?, ?>) capacity.get("p99CapacityRate")).get(Variant.STOCK.label());
    return (stock instanceof Number number) ? number.doubleValue() : 0;
  }

  /** P99 at most the SLO, and every arrival sent: failed queries aside, the client kept up. */
  static boolean p99WithinSlo(Map<String, Object> variant, double sloMs) {
    return ((Number) variant.get("unsent")).longValue() == 0
        && variant.get("p99Ms") instanceof Number p99
        && p99.doubleValue() <= sloMs;
  }

  /** The capacity rule: no failed or unsent query, and P99 at most the SLO. */
  static boolean withinSlo(Map<String, Object> variant, double sloMs) {
    return ((Number) variant.get("errors")).longValue() == 0
        && ((Number) variant.get("unsent")).longValue() == 0
        && variant.get("p99Ms") instanceof Number p99
        && p99.doubleValue() <= sloMs;
  }
}
