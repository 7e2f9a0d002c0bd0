package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.github.spannertuning.client.ClientVersions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.HdrHistogram.Histogram;

/**
 * The load benchmark for the client line on the classpath: starts the simulated frontend in its own
 * JVM, measures the floor, then runs every workload with every variant interleaved in rounds (round
 * 1: A B C..., round 2: ...C B A, so drift hits all variants alike), each window with a fresh,
 * warmed client. Writes {@code results-<google-cloud-spanner version>.json} to the output folder
 * ({@code results-<version>-dynamic.json} on the dynamic pool, so that one folder can hold a line's
 * runs on both pools), then the report over every results file there ({@link Report}).
 */
public final class BenchmarkMain {

  private static final ObjectMapper json =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  /**
   * The JDBC workload's name. Not in the default set: it repeats the degraded workload's windows
   * through the JDBC driver, and is run when named.
   */
  static final String JDBC_POINT_SELECTS = "jdbc-point-selects";

  /** The straggler workloads' names; run when named. */
  static final String STRAGGLERS = "stragglers";

  static final String STRAGGLERS_OUTAGE = "stragglers-outage";

  /**
   * The degraded workload with one query in ten a report, which the frontend serves later on every
   * connection: a costly statement beside a slow connection. Run when named, on either pool: its
   * three variants add about 1.5 minutes per client line and pool.
   */
  static final String MIXED = "mixed";

  /**
   * The warm-connection workloads' names: the spiky load on a frontend that retires its
   * connections, and a new instance's first second after it reports ready.
   */
  static final String AGING = "aging";

  static final String FRESH_INSTANCE = "fresh-instance";

  /**
   * The workloads run when {@code --workloads} is not given. aging and fresh-instance add about 3
   * minutes per client line: they measure the warm-up, which is on by default.
   */
  static final String DEFAULT_WORKLOADS =
      "steady,bursty,spiky,degraded,stalled,recovered,fresh-client," + AGING + "," + FRESH_INSTANCE;

  /** The workload that makes the dynamic pool grow and then shrink; on the dynamic pool only. */
  static final String GROW_SHRINK = "grow-shrink";

  /** The workloads run on the dynamic pool when {@code --workloads} is not given. */
  static final String DYNAMIC_POOL_WORKLOADS = "degraded,stragglers,fresh-client," + GROW_SHRINK;

  /** The variants run on the dynamic pool when {@code --variants} is not given. */
  static final String DYNAMIC_POOL_VARIANTS = "stock,tuned,hedged";

  /**
   * Workloads that do not run on the dynamic pool, and why: their connection counts or faults are
   * set for a fixed pool.
   */
  static final Map<String, String> NOT_ON_DYNAMIC_POOL =
      Map.of(
          "stalled",
          "its stalled connection is the busiest since the warm-up, which the pool may since have"
              + " removed",
          "recovered",
          "its recovery is read against an even share of a fixed pool",
          JDBC_POINT_SELECTS,
          "the JDBC driver builds its own client, on a fixed pool",
          "slow-trailers-1ch",
          "it runs on a fixed pool of 1 channel",
          "slow-trailers-8ch",
          "it runs on a fixed pool of 8 channels",
          AGING,
          "it is measured on a fixed pool only so far (WarmUpIT checks the dynamic pool's warm-up)",
          FRESH_INSTANCE,
          "it is measured on a fixed pool only so far (WarmUpIT checks the dynamic pool's warm-up)");

  private final Flags flags;

  private final Path out;

  private final ClientPool pool;

  private final int channels;

  private final int rounds;

  private final double windowSeconds;

  private final double bucketSeconds;

  private final int warmupQueries;

  private final int floorQueries;

  private final long seed;

  private final List<Workload> workloads;

  /**
   * {@code --warm-up-timeout-s} (10, the starter's {@code spanner.tuning.warm-up.timeout}): how
   * long a tuned client of the aging and fresh-instance workloads may take to get warm, as an
   * application's readiness waits.
   */
  private final java.time.Duration warmUpTimeout;

  private final CpuLimitedRun cpuLimited;

  /** Set in the CPU-limited child: where its client and frontend threads ran. */
  private CpuLimit.Watch watch;

  /** How many windows per variant, how long, after how many warm-up queries on a fresh client. */
  record Phase(int rounds, double windowSeconds, int warmupQueries) {}

  private BenchmarkMain(Flags flags) {
    this.flags = flags;
    flags.string("command", "java " + BenchmarkMain.class.getName());
    this.out = Paths.get(flags.string("out", "target/benchmark-results"));
    this.pool = ClientPool.from(flags);
    this.channels = this.pool.channels();
    this.rounds = flags.integer("rounds", 2, 1, 1000);
    this.windowSeconds = flags.positive("window-s", 12);
    this.bucketSeconds = flags.positive("bucket-s", 0.25);
    this.warmupQueries = flags.integer("warmup-queries", 300, 0, 1_000_000);
    this.floorQueries = flags.integer("floor-queries", 300, 1, 1_000_000);
    this.seed = (long) flags.number("seed", 1);
    this.warmUpTimeout =
        java.time.Duration.ofMillis((long) (flags.positive("warm-up-timeout-s", 10) * 1000));
    List<Workload> all = allWorkloads(flags, this.pool);
    String names =
        flags.string("workloads", this.pool.dynamic() ? DYNAMIC_POOL_WORKLOADS : DEFAULT_WORKLOADS);
    if (!this.pool.dynamic() && Arrays.asList(names.split(",")).contains(GROW_SHRINK)) {
      throw new IllegalArgumentException(
          "--workloads " + GROW_SHRINK + " needs --pool dynamic: a fixed pool does not grow");
    }
    this.workloads = choose(all, names);
    if (this.pool.dynamic()) {
      for (Workload workload : this.workloads) {
        String why = NOT_ON_DYNAMIC_POOL.get(workload.name());
        if (why != null) {
          throw new IllegalArgumentException(
              "--workloads "
                  + workload.name()
                  + " is not on the dynamic pool (--pool dynamic): "
                  + why);
        }
      }
    }
    this.cpuLimited = new CpuLimitedRun(flags, all, this);
    if (this.pool.dynamic() && this.cpuLimited.enabled()) {
      throw new IllegalArgumentException(
          "--pool dynamic runs on an unlimited client only: add --client-cpus 0 (the CPU-limited"
              + " part's capacity sweep and reference workloads run on the fixed pool)");
    }
  }

