package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.spannertuning.client.ClientVersions;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.Arm;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.experiment.CarryOver;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.experiment.GuardRail;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import org.HdrHistogram.Histogram;

/**
 * The switchback experiment beside the side-by-side benchmark, on the same workloads in one run:
 * does a tuned client's own experiment find the tuned/stock P99 ratio that two clients side by side
 * show? For each of the degraded and spiky workloads ({@link BenchmarkMain}'s shapes, the frontend
 * in its own JVM):
 *
 * <ul>
 *   <li><b>side by side</b>: a stock and a tuned client, each on its own fresh, warmed client for
 *       {@code --window-s}, in {@code --rounds} rounds of alternating order, as the load benchmark
 *       runs them; latency from each query's scheduled start, pooled over the rounds;
 *   <li><b>switchback</b>: one tuned client under the same load, while an experiment of {@code
 *       --pairs} pairs of {@code --slice-s} slices runs on it. Its {@code single-use} figures: the
 *       P99 and P50 ratios with their 95 % intervals, and the verdict. Beside them, the same run's
 *       load-generator latencies split by the arm of the slice they started in, over the slices'
 *       recorded windows: the side-by-side measure on the switchback's client. Per pair, both P99s
 *       of each slice: the load generator's, and the experiment's own, read from its meters'
 *       figures as the slice ends.
 * </ul>
 *
 * <p>The tuned client is the same in both parts: the starter's defaults with a drain timeout of
 * {@code --drain-timeout-ms}, which sets the experiment's carry-over (the longer of the drain
 * timeout and the latency estimates' 2 s memory). The frontend sends trailers 1 ms after {@code
 * last}, so a drain never waits that long. Beside each side-by-side window and each pair: the
 * machine's CPU steal and the CPU time of processes other than the client and the frontend ({@link
 * MachineCpu}).
 *
 * <pre>
 * java -cp ... io.github.spannertuning.benchmarks.ExperimentComparison --out docs/x.md
 * </pre>
 */
public final class ExperimentComparison {

  private static final List<String> WORKLOADS = List.of("degraded", "spiky");

  private static final String STOCK = "stock";

  private static final String TUNED = "tuned";

  private final Flags flags;

  private final Path out;

  private final List<Workload> workloads;

  private final int channels;

  private final int rounds;

  private final double windowSeconds;

  private final int pairs;

  private final Duration slice;

  private final Duration drainTimeout;

  private final double bucketSeconds;

  private final int warmupQueries;

  private final int jvmWarmupQueries;

  private final double jvmWarmupSeconds;

  /** How the JVM's warm-up went, per arm, for the report. */
  private final List<String> jvmWarmup = new ArrayList<>();

  private final long seed;

  private final SpannerTuning tuning;

  /** The load of the JVM's warm-up: the spiky shape, no connection slowed. */
  private final Workload warmupShape;

  private final StringBuilder report = new StringBuilder();

  private ExperimentComparison(Flags flags) {
    this.flags = flags;
    flags.string("command", "java " + ExperimentComparison.class.getName());
    this.out = Paths.get(flags.string("out", "benchmarks/target/experiment.md"));
    List<String> names =
        Arrays.stream(flags.string("workloads", String.join(",", WORKLOADS)).split(","))
            .map(String::trim)
            .filter((name) -> !name.isEmpty())
            .toList();
    for (String name : names) {
      if (!WORKLOADS.contains(name)) {
        throw new IllegalArgumentException(
            "--workloads: unknown workload '"
                + name
                + "'; use "
                + String.join(" and/or ", WORKLOADS));
      }
    }
    this.channels = flags.integer("channels", 8, 1, 256);
    this.rounds = flags.integer("rounds", 2, 1, 100);
    this.windowSeconds = flags.positive("window-s", 10);
    this.pairs = flags.integer("pairs", 8, 1, ExperimentPlan.MAX_PAIRS);
    this.slice = Duration.ofMillis((long) (flags.positive("slice-s", 7) * 1000));
    this.drainTimeout = Duration.ofMillis((long) flags.positive("drain-timeout-ms", 500));
    this.bucketSeconds = flags.positive("bucket-s", 0.1);
    this.warmupQueries = flags.integer("warmup-queries", 300, 0, 1_000_000);
    this.jvmWarmupQueries = flags.integer("jvm-warmup-queries", 20_000, 0, 10_000_000);
    this.jvmWarmupSeconds = flags.positive("jvm-warmup-s", 5);
    this.seed = (long) flags.number("seed", 1);
    double scale = flags.positive("scale", 1.0);
    double period = flags.positive("burst-period-s", 5);
    double length = flags.positive("burst-length-s", 1);
    List<Variant> variants = List.of(Variant.STOCK, Variant.TUNED);
    Workload spiky = BenchmarkMain.spiky(flags, scale, period, length, variants);
    Workload degraded = BenchmarkMain.degraded(spiky, (long) flags.positive("degrade-ms", 20));
    this.warmupShape = spiky;
    Map<String, Workload> byName = Map.of("spiky", spiky, "degraded", degraded);
    this.workloads = names.stream().map(byName::get).toList();
    this.tuning =
        SpannerTuning.newBuilder()
            .logWhenBuilt(false)
            .streamEndGuardDrainTimeout(this.drainTimeout)
            .build();
    // The plan the switchback part will ask for, checked before the side-by-side part runs.
    try {
      ExperimentPlan.of(
          this.slice.multipliedBy(2L * this.pairs),
          this.slice,
          CarryOver.forDrainTimeout(this.drainTimeout).length(),
          GuardRail.DEFAULT);
    } catch (IllegalArgumentException ex) {
      throw new IllegalArgumentException(
          "--slice-s and --drain-timeout-ms make no experiment plan: " + ex.getMessage(), ex);
    }
  }

