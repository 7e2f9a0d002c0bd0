package io.github.spannertuning.benchmarks;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    Instance instance) {

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
        null);
  }

  /** Closed-loop point selects from a number of threads. */
  static Workload closedLoop(
      String name,
      String description,
      int threads,
      int channels,
      double trailersDelayMs,
      List<Variant> variants) {
    return new Workload(
        name,
        description,
        0,
        0,
        1,
        1,
        0,
        threads,
        0,
        variants,
        true,
        channels,
        trailersDelayMs,
        Fault.NONE,
        0,
        null,
        true,
        false,
        null,
        null,
        null,
        null);
  }

  /** This workload with a fault on one connection, and each query's deadline. */
  Workload withFault(Fault fault, long degradeMillis, long deadlineMs) {
    return new Workload(
        this.name,
        this.description,
        this.referenceRate,
        this.baseRate,
        this.burstMultiplier,
        this.burstPeriodSeconds,
        this.burstLengthSeconds,
        this.threads,
        degradeMillis,
        this.variants,
        this.closedLoop,
        this.channels,
        this.trailersDelayMs,
        fault,
        deadlineMs,
        this.serviceMs,
        this.warmUp,
        this.jdbc,
        this.stragglers,
        this.phases,
        this.connections,
        this.instance);
  }

  /** The same shape under another name. */
  Workload named(String name, String description) {
    return new Workload(
        name,
        description,
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
        this.instance);
  }

  /** This workload on a fresh client, with the frontend taking this long per query. */
  Workload freshClient(double floorMs, double randomMs) {
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
        new double[] {floorMs, randomMs},
        false,
        this.jdbc,
        this.stragglers,
        this.phases,
        this.connections,
        this.instance);
  }

  /** This closed loop in two phases. */
  Workload withPhases(Phases phases) {
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
        phases,
        this.connections,
        this.instance);
  }

  /** The same workload, each point select sent through Google's JDBC driver. */
  Workload viaJdbc() {
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
        true,
        this.stragglers,
        this.phases,
        this.connections,
        this.instance);
  }

  /**
   * The same workload on a frontend where each call is, independently, {@code lateMs} late with
   * probability {@code share}.
   */
  Workload withStragglers(double share, double lateMs) {
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
        new double[] {share, lateMs},
        this.phases,
        this.connections,
        this.instance);
  }

  /** This workload on a frontend of its own, whose connections cost time and age. */
  Workload withConnections(Connections connections) {
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
        connections,
        this.instance);
  }

  /** This workload on a new instance per window, not warmed up by queries. */
  Workload freshInstance(Instance instance) {
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
        false,
        this.jdbc,
        this.stragglers,
        this.phases,
        this.connections,
        instance);
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
    return new Workload(
        this.name,
        this.description,
        this.referenceRate,
        rate,
        this.burstMultiplier,
        this.burstPeriodSeconds,
        this.burstLengthSeconds,
        threads,
        this.degradeMillis,
        variants,
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
        this.instance);
  }

  double scale() {
    return this.baseRate / this.referenceRate;
  }
}