  public static void main(String[] args) throws Exception {
    run(args);
    System.exit(0);
  }

  /** Runs the benchmark and writes its report; returns the output folder. */
  public static Path run(String... args) throws Exception {
    // The client logs its options at INFO for every client; a window opens one.
    Logger.getLogger("").setLevel(Level.WARNING);
    Flags flags = Flags.parse(args);
    BenchmarkMain main = new BenchmarkMain(flags);
    Map<String, String> frontendFlags = new LinkedHashMap<>();
    for (String knob : FrontendKnobs.FLAGS) {
      String value = flags.optional(knob);
      if (value != null) {
        frontendFlags.put(knob, value);
      }
    }
    flags.rejectUnknown();
    if (main.cpuLimited.isChild()) {
      main.cpuLimited.runAsChild(frontendFlags);
      return main.out;
    }
    return main.run(frontendFlags);
  }

  private static List<Workload> allWorkloads(Flags flags, ClientPool pool) {
    double scale = flags.positive("scale", 1.0);
    double period = flags.positive("burst-period-s", 5);
    double length = flags.positive("burst-length-s", 1);
    List<Variant> variants =
        Arrays.stream(
                flags
                    .string(
                        "variants",
                        pool.dynamic()
                            ? DYNAMIC_POOL_VARIANTS
                            : "stock,tuned,distribution-only,guard-only,round-robin")
                    .split(","))
            .map(String::trim)
            .map(Variant::of)
            .toList();
    if (pool.dynamic() && variants.contains(Variant.ROUND_ROBIN)) {
      throw new IllegalArgumentException(
          "--variants round-robin is not on the dynamic pool (--pool dynamic): it is gax's fixed"
              + " pool with grpc-gcp off");
    }
    // The reference's spiky shape; degraded, stalled and recovered are it with one connection at
    // fault.
    Workload spiky = spiky(flags, scale, period, length, variants);
    double spikyRate = spiky.baseRate();
    int spikyThreads = spiky.threads();
    long degradeMillis = (long) flags.positive("degrade-ms", 20);
    List<Workload> all =
        List.of(
            new Workload(
                "steady",
                "steady point select",
                100,
                flags.positive("steady-rate", 100) * scale,
                1,
                period,
                0,
                flags.integer("steady-threads", 8, 1, 10_000),
                0,
                variants),
            new Workload(
                "bursty",
                "bursty point select",
                2000,
                flags.positive("bursty-rate", 250) * scale,
                flags.positive("bursty-multiplier", 3.8),
                period,
                length,
                flags.integer("bursty-threads", 64, 1, 10_000),
                0,
                variants),
            spiky,
            degraded(spiky, degradeMillis),
            spiky
                .named("stalled", "spiky point select, the busiest connection stops answering")
                .rebased(spikyRate, spikyThreads, stockAndTuned(variants))
                .withFault(
                    Workload.Fault.STALLED,
                    0,
                    flags.integer("stall-deadline-ms", 1000, 1, 600_000)),
            spiky
                .named(
                    "recovered",
                    "spiky point select, one connection slowed for half the window, then recovered")
                .rebased(spikyRate, spikyThreads, stockAndTuned(variants))
                .withFault(Workload.Fault.RECOVERED, degradeMillis, 0),
            // The degraded workload's shape, stock and tuned, through Google's JDBC driver.
            spiky
                .named(
                    JDBC_POINT_SELECTS,
                    "spiky point select through the JDBC driver (autocommit), one connection"
                        + " slowed")
                .rebased(spikyRate, spikyThreads, stockAndTuned(variants))
                .withFault(Workload.Fault.SLOWED, degradeMillis, 0)
                .viaJdbc(),
            freshClient(flags, pool, variants),
            aging(flags, spiky, variants),
            freshInstance(flags, spiky, variants),
            slowTrailers(flags, 1, variants),
            slowTrailers(flags, 8, variants),
            stragglers(flags, spiky, variants, false),
            stragglers(flags, spiky, variants, true),
            mixed(flags, spiky, degradeMillis, variants));
    if (!pool.dynamic()) {
      return all;
    }
    List<Workload> dynamic = new ArrayList<>(all);
    dynamic.add(growShrink(flags, variants));
    return List.copyOf(dynamic);
  }

  /**
   * A load that makes the dynamic pool grow and then shrink: {@code --grow-shrink-threads} threads
   * in a closed loop against a slower frontend ({@code --grow-shrink-service-ms}), well past the
   * calls in flight per channel at which the pool adds one, for {@code --grow-shrink-high-s}; then
   * {@code --grow-shrink-low-threads} of them for {@code --grow-shrink-low-s}, well below the calls
   * per channel under which it removes them. At 200 ms per query, 200 threads keep 200 calls in
   * flight: the pool grows from 4 channels past 8 at 25 per channel, and 8 threads then need 1. The
   * client is not warmed up, so that every window starts on the pool's first 4 channels: a warm-up
   * can outlast the first scale-down check, which then shrinks the pool to 2.
   */
  private static Workload growShrink(Flags flags, List<Variant> variants) {
    int threads = flags.integer("grow-shrink-threads", 200, 1, 10_000);
    double floorMs = flags.positive("grow-shrink-service-ms", 200);
    double randomMs = flags.positive("grow-shrink-service-random-ms", 2);
    Workload.Phases phases =
        new Workload.Phases(
            flags.positive("grow-shrink-high-s", 4),
            flags.integer("grow-shrink-low-threads", 8, 0, threads),
            flags.positive("grow-shrink-low-s", 8));
    return Workload.closedLoop(
            GROW_SHRINK,
            String.format(
                java.util.Locale.ROOT,
                "the pool grows and shrinks: closed-loop point select, %s ms + exponential(mean %s"
                    + " ms) per query, %d threads for %s s, then %d for %s s",
                VariantTally.trim(floorMs),
                VariantTally.trim(randomMs),
                threads,
                VariantTally.trim(phases.highSeconds()),
                phases.lowThreads(),
                VariantTally.trim(phases.lowSeconds())),
            threads,
            0,
            -1,
            variants)
        .freshClient(floorMs, randomMs)
        .withPhases(phases);
  }

