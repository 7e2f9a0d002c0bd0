package io.github.spannertuning.benchmarks;

import io.github.spannertuning.testing.MockSpannerServer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.HdrHistogram.Histogram;

/**
 * One reference workload, scaled to this machine: a base arrival rate with periodic bursts, a
 * number of client threads, and optionally one degraded connection. A closed-loop workload has no
 * arrival rate instead: each thread sends its next query as soon as the last one is done.
 *
 * @param referenceRate the reference result's base rate, for the report's scale column
 * @param channels the pool size for this workload, 0 for the run's
 * @param trailersDelayMs how late the frontend sends a stream's trailers during this workload,
 *     negative for the frontend's own setting
 * @param fault what happens to one connection after the warm-up
 * @param deadlineMs each query's deadline, 0 for the client's own (minutes)
 * @param serviceMs the frontend's time per query during this workload, {@code {floor, mean of the
 *     exponential part}}; {@code null} for the frontend's own setting
 * @param warmUp whether the client is warmed up before the window; {@code false} measures a fresh
 *     client's first traffic
 * @param jdbc whether the queries go through Google's JDBC driver ({@link JdbcPointSelects})
 *     instead of the client's own API
 * @param stragglers the frontend's straggler tail during this workload, {@code {share of calls, ms
 *     late}}, each call late or not independently; {@code null} for none
 * @param phases a closed loop's two phases, many threads then few; {@code null} for one phase
 * @param connections the frontend's connections during this workload, on a frontend of its own;
 *     {@code null} for the run's frontend
 * @param instance a new client per window, measured from its build to ready and on through its
 *     first seconds; {@code null} for a client warmed up (or not) before its window
 * @param reportEvery every this many-th query of an open loop a report ({@link
 *     MockSpannerServer#REPORT}, which the frontend serves later than a point select on every
 *     connection), read to its end; 0 for point selects only
 */