  public static void main(String[] args) throws Exception {
    run(args);
    System.exit(0);
  }

  /** Runs both parts on every workload asked for and writes the report; returns its path. */
  public static Path run(String... args) throws Exception {
    // The client logs its options at INFO for every client; each window opens one.
    Logger.getLogger("").setLevel(Level.WARNING);
    Flags flags = Flags.parse(args);
    ExperimentComparison comparison = new ExperimentComparison(flags);
    Map<String, String> frontendFlags = new LinkedHashMap<>();
    for (String knob : FrontendKnobs.FLAGS) {
      String value = flags.optional(knob);
      if (value != null) {
        frontendFlags.put(knob, value);
      }
    }
    flags.rejectUnknown();
    return comparison.run(frontendFlags);
  }

  private Path run(Map<String, String> frontendFlags) throws Exception {
    long started = System.nanoTime();
    List<Comparison> comparisons = new ArrayList<>();
    JsonNode knobs;
    try (Frontend frontend = Frontend.start(frontendFlags)) {
      knobs = frontend.knobs();
      warmUpJvm(frontend);
      for (Workload workload : this.workloads) {
        Map<String, List<SideWindow>> side = sideBySide(frontend, workload);
        Switchback switchback = switchback(frontend, workload);
        comparisons.add(new Comparison(workload, side, switchback));
      }
    }
    writeReport(comparisons, knobs, (System.nanoTime() - started) / 1e9);
    if (this.out.getParent() != null) {
      Files.createDirectories(this.out.getParent());
    }
    Files.writeString(this.out, this.report);
    System.out.println("Report: " + this.out);
    return this.out;
  }

  /**
   * Closed-loop point selects, then a window of the spiky load, on a stock and on a tuned client
   * before anything is measured, not recorded. A fresh JVM compiles for its first tens of seconds:
   * after only a 5 s spiky window per arm, the first measured windows still had a P50 of 10 to 200
   * ms where later ones had 4 to 5 ms, on a 3 ms service time.
   */
  private void warmUpJvm(Frontend frontend) throws Exception {
    for (String arm : List.of(STOCK, TUNED)) {
      frontend.mark();
      try (BenchClient client = open(arm, frontend);
          OpenLoop loop = new OpenLoop(this.warmupShape.threads())) {
        long started = System.nanoTime();
        BenchmarkMain.warmUp(client, 16, this.jvmWarmupQueries);
        double closedSeconds = (System.nanoTime() - started) / 1e9;
        OpenLoop.Window window =
            loop.run(
                client, this.warmupShape, this.jvmWarmupSeconds, this.bucketSeconds, this.seed);
        String figures =
            String.format(
                Locale.ROOT,
                "%s: %d point selects in %.1f s, then the spiky window's P50 %.2f ms, P99 %.2f ms",
                arm,
                this.jvmWarmupQueries,
                closedSeconds,
                ms(window.latency().getValueAtPercentile(50)),
                ms(window.latency().getValueAtPercentile(99)));
        this.jvmWarmup.add(figures);
        log("JVM warm-up, not recorded, %s", figures);
      }
    }
  }

  private BenchClient open(String arm, Frontend frontend) {
    return arm.equals(STOCK)
        ? BenchClient.open(Variant.STOCK, frontend.port(), ClientPool.fixed(this.channels))
        : BenchClient.tuned(this.tuning, frontend.port(), this.channels);
  }

  // ---- (a) side by side ----

  private Map<String, List<SideWindow>> sideBySide(Frontend frontend, Workload workload)
      throws Exception {
    Map<String, List<SideWindow>> windows = new LinkedHashMap<>();
    windows.put(STOCK, new ArrayList<>());
    windows.put(TUNED, new ArrayList<>());
    List<String> order = new ArrayList<>(windows.keySet());
    for (int round = 0; round < this.rounds; round++) {
      for (String arm : order) {
        SideWindow window = sideWindow(frontend, workload, arm, round);
        windows.get(arm).add(window);
        log(
            "%s side by side round %d %s: P50 %.2f ms, P99 %.2f ms, %d calls, %d failed, GOAWAY %d,"
                + " steal %.1f%%, others %.0f%%",
            workload.name(),
            round + 1,
            arm,
            ms(window.latency().getValueAtPercentile(50)),
            ms(window.latency().getValueAtPercentile(99)),
            window.ops(),
            window.errors(),
            window.goAways(),
            window.cpu().steal() * 100,
            window.cpu().others() * 100);
      }
      // Stock then tuned, then tuned then stock: drift within a round falls on both alike.
      java.util.Collections.reverse(order);
    }
    return windows;
  }