  /**
   * The spiky shape on a frontend with a straggler tail: each call, independently, {@code
   * --straggler-ms} late with probability {@code --straggler-share}; in the outage, every call that
   * late. The tail no choice of connection avoids, which a hedge does.
   */
  private static Workload stragglers(
      Flags flags, Workload spiky, List<Variant> variants, boolean outage) {
    double share = flags.number("straggler-share", 0.02);
    if (!(share > 0 && share <= 1)) {
      throw new IllegalArgumentException(
          "--straggler-share must be a share of calls above 0 and at most 1, was " + share);
    }
    double lateMs = flags.positive("straggler-ms", 50);
    String late = VariantTally.trim(lateMs) + " ms late";
    return (outage
            ? spiky.named(STRAGGLERS_OUTAGE, "spiky point select, every call " + late)
            : spiky.named(
                STRAGGLERS,
                "spiky point select, "
                    + VariantTally.trim(share * 100)
                    + " % of calls "
                    + late
                    + ", independently"))
        .rebased(spiky.baseRate(), spiky.threads(), withHedging(variants))
        .withStragglers(outage ? 1.0 : share, lateMs);
  }

  /**
   * The degraded workload with every {@code --report-every}-th query (10) a report, read to its
   * end, which the frontend serves {@code --report-cost-ms} (100) later on every connection:
   * whether routing tells the report's cost from the slowed connection's. Stock, tuned and tuned +
   * hedging ({@link #withHedging}), on either pool: a hedge also races a report's cost, which no
   * other connection avoids.
   */
  static Workload mixed(Flags flags, Workload spiky, long degradeMillis, List<Variant> variants) {
    int every = flags.integer("report-every", 10, 2, 1000);
    return degraded(spiky, degradeMillis)
        .named(
            MIXED, "spiky point select, one connection slowed, one query in " + every + " a report")
        .rebased(spiky.baseRate(), spiky.threads(), withHedging(variants))
        .withReports(every);
  }

  /**
   * Stock, tuned and the hedging variants of those asked for, with tuned + hedging added when no
   * hedging variant was named: the straggler and mixed workloads compare hedging with what it adds
   * to.
   */
  static List<Variant> withHedging(List<Variant> variants) {
    List<Variant> compared =
        new ArrayList<>(
            variants.stream()
                .filter((v) -> v == Variant.STOCK || v == Variant.TUNED || v.hedges())
                .toList());
    if (compared.stream().noneMatch(Variant::hedges)) {
      compared.add(Variant.HEDGED);
    }
    return List.copyOf(compared);
  }

  /**
   * The reference's spiky shape: {@code --spiky-rate} point selects a second (times the scale),
   * {@code --spiky-multiplier} times that for {@code length} seconds every {@code period}, from
   * {@code --spiky-threads} threads.
   */
  static Workload spiky(
      Flags flags, double scale, double period, double length, List<Variant> variants) {
    return new Workload(
        "spiky",
        "spiky point select",
        600,
        flags.positive("spiky-rate", 300) * scale,
        flags.positive("spiky-multiplier", 3),
        period,
        length,
        flags.integer("spiky-threads", 100, 1, 10_000),
        0,
        variants);
  }

  /** The spiky shape with one connection answering {@code degradeMillis} later all along. */
  static Workload degraded(Workload spiky, long degradeMillis) {
    return spiky
        .named("degraded", "spiky point select, one connection slowed")
        .withFault(Workload.Fault.SLOWED, degradeMillis, 0);
  }

  /**
   * A fresh client's first traffic at high concurrency against slow queries: closed-loop threads
   * well past what a few connections carry (100 streams each), no warm-up. The shape of
   * googleapis/google-cloud-java#12725 (32 channels, concurrency 400), on 8 channels.
   */
  private static Workload freshClient(Flags flags, ClientPool pool, List<Variant> variants) {
    int threads = flags.integer("fresh-threads", 400, 1, 10_000);
    if (pool.dynamic() && flags.optional("fresh-channels") != null) {
      throw new IllegalArgumentException(
          "--fresh-channels sets a fixed pool's size; with --pool dynamic a fresh client's pool"
              + " starts at Spanner's 4 channels and grows");
    }
    int channels = pool.dynamic() ? 0 : flags.integer("fresh-channels", 8, 1, 256);
    double floorMs = flags.positive("fresh-service-ms", 400);
    double randomMs = flags.positive("fresh-service-random-ms", 25);
    return Workload.closedLoop(
            "fresh-client",
            String.format(
                java.util.Locale.ROOT,
                "fresh client, closed-loop point select, %s ms + exponential(mean %s ms) per query,"
                    + " %s",
                VariantTally.trim(floorMs),
                VariantTally.trim(randomMs),
                pool.dynamic()
                    ? "the dynamic pool from its first channels"
                    : channels + " channels"),
            threads,
            channels,
            -1,
            // On the dynamic pool, the variants compared there: its first burst is one of the
            // issue's workloads for stock, tuned and tuned + hedging alike.
            pool.dynamic() ? variants : stockAndTuned(variants))
        .freshClient(floorMs, randomMs);
  }

  /**
   * The spiky load on a frontend that retires every connection at {@code --max-connection-age-s}
   * (10; grpc-java adds ±10 % jitter), its calls in flight given {@code
   * --max-connection-age-grace-s} (1), each new connection costing {@code --connection-set-up-ms}
   * (100) before its calls are served: Google's frontends retire theirs about hourly, seconds here.
   * Stock and tuned; the same load also runs on a frontend that retires none, for the target.
   */
  private static Workload aging(Flags flags, Workload spiky, List<Variant> variants) {
    double ageSeconds = flags.positive("max-connection-age-s", 10);
    if (ageSeconds < 1) {
      throw new IllegalArgumentException(
          "--max-connection-age-s must be at least 1 (grpc-java's least), was " + ageSeconds);
    }
    Workload.Connections connections =
        new Workload.Connections(
            connectionSetUpMs(flags), ageSeconds, flags.positive("max-connection-age-grace-s", 1));
    return spiky
        .named(
            AGING,
            String.format(
                java.util.Locale.ROOT,
                "spiky point select, connections retired every %s s, %s ms to set up each",
                VariantTally.trim(connections.maxAgeSeconds()),
                VariantTally.trim(connections.setUpMs())))
        .rebased(spiky.baseRate(), spiky.threads(), stockTunedAndRefreshOff(variants))
        .withConnections(connections);
  }