record Workload(
    String name,
    String description,
    double referenceRate,
    double baseRate,
    double burstMultiplier,
    double burstPeriodSeconds,
    double burstLengthSeconds,
    int threads,
    long degradeMillis,
    List<Variant> variants,
    boolean closedLoop,
    int channels,
    double trailersDelayMs,
    Fault fault,
    long deadlineMs,
    double[] serviceMs,
    boolean warmUp,
    boolean jdbc,
    double[] stragglers,
    Phases phases,
    Connections connections,
    Instance instance,
    int reportEvery) {

  /** What the frontend does to one connection of the client once it is warmed up. */
  enum Fault {
    /** Nothing. */
    NONE,
    /** The connection answers {@code degradeMillis} later for the whole window. */
    SLOWED,
    /**
     * The connection answers {@code degradeMillis} later for the first half of the window, then as
     * fast as the others.
     */
    RECOVERED,
    /**
     * The pool's busiest connection stops answering: its calls are held unanswered until the client
     * gives up on them.
     */
    STALLED
  }

  /**
   * A closed loop in two phases: all its threads for {@code highSeconds}, then {@code lowThreads}
   * of them for {@code lowSeconds}, the window being both.
   */
  record Phases(double highSeconds, int lowThreads, double lowSeconds) {

    double windowSeconds() {
      return this.highSeconds + this.lowSeconds;
    }
  }

  /**
   * A frontend whose connections cost time and age, as Google's do: every call on a new connection
   * waits until {@code setUpMs} after the connection's first call, and with {@code maxAgeSeconds}
   * above 0 each connection is retired at that age (grpc-java's {@code maxConnectionAge}, with its
   * ±10 % jitter: a GOAWAY, then its end once its calls are done or {@code graceSeconds} have
   * passed).
   */
  record Connections(double setUpMs, double maxAgeSeconds, double graceSeconds) {

    boolean retired() {
      return this.maxAgeSeconds > 0;
    }

    /** The same set-up, no connection retired: the baseline of a workload whose are. */
    Connections withoutRetirement() {
      return new Connections(this.setUpMs, 0, 0);
    }

    /** The frontend's flags for these connections ({@link FrontendKnobs#CONNECTION_FLAGS}). */
    Map<String, String> frontendFlags() {
      Map<String, String> flags = new LinkedHashMap<>();
      flags.put("connection-set-up-ms", Double.toString(this.setUpMs));
      if (retired()) {
        flags.put("max-connection-age-s", Double.toString(this.maxAgeSeconds));
        flags.put("max-connection-age-grace-s", Double.toString(this.graceSeconds));
      }
      return flags;
    }
  }

  /**
   * A new instance per window, {@code rounds} of them per variant: its client is built, and it is
   * ready when a stock application would say so (the client and its database client built) or a
   * tuned one (its warm-up returned). The load starts at once. Its first {@code firstSeconds} are
   * set against as long a stretch {@code warmFromSeconds} later, when the same client has run warm
   * for a while: whole burst periods later, the stretch sees the same phase of the load.
   */
  record Instance(int rounds, double firstSeconds, double warmFromSeconds) {

    /**
     * The warm stretch from the first whole burst period that starts when the first stretch has
     * ended (one period at the defaults: 1 s, then from 5 s), so that the two never overlap.
     */
    static Instance of(int rounds, double firstSeconds, double burstPeriodSeconds) {
      double periods = Math.max(1, Math.ceil(firstSeconds / burstPeriodSeconds - 1e-9));
      return new Instance(rounds, firstSeconds, periods * burstPeriodSeconds);
    }

    /** The window: up to the end of the warm stretch. */
    double windowSeconds() {
      return this.warmFromSeconds + this.firstSeconds;
    }

    /** The first stretch's latencies, from a window's series. */
    Histogram first(Histogram[] series, double bucketSeconds) {
      return between(series, bucketSeconds, 0, this.firstSeconds);
    }

    /** The warm stretch's latencies, from a window's series. */
    Histogram warm(Histogram[] series, double bucketSeconds) {
      return between(series, bucketSeconds, this.warmFromSeconds, windowSeconds());
    }

    /**
     * The latencies of the queries scheduled from {@code fromSeconds} to {@code toSeconds} into the
     * window: the series' buckets that lie wholly inside that stretch, merged.
     */
    static Histogram between(
        Histogram[] series, double bucketSeconds, double fromSeconds, double toSeconds) {
      Histogram merged = new Histogram(2);
      double slack = bucketSeconds * 1e-6;
      for (int i = 0; i < series.length; i++) {
        if (i * bucketSeconds >= fromSeconds - slack
            && (i + 1) * bucketSeconds <= toSeconds + slack) {
          merged.add(series[i]);
        }
      }
      return merged;
    }
  }

  /** An open-loop workload on the run's pool and frontend settings. */
  Workload(
      String name,
      String description,
      double referenceRate,
      double baseRate,
      double burstMultiplier,
      double burstPeriodSeconds,
      double burstLengthSeconds,
      int threads,
      long degradeMillis,
      List<Variant> variants) {
    this(
        name,
        description,
        referenceRate,
        baseRate,
        burstMultiplier,
        burstPeriodSeconds,
        burstLengthSeconds,
        threads,
        degradeMillis,
        variants,
        false,
        0,
        -1,
        (degradeMillis > 0) ? Fault.SLOWED : Fault.NONE,
        0,
        null,
        true,
        false,
        null,
        null,
        null,
        null,
        0);
  }

  /** Closed-loop point selects from a number of threads. */
  static Workload closedLoop(
      String name,
      String description,
      int threads,
      int channels,
      double trailersDelayMs,
      List<Variant> variants) {
    return new Workload(name, description, 0, 0, 1, 1, 0, threads, 0, variants)
        .with(
            (copy) -> {
              copy.closedLoop = true;
              copy.channels = channels;
              copy.trailersDelayMs = trailersDelayMs;
            });
  }

  /** This workload with a fault on one connection, and each query's deadline. */
  Workload withFault(Fault fault, long degradeMillis, long deadlineMs) {
    return with(
        (copy) -> {
          copy.fault = fault;
          copy.degradeMillis = degradeMillis;
          copy.deadlineMs = deadlineMs;
        });
  }

  /** The same shape under another name. */
  Workload named(String name, String description) {
    return with(
        (copy) -> {
          copy.name = name;
          copy.description = description;
        });
  }

  /** This workload on a fresh client, with the frontend taking this long per query. */
  Workload freshClient(double floorMs, double randomMs) {
    return with(
        (copy) -> {
          copy.serviceMs = new double[] {floorMs, randomMs};
          copy.warmUp = false;
        });
  }

  /** This closed loop in two phases. */
  Workload withPhases(Phases phases) {
    return with((copy) -> copy.phases = phases);
  }

  /** The same workload, each point select sent through Google's JDBC driver. */
  Workload viaJdbc() {
    return with((copy) -> copy.jdbc = true);
  }

  /**
   * The same workload on a frontend where each call is, independently, {@code lateMs} late with
   * probability {@code share}.
   */
  Workload withStragglers(double share, double lateMs) {
    return with((copy) -> copy.stragglers = new double[] {share, lateMs});
  }

  /** This workload on a frontend of its own, whose connections cost time and age. */
  Workload withConnections(Connections connections) {
    return with((copy) -> copy.connections = connections);
  }

  /** This workload on a new instance per window, not warmed up by queries. */
  Workload freshInstance(Instance instance) {
    return with(
        (copy) -> {
          copy.warmUp = false;
          copy.instance = instance;
        });
  }

  /**
   * This open-loop workload with every {@code every}-th query a report ({@link
   * MockSpannerServer#REPORT}) read to its end instead of a point select.
   */
  Workload withReports(int every) {
    return with((copy) -> copy.reportEvery = every);
  }

  /**
   * Queries per second if every thread always had a query in the frontend and nothing else waited.
   */
  double idealThroughput() {
    return (this.serviceMs == null)
        ? 0
        : this.threads / ((this.serviceMs[0] + this.serviceMs[1]) / 1000);
  }

  /** Arrivals per second at this many seconds into a window. */
  double rateAt(double seconds) {
    return inBurst(seconds) ? this.baseRate * this.burstMultiplier : this.baseRate;
  }

  /** Bursts start half a period in, so every window sees base load first. */
  boolean inBurst(double seconds) {
    if (this.burstMultiplier <= 1.0 || this.burstLengthSeconds <= 0) {
      return false;
    }
    double phase = (seconds + this.burstPeriodSeconds / 2) % this.burstPeriodSeconds;
    return phase >= this.burstPeriodSeconds - this.burstLengthSeconds;
  }

  /** The same shape at another base rate, with the given threads and variants. */
  Workload rebased(double rate, int threads, List<Variant> variants) {
    return with(
        (copy) -> {
          copy.baseRate = rate;
          copy.threads = threads;
          copy.variants = variants;
        });
  }

  double scale() {
    return this.baseRate / this.referenceRate;
  }

  /**
   * This workload with the changes made to a copy of its fields: each copy method names only what
   * it changes.
   */
  private Workload with(Consumer<Copy> change) {
    Copy copy = new Copy(this);
    change.accept(copy);
    return copy.build();
  }

  /** A workload's fields, taken from it to change some of: the one place they are all copied. */
  private static final class Copy {

    private String name;

    private String description;

    private final double referenceRate;

    private double baseRate;

    private final double burstMultiplier;

    private final double burstPeriodSeconds;

    private final double burstLengthSeconds;

    private int threads;

    private long degradeMillis;

    private List<Variant> variants;

    private boolean closedLoop;

    private int channels;

    private double trailersDelayMs;

    private Fault fault;

    private long deadlineMs;

    private double[] serviceMs;

    private boolean warmUp;

    private boolean jdbc;

    private double[] stragglers;

    private Phases phases;

    private Connections connections;

    private Instance instance;

    private int reportEvery;

    private Copy(Workload workload) {
      this.name = workload.name;
      this.description = workload.description;
      this.referenceRate = workload.referenceRate;
      this.baseRate = workload.baseRate;
      this.burstMultiplier = workload.burstMultiplier;
      this.burstPeriodSeconds = workload.burstPeriodSeconds;
      this.burstLengthSeconds = workload.burstLengthSeconds;
      this.threads = workload.threads;
      this.degradeMillis = workload.degradeMillis;
      this.variants = workload.variants;
      this.closedLoop = workload.closedLoop;
      this.channels = workload.channels;
      this.trailersDelayMs = workload.trailersDelayMs;
      this.fault = workload.fault;
      this.deadlineMs = workload.deadlineMs;
      this.serviceMs = workload.serviceMs;
      this.warmUp = workload.warmUp;
      this.jdbc = workload.jdbc;
      this.stragglers = workload.stragglers;
      this.phases = workload.phases;
      this.connections = workload.connections;
      this.instance = workload.instance;
      this.reportEvery = workload.reportEvery;
    }

    private Workload build() {
      return new Workload(
          this.name,
          this.description,
          this.referenceRate,
          this.baseRate,
          this.burstMultiplier,
          this.burstPeriodSeconds,
          this.burstLengthSeconds,
          this.threads,
          this.degradeMillis,
          this.variants,
          this.closedLoop,
          this.channels,
          this.trailersDelayMs,
          this.fault,
          this.deadlineMs,
          this.serviceMs,
          this.warmUp,
          this.jdbc,
          this.stragglers,
          this.phases,
          this.connections,
          this.instance,
          this.reportEvery);
    }
  }
}