  private SideWindow sideWindow(Frontend frontend, Workload workload, String arm, int round)
      throws Exception {
    frontend.mark();
    try (BenchClient client = open(arm, frontend)) {
      BenchmarkMain.warmUp(client, Math.min(16, workload.threads()), this.warmupQueries);
      frontend.degrade(workload.degradeMillis(), this.seed + round);
      long frontendCpu = frontend.resetCounters();
      MachineCpu machine = MachineCpu.now();
      OpenLoop.Window window;
      try (OpenLoop loop = new OpenLoop(workload.threads())) {
        window =
            loop.run(client, workload, this.windowSeconds, this.bucketSeconds, this.seed + round);
      }
      JsonNode stats = frontend.stats();
      long frontendCpuUsed = stats.path("processCpuNanos").asLong() - frontendCpu;
      return new SideWindow(
          round,
          window.latency(),
          window.ops(),
          window.errors(),
          stats.path("goAways").asInt(),
          slowedShare(stats),
          machine.until(MachineCpu.now(), frontendCpuUsed));
    }
  }

  /** The slowed connection's point selects over an even share; NaN when none was slowed. */
  private double slowedShare(JsonNode stats) {
    String slowed = stats.path("degraded").asText(null);
    if (slowed == null) {
      return Double.NaN;
    }
    long total = 0;
    long onSlowed = 0;
    for (Map.Entry<String, JsonNode> each : stats.path("queriesPerConnection").properties()) {
      total += each.getValue().asLong();
      onSlowed += each.getKey().equals(slowed) ? each.getValue().asLong() : 0;
    }
    return (total == 0) ? Double.NaN : onSlowed / (total / (double) this.channels);
  }

  // ---- (b) the switchback experiment on one tuned client ----