  /**
   * A new instance per window under the spiky load, on a frontend whose new connections each cost
   * {@code --connection-set-up-ms} (100): {@code --fresh-instance-rounds} (5) rounds of stock and
   * tuned, each a new client; tuned is ready once its warm-up returns ({@link #warmUpTimeout}). Its
   * first second is set against a second whole burst periods later ({@link Workload.Instance#of}:
   * one at the defaults), which sees the same phase of the load.
   */
  private static Workload freshInstance(Flags flags, Workload spiky, List<Variant> variants) {
    Workload.Instance instance =
        Workload.Instance.of(
            flags.integer("fresh-instance-rounds", 5, 1, 1000), 1, spiky.burstPeriodSeconds());
    double setUpMs = connectionSetUpMs(flags);
    return spiky
        .named(
            FRESH_INSTANCE,
            String.format(
                java.util.Locale.ROOT,
                "spiky point select on a new instance from ready, %s ms to set up each connection",
                VariantTally.trim(setUpMs)))
        .rebased(spiky.baseRate(), spiky.threads(), stockAndTuned(variants))
        .withConnections(new Workload.Connections(setUpMs, 0, 0))
        .freshInstance(instance);
  }

  /** {@code --connection-set-up-ms}: what a new connection costs on the frontend of both. */
  private static double connectionSetUpMs(Flags flags) {
    return flags.positive("connection-set-up-ms", 100);
  }

  /** Stock and tuned of the variants asked for, or all of them if neither was. */
  /**
   * Stock and tuned, and where named ({@code --variants stock,tuned,refresh-off}) tuned with no
   * refresh before the server retires a connection: what the refresh's default ({@code learned})
   * adds to warming again after the GOAWAY.
   */
  private static List<Variant> stockTunedAndRefreshOff(List<Variant> variants) {
    List<Variant> compared =
        variants.stream()
            .filter((v) -> v == Variant.STOCK || v == Variant.TUNED || v == Variant.REFRESH_OFF)
            .toList();
    return compared.isEmpty() ? variants : compared;
  }

  private static List<Variant> stockAndTuned(List<Variant> variants) {
    List<Variant> compared =
        variants.stream().filter((v) -> v == Variant.STOCK || v == Variant.TUNED).toList();
    return compared.isEmpty() ? variants : compared;
  }

  /**
   * A frontend slow to send trailers: closed-loop point selects on a pool of the given size while
   * every stream's trailers come late. Stock and tuned only (of the variants asked for): it asks
   * whether drained streams, which hold their stream slot until the trailers come, cost anything.
   * The margin variants, where named, run here too: the guard's default margin is chosen here.
   */
  private static Workload slowTrailers(Flags flags, int channels, List<Variant> variants) {
    double trailersMs = flags.positive("slow-trailers-ms", 200);
    int threads = flags.integer("slow-trailers-threads", 128, 1, 10_000);
    return Workload.closedLoop(
        "slow-trailers-" + channels + "ch",
        String.format(
            java.util.Locale.ROOT,
            "closed-loop point select, trailers %s ms late, %d channel%s",
            VariantTally.trim(trailersMs),
            channels,
            (channels == 1) ? "" : "s"),
        threads,
        channels,
        trailersMs,
        variants.stream()
            .filter(
                (v) ->
                    v == Variant.STOCK
                        || v == Variant.TUNED
                        || v == Variant.MARGIN_NONE
                        || v == Variant.MARGIN_QUARTER)
            .toList());
  }

  private int channelsOf(Workload workload) {
    return (workload.channels() > 0) ? workload.channels() : this.channels;
  }

  /**
   * The workload's pool: the run's, fixed at the workload's own size where it has one. On the
   * dynamic pool only grow-shrink, the workload of phases that makes the pool grow and shrink in a
   * window, has the pool's timing shortened; every other workload runs on Spanner's own, whose
   * scale-down (every 3 minutes) no window of seconds sees, so that its window starts and ends on
   * the 4 channels a client starts with (or those a burst added).
   */
  private ClientPool poolOf(Workload workload) {
    ClientPool pool = this.pool.withChannels(channelsOf(workload));
    return (workload.phases() == null) ? pool.withProductionTiming() : pool;
  }

  /** The workloads named in a comma-separated list ("" for none), in the order of {@code all}. */
  static List<Workload> choose(List<Workload> all, String names) {
    List<String> chosen =
        Arrays.stream(names.split(","))
            .map(String::trim)
            .filter((name) -> !name.isEmpty())
            .toList();
    for (String name : chosen) {
      if (all.stream().noneMatch((workload) -> workload.name().equals(name))) {
        throw new IllegalArgumentException(
            "Unknown workload '"
                + name
                + "'; use one of "
                + String.join(", ", all.stream().map(Workload::name).toList()));
      }
    }
    return all.stream().filter((workload) -> chosen.contains(workload.name())).toList();
  }

  private Path run(Map<String, String> frontendFlags) throws Exception {
    Files.createDirectories(this.out);
    ClientVersions versions = ClientVersions.detected();
    long started = System.currentTimeMillis();
    Map<String, Object> results = new LinkedHashMap<>();
    results.put("client", versions);
    results.put("started", Instant.ofEpochMilli(started).toString());
    results.put("flags", this.flags.used());
    results.put("pool", this.pool.describe());
    results.put(
        "machine",
        Map.of(
            "cores",
            Runtime.getRuntime().availableProcessors(),
            "cpu",
            MachineCpu.model(),
            "java",
            System.getProperty("java.vm.name") + " " + System.getProperty("java.version"),
            "os",
            System.getProperty("os.name") + " " + System.getProperty("os.arch")));
    log(
        "client line: google-cloud-spanner %s, grpc-gcp %s",
        versions.spanner(), versions.grpcGcp());
    try (Frontend frontend = Frontend.start(frontendFlags);
        ProcessMeters meters = new ProcessMeters()) {
      results.put("frontend", frontend.knobs());
      log("frontend on port %d: %s", frontend.port(), frontend.knobs());
      results.put("floor", floor(frontend));
      if (this.pool.dynamic()) {
        jvmWarmUp(frontend);
      }
      List<Map<String, Object>> workloadResults = new ArrayList<>();
      Phase phase = new Phase(this.rounds, this.windowSeconds, this.warmupQueries);
      for (Workload workload : this.workloads) {
        workloadResults.add(
            (workload.connections() == null)
                ? runWorkload(frontend, meters, workload, phase, Integer.MAX_VALUE)
                : runOnOwnFrontend(frontendFlags, meters, workload, phase));
      }
      results.put("workloads", workloadResults);
    }
    if (this.cpuLimited.enabled()) {
      results.put("cpuLimited", this.cpuLimited.runInChild(this.out));
    }
    results.put("durationSeconds", (System.currentTimeMillis() - started) / 1000.0);
    Path file =
        this.out.resolve(
            "results-" + versions.spanner() + (this.pool.dynamic() ? "-dynamic" : "") + ".json");
    json.writeValue(file.toFile(), results);
    log("wrote %s", file);
    Report.write(this.out);
    return this.out;
  }