  private Switchback switchback(Frontend frontend, Workload workload) throws Exception {
    frontend.mark();
    try (BenchClient client = open(TUNED, frontend)) {
      SpannerTuningState state = client.state();
      BenchmarkMain.warmUp(client, Math.min(16, workload.threads()), this.warmupQueries);
      frontend.degrade(workload.degradeMillis(), this.seed);
      ExperimentPlan plan =
          state.experimentPlan(this.slice.multipliedBy(2L * this.pairs), this.slice);
      frontend.resetCounters();
      long resetNanos = System.nanoTime();
      SliceLog slices = new SliceLog(state, frontend);
      long startNanos = System.nanoTime();
      state.startExperiment(plan);
      // In the JVM's uptime, as GC logs (-Xlog:gc) time their events.
      log(
          "%s switchback started at JVM uptime %.3f s",
          workload.name(),
          java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() / 1000.0);
      slices.start();
      OpenLoop.Window window;
      try (OpenLoop loop = new OpenLoop(workload.threads())) {
        window =
            loop.run(
                client,
                workload,
                plan.runTime().toMillis() / 1000.0 + 0.5,
                this.bucketSeconds,
                this.seed);
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (state.isExperimentRunning() && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      state.stopExperiment("the benchmark's load ended");
      List<SliceMark> marks = slices.finish();
      JsonNode stats = frontend.stats();
      ExperimentResult result = state.experiment();
      Switchback switchback =
          new Switchback(
              plan,
              result,
              window,
              (long) (this.bucketSeconds * 1e9),
              this.channels,
              startNanos,
              resetNanos,
              marks,
              slices.experimentP99(),
              stats);
      KindResult singleUse = result.results().get("single-use");
      log(
          "%s switchback: %s, %d pairs, p99Ratio %s [%s, %s], p50Ratio %s, verdict %s; load split"
              + " by arm: P99 stock %.2f ms tuned %.2f ms",
          workload.name(),
          result.state() + ((result.reason() != null) ? " (" + result.reason() + ")" : ""),
          result.pairs(),
          (singleUse != null) ? ratio(singleUse.p99Ratio()) : "-",
          (singleUse != null) ? ratio(singleUse.p99RatioLow()) : "-",
          (singleUse != null) ? ratio(singleUse.p99RatioHigh()) : "-",
          (singleUse != null) ? ratio(singleUse.p50Ratio()) : "-",
          (singleUse != null) ? singleUse.verdict() : "-",
          ms(switchback.pooled(STOCK).getValueAtPercentile(99)),
          ms(switchback.pooled(TUNED).getValueAtPercentile(99)));
      return switchback;
    }
  }

  /**
   * Notes each slice's arm as the experiment enters it, with the machine's and the frontend's CPU
   * then: polled, since the slices of one pair may be of either order and two slices of one arm can
   * follow each other with no switch between them.
   */
  private static final class SliceLog {

    private final SpannerTuningState state;

    private final Frontend frontend;

    private final List<SliceMark> marks = new ArrayList<>();

    /** The experiment's own P99 of each slice's single-use calls, in seconds, by slice. */
    private final Map<Integer, Double> experimentP99 =
        new java.util.concurrent.ConcurrentHashMap<>();

    /** Slices whose P99 was read, or found unreadable: every slice before this one. */
    private int read;

    private final Thread poller;

    private volatile boolean done;

    SliceLog(SpannerTuningState state, Frontend frontend) {
      this.state = state;
      this.frontend = frontend;
      this.poller = new Thread(this::poll, "experiment-slices");
      this.poller.setDaemon(true);
    }

    void start() {
      this.poller.start();
    }

    private void poll() {
      int seen = -1;
      while (!this.done) {
        ExperimentResult.Progress progress = this.state.experiment().progress();
        readEnded(progress.slicesDone());
        if (progress.arm() != null && progress.slicesDone() > seen) {
          seen = progress.slicesDone();
          mark(seen, progress.arm());
        }
        try {
          Thread.sleep(50);
        } catch (InterruptedException ex) {
          return;
        }
      }
    }

    /**
     * Reads the P99 of the slices that ended since the last poll from the meters' figures, which
     * hold each arm's last recorded slice: read before the arm's next slice ends, 14 s later.
     */
    private void readEnded(int slicesDone) {
      while (this.read < slicesDone) {
        String arm = armOf(this.read);
        if (arm != null) {
          double p99 =
              this.state
                  .experimentTotals()
                  .lastP99Seconds(
                      CallKind.SINGLE_USE, arm.equals(Arm.STOCK.id()) ? Arm.STOCK : Arm.TUNED);
          this.experimentP99.put(this.read, p99);
        }
        this.read++;
      }
    }

    private String armOf(int slice) {
      synchronized (this.marks) {
        return this.marks.stream()
            .filter((mark) -> mark.slice() == slice)
            .map(SliceMark::arm)
            .findFirst()
            .orElse(null);
      }
    }

    private void mark(int slice, String arm) {
      try {
        long frontendCpu = this.frontend.stats().path("processCpuNanos").asLong();
        synchronized (this.marks) {
          this.marks.add(new SliceMark(slice, arm, MachineCpu.now(), frontendCpu));
        }
      } catch (Exception ex) {
        throw new IllegalStateException("the frontend did not answer", ex);
      }
    }

    /** Stops polling; the last mark is the end of the last slice. */
    Map<Integer, Double> experimentP99() {
      return Map.copyOf(this.experimentP99);
    }

    List<SliceMark> finish() throws InterruptedException {
      this.done = true;
      this.poller.join(5000);
      readEnded(this.state.experiment().progress().slicesDone());
      mark(Integer.MAX_VALUE, null);
      synchronized (this.marks) {
        return List.copyOf(this.marks);
      }
    }
  }

  // ---- the report ----

  private void writeReport(List<Comparison> comparisons, JsonNode knobs, double seconds) {
    ClientVersions versions = ClientVersions.detected();
    line(
        "# The switchback experiment beside the side-by-side benchmark, google-cloud-spanner "
            + versions.spanner());
    line("");
    line("Command: `" + this.flags.used().get("command") + "`  ");
    line(
        "Flags: `"
            + this.flags.used().entrySet().stream()
                .filter((e) -> !e.getKey().equals("command"))
                .map((e) -> "--" + e.getKey() + " " + e.getValue())
                .collect(Collectors.joining(" "))
            + "`  ");
    line(
        String.format(
            Locale.ROOT,
            "Machine: %d cores (%s), Java %s, %s; run time %.0f s  ",
            Runtime.getRuntime().availableProcessors(),
            MachineCpu.model(),
            System.getProperty("java.version"),
            versions,
            seconds));
    StringBuilder frontend = new StringBuilder();
    knobs
        .properties()
        .forEach(
            (e) ->
                frontend
                    .append(e.getKey())
                    .append(" = ")
                    .append(e.getValue().asText())
                    .append("; "));
    line(
        "Frontend: MockSpannerServer in its own JVM (simulated), as in the load benchmark: "
            + frontend.toString().trim());
    line("");
    Duration carryOver =
        comparisons.isEmpty() ? Duration.ZERO : comparisons.get(0).switchback().plan().carryOver();
    line(
        String.format(
            Locale.ROOT,
            "After %d closed-loop point selects and a %s s window of the spiky load on a stock and"
                + " on a tuned client to warm the JVM (not recorded), per workload, in one run:"
                + " **side by side**, a stock and a tuned client, each fresh and"
                + " warmed (%d queries), %d rounds of %s s windows in alternating order, latency"
                + " from each query's scheduled start pooled over the rounds; then **switchback**,"
                + " one tuned client under the same load with an experiment of %d pairs of %s s"
                + " slices (carry-over %s s, so %s s recorded per slice), for %s s. The tuned client"
                + " is the same in both: the starter's defaults with a drain timeout of %d ms (the"
                + " frontend's trailers come 1 ms after `last`, so no drain waits that long). Ratios"
                + " are tuned over stock, of single-use point selects.",
            this.jvmWarmupQueries,
            trim(this.jvmWarmupSeconds),
            this.warmupQueries,
            this.rounds,
            trim(this.windowSeconds),
            this.pairs,
            trim(this.slice.toMillis() / 1000.0),
            trim(carryOver.toMillis() / 1000.0),
            trim((this.slice.toMillis() - carryOver.toMillis()) / 1000.0),
            trim(this.slice.toMillis() * 2.0 * this.pairs / 1000.0),
            this.drainTimeout.toMillis()));
    line("");
    line("JVM warm-up, not recorded: " + String.join("; ", this.jvmWarmup) + ".");
    line("");
    summary(comparisons);
    measures(comparisons);
    perPair(comparisons);
    sideRounds(comparisons);
  }

  private void summary(List<Comparison> comparisons) {
    line("## Side by side and switchback");
    line("");
    line(
        "*Side by side*: P99 and P50 of all the rounds' queries, stock -> tuned, and their ratio."
            + " *Switchback*: the experiment's `single-use` result, its Hodges-Lehmann estimate of"
            + " the ratio over the pairs with its 95 % interval, and its verdict. *Inside*: whether"
            + " the side-by-side ratio lies in the switchback's interval.");
    line("");
    line(
        "| workload | side by side P99 ms | P99 ratio | switchback p99Ratio [95 %] | inside |"
            + " side by side P50 ratio | switchback p50Ratio [95 %] | inside | verdict | pairs |");
    line("|---|---|---|---|---|---|---|---|---|---|");
    for (Comparison each : comparisons) {
      Histogram stock = each.pooledSide(STOCK);
      Histogram tuned = each.pooledSide(TUNED);
      double p99 = ratioOf(tuned, stock, 99);
      double p50 = ratioOf(tuned, stock, 50);
      KindResult singleUse = each.switchback().singleUse();
      line(
          String.format(
              Locale.ROOT,
              "| %s | %.2f -> %.2f | %.2f | %s | %s | %.2f | %s | %s | %s | %s |",
              each.workload().name(),
              ms(stock.getValueAtPercentile(99)),
              ms(tuned.getValueAtPercentile(99)),
              p99,
              (singleUse == null)
                  ? "-"
                  : interval(
                      singleUse.p99Ratio(), singleUse.p99RatioLow(), singleUse.p99RatioHigh()),
              (singleUse == null)
                  ? "-"
                  : inside(p99, singleUse.p99RatioLow(), singleUse.p99RatioHigh()),
              p50,
              (singleUse == null)
                  ? "-"
                  : interval(
                      singleUse.p50Ratio(), singleUse.p50RatioLow(), singleUse.p50RatioHigh()),
              (singleUse == null)
                  ? "-"
                  : inside(p50, singleUse.p50RatioLow(), singleUse.p50RatioHigh()),
              (singleUse == null) ? "-" : singleUse.verdict(),
              each.switchback().result().pairs()));
    }
    line("");
    for (Comparison each : comparisons) {
      ExperimentResult result = each.switchback().result();
      if (!result.state().equals("done")) {
        line(
            "- "
                + each.workload().name()
                + ": the experiment ended "
                + result.state()
                + ((result.reason() != null) ? ": " + result.reason() : ""));
      }
      List<String> warnings = new ArrayList<>(result.warnings());
      KindResult singleUse = each.switchback().singleUse();
      if (singleUse != null) {
        warnings.addAll(singleUse.warnings());
      }
      for (String warning : warnings) {
        line("- " + each.workload().name() + ", the experiment warns: " + warning);
      }
    }
    line("");
  }

  private void measures(List<Comparison> comparisons) {
    line("## Three measures of the same ratio");
    line("");
    line(
        "*Side by side*: two clients, latency from each query's scheduled start (the load"
            + " generator's), pooled. *Switchback, load generator*: the switchback run's own"
            + " latencies, from each query's scheduled start, of the queries that started in a"
            + " slice's recorded window (in "
            + trim(this.bucketSeconds)
            + " s buckets wholly inside it), pooled per arm: the side-by-side measure on the"
            + " experiment's one client. *Switchback, experiment*: what the experiment records,"
            + " each call from its pick to its `last` response; per arm the median over its slices"
            + " of the slice's P50 and P99. *P99 ratio, pooled*: of the P99s of all the arm's"
            + " queries together; *over pairs*: the Hodges-Lehmann estimate over the pairs of"
            + " slices, the experiment's `p99Ratio` (and the same estimator on the load"
            + " generator's per-pair ratios, below). *P50 ratio*: pooled, or the experiment's"
            + " `p50Ratio`. *Failed*: failed"
            + " queries (side by side), failed calls (experiment). *GOAWAY*: frames the frontend"
            + " sent (side by side), calls the client saw ended by one (experiment).");
    line("");
    line(
        "| workload | measure | calls stock / tuned | P50 ms stock -> tuned | P99 ms stock -> tuned"
            + " | P99 ratio, pooled | P99 ratio, over pairs | P50 ratio | failed stock / tuned |"
            + " GOAWAY stock / tuned |");
    line("|---|---|---|---|---|---|---|---|---|---|");
    for (Comparison each : comparisons) {
      String name = each.workload().name();
      Histogram stock = each.pooledSide(STOCK);
      Histogram tuned = each.pooledSide(TUNED);
      line(
          String.format(
              Locale.ROOT,
              "| %s | side by side | %d / %d | %.2f -> %.2f | %.2f -> %.2f | %.2f | - | %.2f |"
                  + " %d / %d | %d / %d |",
              name,
              stock.getTotalCount(),
              tuned.getTotalCount(),
              ms(stock.getValueAtPercentile(50)),
              ms(tuned.getValueAtPercentile(50)),
              ms(stock.getValueAtPercentile(99)),
              ms(tuned.getValueAtPercentile(99)),
              ratioOf(tuned, stock, 99),
              ratioOf(tuned, stock, 50),
              each.sum(STOCK, SideWindow::errors),
              each.sum(TUNED, SideWindow::errors),
              each.sum(STOCK, SideWindow::goAways),
              each.sum(TUNED, SideWindow::goAways)));
      Switchback switchback = each.switchback();
      Histogram splitStock = switchback.pooled(STOCK);
      Histogram splitTuned = switchback.pooled(TUNED);
      line(
          String.format(
              Locale.ROOT,
              "| %s | switchback, load generator | %d / %d | %.2f -> %.2f | %.2f -> %.2f | %.2f |"
                  + " %.2f | %.2f | - | - |",
              name,
              splitStock.getTotalCount(),
              splitTuned.getTotalCount(),
              ms(splitStock.getValueAtPercentile(50)),
              ms(splitTuned.getValueAtPercentile(50)),
              ms(splitStock.getValueAtPercentile(99)),
              ms(splitTuned.getValueAtPercentile(99)),
              ratioOf(splitTuned, splitStock, 99),
              switchback.loadGeneratorP99Ratio(),
              ratioOf(splitTuned, splitStock, 50)));
      KindResult singleUse = switchback.singleUse();
      if (singleUse != null) {
        ExperimentResult result = switchback.result();
        line(
            String.format(
                Locale.ROOT,
                "| %s | switchback, experiment | %d / %d | %s -> %s | %s -> %s | - | %s | %s |"
                    + " %d / %d | %d / %d |",
                name,
                singleUse.calls().stock(),
                singleUse.calls().tuned(),
                seconds(singleUse.p50Seconds().stock()),
                seconds(singleUse.p50Seconds().tuned()),
                seconds(singleUse.p99Seconds().stock()),
                seconds(singleUse.p99Seconds().tuned()),
                ratio(singleUse.p99Ratio()),
                ratio(singleUse.p50Ratio()),
                singleUse.failed().stock(),
                singleUse.failed().tuned(),
                result.goAways().stock(),
                result.goAways().tuned()));
      }
    }
    line("");
    for (Comparison each : comparisons) {
      KindResult singleUse = each.switchback().singleUse();
      JsonNode stats = each.switchback().stats();
      line(
          String.format(
              Locale.ROOT,
              "- %s, switchback run: the frontend sent %d GOAWAYs in all; the load generator's"
                  + " queries failed: %d over the whole run, carry-overs included; the"
                  + " experiment's failed calls by status, recorded windows only: stock %s, tuned"
                  + " %s; its tail samples stock %s, tuned %s; cancels of finished streams stock"
                  + " %d, tuned %d.",
              each.workload().name(),
              stats.path("goAways").asInt(),
              each.switchback().window().errors(),
              (singleUse == null) ? "-" : singleUse.failedByStatus().stock(),
              (singleUse == null) ? "-" : singleUse.failedByStatus().tuned(),
              (singleUse == null) ? "-" : singleUse.tailSamples().stock(),
              (singleUse == null) ? "-" : singleUse.tailSamples().tuned(),
              each.switchback().result().cancelsOfFinishedStreams().stock(),
              each.switchback().result().cancelsOfFinishedStreams().tuned()));
    }
    line("");
  }

  private void perPair(List<Comparison> comparisons) {
    line("## Switchback, pair by pair");
    line("");
    line(
        "Each pair's recorded windows: the load generator's P99 of the queries that started in"
            + " them, and the experiment's own P99 of each slice (read from its meters' figures"
            + " as each slice ends), with their tuned/stock ratios. The experiment's interval rests"
            + " on the spread of its ratios. *Slowed*: the"
            + " slowed connection's point selects in the slice's recorded window over an even share"
            + " (all of them over the pool's "
            + this.channels
            + " channels), counted by the frontend per TCP connection; - where none is slowed. The"
            + " frontend slows one connection: once a GOAWAY closes it, the client's new"
            + " connection is not slowed, and the share is 0. *Steal* and"
            + " *others* over the pair, both slices whole: machine CPU steal, and other processes'"
            + " CPU (not the client's, not the frontend's), as shares of the machine; `!` where"
            + " steal was over 5 %.");
    line("");
    line(
        "| workload | pair | order | load generator P99 ms stock / tuned | ratio | experiment P99"
            + " ms stock / tuned | ratio | slowed stock / tuned | steal | others |");
    line("|---|---|---|---|---|---|---|---|---|---|");
    for (Comparison each : comparisons) {
      Switchback switchback = each.switchback();
      int pair = 0;
      for (SliceFigures[] figures : switchback.pairs()) {
        pair++;
        SliceFigures stock = figures[0];
        SliceFigures tuned = figures[1];
        boolean stockFirst = switchback.slice(2 * pair - 2).arm().equals(STOCK);
        MachineCpu.Share cpu = switchback.cpu(2 * pair - 2, 2 * pair);
        line(
            String.format(
                Locale.ROOT,
                "| %s | %d | %s | %.2f / %.2f | %.2f | %s / %s | %s | %s / %s | %s | %s |",
                each.workload().name(),
                pair,
                stockFirst ? "stock, tuned" : "tuned, stock",
                ms(stock.latency().getValueAtPercentile(99)),
                ms(tuned.latency().getValueAtPercentile(99)),
                ratioOf(tuned.latency(), stock.latency(), 99),
                msOrDash(stock.experimentP99Seconds()),
                msOrDash(tuned.experimentP99Seconds()),
                share(tuned.experimentP99Seconds() / stock.experimentP99Seconds()),
                share(stock.slowedShare()),
                share(tuned.slowedShare()),
                steal(cpu),
                others(cpu)));
      }
    }
    line("");
  }

  private void sideRounds(List<Comparison> comparisons) {
    line("## Side by side, round by round");
    line("");
    line(
        "Each window a fresh client. *Slowed*: as above, over the window. *Steal* and *others*:"
            + " as above, over the window.");
    line("");
    line(
        "| workload | round | variant | calls | failed | P50 ms | P99 ms | GOAWAY | slowed | steal |"
            + " others |");
    line("|---|---|---|---|---|---|---|---|---|---|---|");
    for (Comparison each : comparisons) {
      for (int round = 0; round < this.rounds; round++) {
        for (String arm : List.of(STOCK, TUNED)) {
          SideWindow window = each.side().get(arm).get(round);
          line(
              String.format(
                  Locale.ROOT,
                  "| %s | %d | %s | %d | %d | %.2f | %.2f | %d | %s | %s | %s |",
                  each.workload().name(),
                  round + 1,
                  arm,
                  window.ops(),
                  window.errors(),
                  ms(window.latency().getValueAtPercentile(50)),
                  ms(window.latency().getValueAtPercentile(99)),
                  window.goAways(),
                  share(window.slowedShare()),
                  steal(window.cpu()),
                  others(window.cpu())));
        }
      }
    }
    line("");
  }

  // ---- pieces ----

  /** One side-by-side window. */
  record SideWindow(
      int round,
      Histogram latency,
      long ops,
      long errors,
      int goAways,
      double slowedShare,
      MachineCpu.Share cpu) {}

  /** The experiment entered slice {@code slice} of arm {@code arm}; {@code arm} null at the end. */
  record SliceMark(int slice, String arm, MachineCpu machine, long frontendCpuNanos) {}

  /**
   * One slice's recorded window as the load generator saw it, and the experiment's own P99 of it
   * (NaN where it could not be read).
   */
  record SliceFigures(
      String arm, Histogram latency, double slowedShare, double experimentP99Seconds) {}

  /** One switchback run and what it recorded. */
  record Switchback(
      ExperimentPlan plan,
      ExperimentResult result,
      OpenLoop.Window window,
      long bucketNanos,
      int channels,
      long startNanos,
      long resetNanos,
      List<SliceMark> marks,
      Map<Integer, Double> experimentP99,
      JsonNode stats) {

    KindResult singleUse() {
      return this.result.results().get("single-use");
    }

    private String armOf(int slice) {
      return this.marks.stream()
          .filter((mark) -> mark.slice() == slice)
          .map(SliceMark::arm)
          .findFirst()
          .orElse(null);
    }

    /** The slice's recorded window: from its carry-over's end to its planned end, in ns. */
    private long[] recorded(int slice) {
      long sliceNanos = this.plan.slice().toNanos();
      long from = this.startNanos + slice * sliceNanos + this.plan.carryOver().toNanos();
      return new long[] {from, this.startNanos + (slice + 1) * sliceNanos};
    }

    /** The load generator's figures of a slice's recorded window; null if its arm was not seen. */
    SliceFigures slice(int slice) {
      String arm = armOf(slice);
      if (arm == null) {
        return null;
      }
      long[] window = recorded(slice);
      Histogram[] series = this.window.series();
      Histogram latency =
          new Histogram(
              series[0].getLowestDiscernibleValue(),
              series[0].getHighestTrackableValue(),
              series[0].getNumberOfSignificantValueDigits());
      // The last bucket also holds whatever was scheduled past the window's end: left out.
      for (int b = 0; b < series.length - 1; b++) {
        long start = this.window.originNanos() + b * this.bucketNanos;
        if (start >= window[0] && start + this.bucketNanos <= window[1]) {
          latency.add(series[b]);
        }
      }
      return new SliceFigures(
          arm, latency, slowedShare(window), this.experimentP99.getOrDefault(slice, Double.NaN));
    }

    /** Point selects on the slowed connection in the window over an even share. */
    private double slowedShare(long[] window) {
      JsonNode arrivals = this.stats.path("faultArrivals");
      if (arrivals.isMissingNode()) {
        return Double.NaN;
      }
      long bucketNanos = arrivals.path("bucketMs").asLong() * 1_000_000L;
      long all = 0;
      long faulty = 0;
      for (int b = 0; b < arrivals.path("all").size(); b++) {
        long start = this.resetNanos + b * bucketNanos;
        if (start >= window[0] && start + bucketNanos <= window[1]) {
          all += arrivals.path("all").get(b).asLong();
          faulty += arrivals.path("faulty").get(b).asLong();
        }
      }
      return (all == 0) ? Double.NaN : faulty / (all / (double) this.channels);
    }

    /** The pairs whose two slices were both seen, each as {stock, tuned}. */
    List<SliceFigures[]> pairs() {
      List<SliceFigures[]> pairs = new ArrayList<>();
      for (int pair = 0; pair < this.result.pairs(); pair++) {
        SliceFigures first = slice(2 * pair);
        SliceFigures second = slice(2 * pair + 1);
        if (first != null && second != null) {
          boolean stockFirst = first.arm().equals(STOCK);
          pairs.add(new SliceFigures[] {stockFirst ? first : second, stockFirst ? second : first});
        }
      }
      return pairs;
    }

    /**
     * The Hodges-Lehmann estimate of the load generator's tuned/stock P99 ratio over the pairs, as
     * the experiment estimates its own: the median of the averages of every two pairs' log ratios.
     */
    double loadGeneratorP99Ratio() {
      return hodgesLehmann(
          pairs().stream()
              .mapToDouble((pair) -> ratioOf(pair[1].latency(), pair[0].latency(), 99))
              .toArray());
    }

    /** Every recorded window of the arm, pooled. */
    Histogram pooled(String arm) {
      Histogram pooled = null;
      for (int slice = 0; slice < 2 * this.result.pairs(); slice++) {
        SliceFigures figures = slice(slice);
        if (figures == null || !figures.arm().equals(arm)) {
          continue;
        }
        if (pooled == null) {
          pooled = figures.latency().copy();
        } else {
          pooled.add(figures.latency());
        }
      }
      return (pooled != null) ? pooled : new Histogram(3);
    }

    /** Machine CPU from the start of slice {@code from} to the start of slice {@code to}. */
    MachineCpu.Share cpu(int from, int to) {
      SliceMark start = markAt(from);
      SliceMark end = markAt(to);
      if (start == null || end == null) {
        return new MachineCpu.Share(Double.NaN, Double.NaN);
      }
      return start
          .machine()
          .until(end.machine(), end.frontendCpuNanos() - start.frontendCpuNanos());
    }

    /** The mark of slice {@code slice}, or the final one past the last slice. */
    private SliceMark markAt(int slice) {
      for (SliceMark mark : this.marks) {
        if (mark.slice() >= slice) {
          return mark;
        }
      }
      return null;
    }
  }

  /** One workload's two parts. */
  record Comparison(Workload workload, Map<String, List<SideWindow>> side, Switchback switchback) {

    Histogram pooledSide(String arm) {
      Histogram pooled = new Histogram(3);
      for (SideWindow window : this.side.get(arm)) {
        pooled.add(window.latency());
      }
      return pooled;
    }

    long sum(String arm, Function<SideWindow, Number> figure) {
      return this.side.get(arm).stream().mapToLong((w) -> figure.apply(w).longValue()).sum();
    }
  }

  /** The median of the Walsh averages of the ratios' logs, as a ratio; NaN for none. */
  static double hodgesLehmann(double[] ratios) {
    int n = ratios.length;
    if (n == 0) {
      return Double.NaN;
    }
    double[] walsh = new double[n * (n + 1) / 2];
    int index = 0;
    for (int i = 0; i < n; i++) {
      for (int j = i; j < n; j++) {
        walsh[index++] = (Math.log(ratios[i]) + Math.log(ratios[j])) / 2;
      }
    }
    Arrays.sort(walsh);
    int m = walsh.length;
    return Math.exp((m % 2 == 1) ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2);
  }

  private static String msOrDash(double seconds) {
    return Double.isNaN(seconds) ? "-" : String.format(Locale.ROOT, "%.2f", seconds * 1000);
  }

  private static double ratioOf(Histogram tuned, Histogram stock, double percentile) {
    double below = stock.getValueAtPercentile(percentile);
    return (below == 0) ? Double.NaN : tuned.getValueAtPercentile(percentile) / below;
  }

  private static String inside(double ratio, Double low, Double high) {
    if (low == null || high == null) {
      return "no interval";
    }
    if (ratio < low) {
      return "no, below";
    }
    return (ratio > high) ? "no, above" : "yes";
  }

  private static String interval(Double point, Double low, Double high) {
    if (point == null) {
      return "-";
    }
    return (low == null || high == null)
        ? ratio(point) + " (no interval)"
        : ratio(point) + " [" + ratio(low) + ", " + ratio(high) + "]";
  }

  private static String ratio(Double value) {
    return (value == null) ? "-" : String.format(Locale.ROOT, "%.2f", value);
  }

  private static String seconds(Double value) {
    return (value == null) ? "-" : String.format(Locale.ROOT, "%.2f", value * 1000);
  }

  private static String share(double value) {
    return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.2f", value);
  }

  private static String steal(MachineCpu.Share cpu) {
    return Double.isNaN(cpu.steal())
        ? "-"
        : String.format(
            Locale.ROOT,
            "%.1f %%%s",
            cpu.steal() * 100,
            (cpu.steal() > MachineCpu.Share.MARK) ? " !" : "");
  }

  private static String others(MachineCpu.Share cpu) {
    return Double.isNaN(cpu.others())
        ? "-"
        : String.format(Locale.ROOT, "%.0f %%", cpu.others() * 100);
  }

  private static double ms(long micros) {
    return micros / 1000.0;
  }

  private static String trim(double value) {
    return VariantTally.trim(value);
  }

  private void line(String text) {
    this.report.append(text).append('\n');
  }

  private static void log(String format, Object... args) {
    System.out.printf(Locale.ROOT, "[experiment] " + format + "%n", args);
  }
}