  /**
   * On the dynamic pool, {@code --jvm-warmup-queries} point selects on a client of each variant,
   * not recorded, before the first workload: the dynamic pool's workloads come first in the run,
   * where the fixed pool's come after steady, bursty and spiky, whose windows compile the client's
   * code; without it, the first variant's first window would pay for that.
   */
  private void jvmWarmUp(Frontend frontend) throws Exception {
    int queries = this.cpuLimited.jvmWarmupQueries();
    List<Variant> variants =
        this.workloads.stream().flatMap((w) -> w.variants().stream()).distinct().toList();
    for (Variant variant : variants) {
      long started = System.nanoTime();
      try (BenchClient client = BenchClient.open(variant, frontend.port(), this.pool)) {
        warmUp(client, 16, queries);
      }
      log(
          "JVM warm-up %-17s %d queries in %.1f s",
          variant.label(), queries, (System.nanoTime() - started) / 1e9);
    }
  }

  /** Single point selects at idle, one at a time: the best latency this server model allows. */
  private Map<String, Object> floor(Frontend frontend) throws Exception {
    Map<String, Object> floor = new LinkedHashMap<>();
    for (Variant variant : List.of(Variant.STOCK, Variant.TUNED)) {
      frontend.mark();
      try (BenchClient client = BenchClient.open(variant, frontend.port(), this.pool)) {
        warmUp(client, 8, this.warmupQueries);
        Histogram latency = new Histogram(3);
        int failed = 0;
        for (int i = 0; i < this.floorQueries; i++) {
          long start = System.nanoTime();
          try {
            client.pointSelect();
            latency.recordValue(Math.max(1, (System.nanoTime() - start) / 1000));
          } catch (RuntimeException ex) {
            // A query lost to a GOAWAY that stock's resets in the warm-up brought on (a dynamic
            // pool has fewer connections to spread them over): not the server model's latency.
            failed++;
          }
          Thread.sleep(2);
        }
        Map<String, Object> figures = new LinkedHashMap<>();
        figures.put("queries", latency.getTotalCount());
        figures.put("failed", failed);
        figures.put("meanMs", latency.getMean() / 1000.0);
        figures.put("p50Ms", VariantTally.ms(latency.getValueAtPercentile(50)));
        figures.put("p99Ms", VariantTally.ms(latency.getValueAtPercentile(99)));
        figures.put("maxMs", VariantTally.ms(latency.getMaxValue()));
        floor.put(variant.label(), figures);
        log("floor %-6s %s", variant.label(), figures);
      }
    }
    return floor;
  }

  /** Every variant of the workload in rounds; see {@link OpenLoop#run} for the queue limit. */
  Map<String, Object> runWorkload(
      Frontend frontend, ProcessMeters meters, Workload workload, Phase runPhase, int queueLimit)
      throws Exception {
    return runWorkload(frontend, null, meters, workload, runPhase, queueLimit);
  }

  /**
   * A workload whose connections cost time and age, on a frontend of its own: the run's frontend
   * flags with those connections. Where they are retired, a second frontend that retires none runs
   * the same load, its windows interleaved with the first's in each round: the baseline.
   */
  private Map<String, Object> runOnOwnFrontend(
      Map<String, String> frontendFlags, ProcessMeters meters, Workload workload, Phase phase)
      throws Exception {
    Workload.Connections connections = workload.connections();
    try (Frontend own = Frontend.start(withKnobs(frontendFlags, connections));
        Frontend unretired =
            connections.retired()
                ? Frontend.start(withKnobs(frontendFlags, connections.withoutRetirement()))
                : null) {
      log("%s: frontend on port %d: %s", workload.name(), own.port(), own.knobs());
      if (unretired != null) {
        log(
            "%s, no retirement: frontend on port %d: %s",
            workload.name(), unretired.port(), unretired.knobs());
      }
      return runWorkload(own, unretired, meters, workload, phase, Integer.MAX_VALUE);
    }
  }

  private static Map<String, String> withKnobs(
      Map<String, String> frontendFlags, Workload.Connections connections) {
    Map<String, String> flags = new LinkedHashMap<>(frontendFlags);
    flags.putAll(connections.frontendFlags());
    return flags;
  }

  /**
   * Every variant of the workload in rounds; with {@code unretired}, every variant again on that
   * frontend, in the same rounds.
   */
  private Map<String, Object> runWorkload(
      Frontend frontend,
      Frontend unretired,
      ProcessMeters meters,
      Workload workload,
      Phase runPhase,
      int queueLimit)
      throws Exception {
    Phase phase;
    if (workload.phases() != null) {
      phase =
          new Phase(runPhase.rounds(), workload.phases().windowSeconds(), runPhase.warmupQueries());
    } else if (workload.instance() != null) {
      phase = new Phase(workload.instance().rounds(), workload.instance().windowSeconds(), 0);
    } else {
      phase = runPhase;
    }
    int seriesLength = (int) Math.ceil(phase.windowSeconds() / this.bucketSeconds);
    Map<Variant, VariantTally> tallies = new LinkedHashMap<>();
    Map<Variant, VariantTally> unretiredTallies = new LinkedHashMap<>();
    Map<VariantTally, Frontend> frontends = new LinkedHashMap<>();
    for (Variant variant : workload.variants()) {
      VariantTally tally =
          new VariantTally(variant, channelsOf(workload), this.pool.dynamic(), seriesLength);
      tallies.put(variant, tally);
      frontends.put(tally, frontend);
    }
    if (unretired != null) {
      for (Variant variant : workload.variants()) {
        VariantTally tally =
            new VariantTally(variant, channelsOf(workload), this.pool.dynamic(), seriesLength);
        unretiredTallies.put(variant, tally);
        frontends.put(tally, unretired);
      }
    }
    List<VariantTally> order = new ArrayList<>(frontends.keySet());
    for (int round = 0; round < phase.rounds(); round++) {
      for (VariantTally tally : order) {
        window(frontends.get(tally), meters, workload, tally, round, phase, queueLimit);
      }
      // A B, then B A: whatever drifts within a round (the JVM still settling, the machine's
      // load) falls on every variant alike.
      java.util.Collections.reverse(order);
    }
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("name", workload.name());
    result.put("description", workload.description());
    result.put("referenceRate", workload.referenceRate());
    result.put("baseRate", workload.baseRate());
    result.put("scale", workload.scale());
    result.put("burstMultiplier", workload.burstMultiplier());
    result.put("burstPeriodS", workload.burstPeriodSeconds());
    result.put("burstLengthS", workload.burstLengthSeconds());
    List<double[]> bursts = new ArrayList<>();
    for (double t = 0; t < phase.windowSeconds(); t += this.bucketSeconds / 10) {
      boolean in = workload.inBurst(t);
      if (in
          && (bursts.isEmpty() || bursts.get(bursts.size() - 1)[1] < t - this.bucketSeconds / 5)) {
        bursts.add(new double[] {t, t});
      } else if (in) {
        bursts.get(bursts.size() - 1)[1] = t;
      }
    }
    result.put("bursts", bursts);
    result.put("threads", workload.threads());
    result.put("degradeMs", workload.degradeMillis());
    result.put("windowS", phase.windowSeconds());
    result.put("fault", workload.fault().name().toLowerCase(java.util.Locale.ROOT));
    if (workload.reportEvery() > 0) {
      result.put("reportEvery", workload.reportEvery());
    }
    if (workload.jdbc()) {
      result.put("api", "jdbc");
    }
    if (workload.deadlineMs() > 0) {
      result.put("deadlineMs", workload.deadlineMs());
    }
    if (workload.stragglers() != null) {
      Map<String, Object> stragglers = new LinkedHashMap<>();
      stragglers.put("share", workload.stragglers()[0]);
      stragglers.put("lateMs", workload.stragglers()[1]);
      result.put("stragglers", stragglers);
    }
    if (workload.closedLoop()) {
      result.put("closedLoop", true);
      result.put("channels", channelsOf(workload));
      result.put("trailersDelayMs", workload.trailersDelayMs());
    }
    if (workload.serviceMs() != null) {
      result.put("serviceMs", workload.serviceMs());
      if (workload.phases() == null) {
        result.put("idealQueriesPerSecond", workload.idealThroughput());
      }
      result.put("warmedUp", workload.warmUp());
    }
    if (workload.phases() != null) {
      Map<String, Object> phases = new LinkedHashMap<>();
      phases.put("highThreads", workload.threads());
      phases.put("highS", workload.phases().highSeconds());
      phases.put("lowThreads", workload.phases().lowThreads());
      phases.put("lowS", workload.phases().lowSeconds());
      result.put("phases", phases);
    }
    if (this.pool.dynamic()) {
      result.put("pool", ClientPool.DYNAMIC);
      result.put("poolSampleS", this.bucketSeconds);
    }
    if (workload.connections() != null) {
      Map<String, Object> connections = new LinkedHashMap<>();
      connections.put("setUpMs", workload.connections().setUpMs());
      connections.put("maxAgeS", workload.connections().maxAgeSeconds());
      connections.put("graceS", workload.connections().graceSeconds());
      result.put("connections", connections);
      result.put("frontend", frontend.knobs());
    }
    if (workload.instance() != null) {
      Map<String, Object> instance = new LinkedHashMap<>();
      instance.put("firstS", workload.instance().firstSeconds());
      instance.put("warmFromS", workload.instance().warmFromSeconds());
      instance.put("warmUpTimeoutS", this.warmUpTimeout.toMillis() / 1000.0);
      result.put("instance", instance);
    }
    result.put("rounds", phase.rounds());
    List<Map<String, Object>> variants = new ArrayList<>();
    tallies.values().forEach((tally) -> variants.add(tally.toJson(this.bucketSeconds)));
    result.put("variants", variants);
    logMedians(workload.name(), variants);
    if (unretired != null) {
      List<Map<String, Object>> baseline = new ArrayList<>();
      unretiredTallies.values().forEach((tally) -> baseline.add(tally.toJson(this.bucketSeconds)));
      Map<String, Object> noRetirement = new LinkedHashMap<>();
      noRetirement.put("frontend", unretired.knobs());
      noRetirement.put("variants", baseline);
      result.put("noRetirement", noRetirement);
      logMedians(workload.name() + ", no retirement,", baseline);
    }
    return result;
  }

  /**
   * Each variant's median of rounds of P50 and P99, its P99 over stock's and tuned's, and the
   * machine's CPU steal in each round: what a run tells before its report is written.
   */
  private static void logMedians(String workload, List<Map<String, Object>> variants) {
    List<JsonNode> nodes = variants.stream().map((v) -> (JsonNode) json.valueToTree(v)).toList();
    JsonNode stock = null;
    JsonNode tuned = null;
    for (JsonNode node : nodes) {
      if (node.path("variant").asText().equals(Variant.STOCK.label())) {
        stock = node;
      } else if (node.path("variant").asText().equals(Variant.TUNED.label())) {
        tuned = node;
      }
    }
    for (JsonNode node : nodes) {
      JsonNode p99 = Report.medianOfRounds(node, "p99Ms");
      log(
          "%-8s median of %d rounds %-17s p50 %s ms p99 %s ms, p99 / stock %s, / tuned %s;"
              + " steal per round %s %%%s",
          workload,
          node.path("rounds").size(),
          node.path("variant").asText(),
          Report.fmt(Report.medianOfRounds(node, "p50Ms"), 2),
          Report.fmt(p99, 2),
          (stock == null) ? "n/a" : Report.ratio(Report.medianOfRounds(stock, "p99Ms"), p99),
          (tuned == null) ? "n/a" : Report.ratio(Report.medianOfRounds(tuned, "p99Ms"), p99),
          Report.stealPerRound(node),
          mixedLog(node));
    }
  }

  /**
   * A mixed workload's figures in its median line: the reports' own latency apart from the point
   * selects', the slowed connection's share of its even share and the failed queries, per round;
   * empty for a workload without reports.
   */
  private static String mixedLog(JsonNode variant) {
    if (!variant.has("reports")) {
      return "";
    }
    return String.format(
        java.util.Locale.ROOT,
        "; reports %d, p50 %s ms p99 %s ms (median of rounds); slowed connection's share of its"
            + " even share per round %s; failed queries per round %s",
        variant.path("reports").asLong(),
        Report.fmt(Report.medianOfRounds(variant, "reportP50Ms"), 2),
        Report.fmt(Report.medianOfRounds(variant, "reportP99Ms"), 2),
        Report.perRound(variant, "degradedShareOfEven", 2),
        Report.perRound(variant, "errors", 0));
  }

  /** A window's reports in its log line; empty for a workload without reports. */
  private static String reportsLog(Histogram reports) {
    return (reports.getTotalCount() == 0)
        ? ""
        : String.format(
            java.util.Locale.ROOT,
            " reports %d p50 %.2f ms p99 %.2f ms",
            reports.getTotalCount(),
            VariantTally.ms(reports.getValueAtPercentile(50)),
            VariantTally.ms(reports.getValueAtPercentile(99)));
  }

  private void window(
      Frontend frontend,
      ProcessMeters meters,
      Workload workload,
      VariantTally tally,
      int round,
      Phase phase,
      int queueLimit)
      throws Exception {
    if (workload.instance() != null) {
      freshInstanceWindow(frontend, meters, workload, tally, round, queueLimit);
      return;
    }
    frontend.mark();
    if (workload.trailersDelayMs() >= 0) {
      frontend.trailersDelay(workload.trailersDelayMs());
    }
    Thread restorer = null;
    if (workload.stragglers() != null) {
      // The tail is the server's nature here, not a fault that begins: the warm-up meets it too, as
      // hedging's delay is learned from the client's own reads.
      frontend.stragglers(workload.stragglers()[0], workload.stragglers()[1]);
    }
    // The load's threads start before the client: a client that is not warmed up then makes its
    // first call at once, before a dynamic pool's first scale-down check could shrink it.
    try (ClosedLoop closed = workload.closedLoop() ? new ClosedLoop(workload.threads()) : null;
        OpenLoop open = workload.closedLoop() ? null : new OpenLoop(workload.threads());
        BenchClient client =
            BenchClient.open(workload, tally.variant(), frontend.port(), poolOf(workload))) {
      if (workload.warmUp()) {
        warmUp(
            client,
            Math.min(16, workload.threads()),
            phase.warmupQueries(),
            workload.reportEvery());
      }
      if (workload.connections() != null && client.state() != null) {
        // Where connections cost time, the tuned client's window starts with every channel warm,
        // as its application's readiness waits for; stock has what its warm-up queries opened.
        client.state().warmUp(this.warmUpTimeout);
      }
      if (workload.serviceMs() != null) {
        frontend.serviceTime(workload.serviceMs()[0], workload.serviceMs()[1]);
      }
      String degraded;
      if (workload.fault() == Workload.Fault.STALLED) {
        degraded = frontend.stall();
      } else if (this.pool.dynamic()) {
        degraded =
            frontend.degrade(workload.degradeMillis(), this.seed + round, RECENT_CONNECTION_MS);
      } else {
        degraded = frontend.degrade(workload.degradeMillis(), this.seed + round);
      }
      long serverCpuStart = frontend.resetCounters();
      MachineCpu machineStart = MachineCpu.now();
      if (workload.fault() == Workload.Fault.RECOVERED) {
        restorer = restoreAfter(frontend, phase.windowSeconds() / 2);
      }
      // The dynamic pool's channels come and go: the server's counts per connection stand for them.
      long[] before = this.pool.dynamic() ? new long[0] : client.clientChannelCalls();
      long[] hedgesBefore = client.hedges();
      OpenLoop.Window window;
      ProcessMeters.Reading cost;
      long cancelledAtLimit = client.cancelledAtLimit();
      List<Integer> poolSizes = null;
      if (workload.closedLoop()) {
        try (ClientPool.Sampler sampler = sampler(client)) {
          closed.onEachThread(client::prepareThread);
          ProcessMeters.Snapshot start = meters.start();
          window = closed.run(client, phase.windowSeconds(), this.bucketSeconds, workload.phases());
          cost = meters.end(start);
          poolSizes = (sampler != null) ? sampler.stop(client) : null;
        }
      } else {
        try (ClientPool.Sampler sampler = sampler(client)) {
          open.onEachThread(client::prepareThread);
          ProcessMeters.Snapshot start = meters.start();
          window =
              open.run(
                  client,
                  workload,
                  phase.windowSeconds(),
                  this.bucketSeconds,
                  this.seed + round,
                  queueLimit);
          cost = meters.end(start);
          poolSizes = (sampler != null) ? sampler.stop(client) : null;
          if (this.watch != null) {
            this.watch.sample();
          }
        }
      }
      tally.addCancelledAtLimit(client.cancelledAtLimit() - cancelledAtLimit);
      long[] hedgesAfter = client.hedges();
      JsonNode stats = frontend.stats();
      long[] after = this.pool.dynamic() ? new long[0] : client.clientChannelCalls();
      long[] delta = new long[after.length];
      for (int i = 0; i < after.length; i++) {
        delta[i] = after[i] - ((i < before.length) ? before[i] : 0);
      }
      long serverCpu = stats.path("processCpuNanos").asLong() - serverCpuStart;
      tally.add(window, cost, stats, serverCpu, delta);
      MachineCpu.Share machine = machineStart.until(MachineCpu.now(), serverCpu);
      tally.addMachineCpu(machine);
      if (poolSizes != null) {
        tally.addPoolSizes(
            poolSizes,
            (workload.phases() == null)
                ? -1
                : (int) Math.round(workload.phases().highSeconds() / this.bucketSeconds),
            client.routesOnDynamicPool());
      }
      if (hedgesBefore != null) {
        long[] hedges = new long[hedgesAfter.length];
        for (int i = 0; i < hedges.length; i++) {
          hedges[i] = hedgesAfter[i] - hedgesBefore[i];
        }
        tally.addHedges(hedges);
      }
      log(
          "%-8s round %d %-17s ops %6d errors %4d p50 %7.2f ms p99 %8.2f ms cpu %5.0f ms/1000q"
              + " steal %4.1f%%%s",
          workload.name(),
          round + 1,
          tally.variant().label(),
          window.ops(),
          window.errors(),
          VariantTally.ms(window.latency().getValueAtPercentile(50)),
          VariantTally.ms(window.latency().getValueAtPercentile(99)),
          cost.cpuNanos() / 1e6 / Math.max(1, window.queries()) * 1000,
          machine.steal() * 100,
          (workload.fault() != Workload.Fault.NONE
                  ? " "
                      + workload.fault().name().toLowerCase(java.util.Locale.ROOT)
                      + " "
                      + degraded
                  : "")
              + (window.unsent() > 0 ? " fell behind, unsent " + window.unsent() : "")
              + ((poolSizes != null) ? poolLog(poolSizes) : "")
              + reportsLog(window.reports()));
    } finally {
      if (restorer != null) {
        restorer.interrupt();
        restorer.join();
      }
      if (workload.trailersDelayMs() >= 0) {
        frontend.trailersDelay(frontend.knobs().path("trailersDelayMs").asDouble());
      }
      if (workload.serviceMs() != null || workload.stragglers() != null) {
        frontend.defaultServiceTime();
      }
    }
  }

  /**
   * One window of a new instance: the counters restart and the load's threads start before its
   * client is built, so that nothing the benchmark does stands between the instance's ready and its
   * first query. Ready is timed from the start of the client's build: for stock, once the client
   * and its database client are built, as a stock application reports ready; for tuned, once its
   * warm-up returns, as the starter's readiness waits. The window's counters and cost run from
   * before the build, so the priming queries and the first connections' set-ups count in them.
   */
  private void freshInstanceWindow(
      Frontend frontend,
      ProcessMeters meters,
      Workload workload,
      VariantTally tally,
      int round,
      int queueLimit)
      throws Exception {
    Workload.Instance instance = workload.instance();
    frontend.mark();
    try (OpenLoop open = new OpenLoop(workload.threads())) {
      long serverCpuStart = frontend.resetCounters();
      MachineCpu machineStart = MachineCpu.now();
      ProcessMeters.Snapshot start = meters.start();
      OpenLoop.Window window;
      ProcessMeters.Reading cost;
      long[] channelCalls;
      double readyMs;
      try (BenchClient client =
          BenchClient.open(workload, tally.variant(), frontend.port(), poolOf(workload))) {
        if (client.state() != null) {
          client.state().warmUp(this.warmUpTimeout);
        }
        readyMs = (System.nanoTime() - client.buildStartNanos()) / 1e6;
        window =
            open.run(
                client,
                workload,
                instance.windowSeconds(),
                this.bucketSeconds,
                this.seed + round,
                queueLimit);
        cost = meters.end(start);
        channelCalls = client.clientChannelCalls();
      }
      JsonNode stats = frontend.stats();
      long serverCpu = stats.path("processCpuNanos").asLong() - serverCpuStart;
      tally.add(window, cost, stats, serverCpu, channelCalls);
      MachineCpu.Share machine = machineStart.until(MachineCpu.now(), serverCpu);
      tally.addMachineCpu(machine);
      tally.addInstance(
          readyMs,
          instance.first(window.series(), this.bucketSeconds),
          instance.warm(window.series(), this.bucketSeconds));
      log(
          "%-8s round %d %-17s ready %6.0f ms, first %s s p99 %8.2f ms, warm p99 %8.2f ms,"
              + " reads that waited %d, errors %d steal %4.1f%%",
          workload.name(),
          round + 1,
          tally.variant().label(),
          readyMs,
          VariantTally.trim(instance.firstSeconds()),
          VariantTally.ms(
              instance.first(window.series(), this.bucketSeconds).getValueAtPercentile(99)),
          VariantTally.ms(
              instance.warm(window.series(), this.bucketSeconds).getValueAtPercentile(99)),
          stats.path("connections").path("readsThatWaited").asLong(),
          window.errors(),
          machine.steal() * 100);
    }
  }

  /**
   * On the dynamic pool, the connection a window slows is one that carried a call in this last
   * stretch before the window, which the pool has not removed.
   */
  static final long RECENT_CONNECTION_MS = 1000;

  /** On the dynamic pool, a sampler of the client's pool size at the series' period. */
  private ClientPool.Sampler sampler(BenchClient client) {
    return this.pool.dynamic() ? new ClientPool.Sampler(client, this.bucketSeconds) : null;
  }

  /** The pool's sizes in a window's log line: at its start, its peak and at its end. */
  private static String poolLog(List<Integer> sizes) {
    return String.format(
        java.util.Locale.ROOT,
        " pool %d -> peak %d -> %d",
        sizes.get(0),
        sizes.stream().mapToInt(Integer::intValue).max().orElse(0),
        sizes.get(sizes.size() - 1));
  }

  /** Ends the frontend's fault on the window's connection after the given time. */
  private static Thread restoreAfter(Frontend frontend, double seconds) {
    Thread restorer =
        new Thread(
            () -> {
              try {
                Thread.sleep((long) (seconds * 1000));
                frontend.restore();
              } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
              } catch (Exception ex) {
                throw new IllegalStateException("The frontend did not restore the connection", ex);
              }
            },
            "bench-restore");
    restorer.setDaemon(true);
    restorer.start();
    return restorer;
  }

  /** Warm-up queries from a few threads at once, so that the client opens its connections. */
  static void warmUp(BenchClient client, int threads, int queries) throws Exception {
    warmUp(client, threads, queries, 0);
  }

  /**
   * As {@link #warmUp(BenchClient, int, int)}, every {@code reportEvery}-th query a report (0 for
   * none): a mixed workload's client has seen its reports before a connection slows, as an
   * application that has run a while has.
   */
  static void warmUp(BenchClient client, int threads, int queries, int reportEvery)
      throws Exception {
    if (queries == 0) {
      return;
    }
    AtomicInteger remaining = new AtomicInteger(queries);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> workers = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        workers.add(
            pool.submit(
                () -> {
                  int left;
                  while ((left = remaining.getAndDecrement()) > 0) {
                    try {
                      if (reportEvery > 0 && left % reportEvery == 0) {
                        client.report();
                      } else {
                        client.pointSelect();
                      }
                    } catch (RuntimeException ex) {
                      // A warm-up query lost to the frontend's reset limit (stock's resets reach
                      // it) warms the client as well; the measured windows count their failures.
                    }
                  }
                }));
      }
      for (Future<?> worker : workers) {
        worker.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  int channels() {
    return this.channels;
  }

  ClientPool pool() {
    return this.pool;
  }

  void watch(CpuLimit.Watch watch) {
    this.watch = watch;
  }

  static void log(String format, Object... args) {
    System.out.printf("[bench] " + format + "%n", args);
  }
}
