package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/** One variant's figures on one workload, summed over its windows (one per round). */
final class VariantTally {

  static final long[] BUCKET_BOUNDS_MS = {4, 6, 10, 50, 100};

  /** How long the window is over which a recovered connection's share is judged. */
  static final long RECOVERY_WINDOW_MS = 500;

  private final Variant variant;

  private final int channels;

  /**
   * Whether the client's pool was grpc-gcp's dynamic pool: an even share is then over the
   * connections that carried calls, not over a fixed size.
   */
  private final boolean dynamic;

  private final Histogram latency = new Histogram(3);

  /** A mixed workload's reports, apart from the point selects' latency; empty elsewhere. */
  private final Histogram reports = new Histogram(3);

  private final Histogram[] series;

  private long ops;

  private long errors;

  private long unsent;

  private String firstError;

  private ProcessMeters.Reading cost = ProcessMeters.ZERO;

  private long serverCancels;

  private long serverCpuNanos;

  private int serverCores;

  private long wallNanos;

  private int maxQueued;

  private long rstStreams = -1;

  private long goAways = -1;

  private long goAwaysForResets = -1;

  private long cancelledAtLimit;

  /** Streaming calls that reached the frontend: queries, and hedges of them. */
  private long serverCalls;

  /** Calls the frontend made late as stragglers. */
  private long lateCalls;

  /**
   * Hedges sent, won, denied, and losers cancelled; {@code null} for a variant that does not hedge.
   */
  private long[] hedges;

  private final long[] sortedServerShares;

  private final List<Map<String, Object>> rounds = new ArrayList<>();

  private final long[] clientChannelCalls;

  /** Whether the starter's routing followed the dynamic pool; {@code null} on a fixed pool. */
  private Boolean routesOnDynamicPool;

  /**
   * On a frontend whose connections cost a set-up or age, its counts summed over the windows
   * ({@link SetUpWaits}, by its names); {@code null} elsewhere.
   */
  private Map<String, Long> connections;

  /** The fields of {@link SetUpWaits} summed into {@link #connections}. */
  static final List<String> CONNECTION_COUNTS =
      List.of(
          "calls",
          "primingCalls",
          "readsThatWaited",
          "primingThatWaited",
          "othersThatWaited",
          "connectionsSetUp");

  /**
   * @param channels the pool's size; on a dynamic pool, its largest
   */
  VariantTally(Variant variant, int channels, boolean dynamic, int seriesLength) {
    this.variant = variant;
    this.channels = channels;
    this.dynamic = dynamic;
    this.series = new Histogram[seriesLength];
    for (int i = 0; i < seriesLength; i++) {
      this.series[i] = new Histogram(2);
    }
    this.sortedServerShares = new long[channels];
    this.clientChannelCalls = new long[channels];
  }

  Variant variant() {
    return this.variant;
  }

  /** Adds one window: the client's measurements, its cost, and the server's counters. */
  void add(
      OpenLoop.Window window,
      ProcessMeters.Reading cost,
      JsonNode serverStats,
      long serverCpuNanos,
      long[] clientChannelDelta) {
    this.serverCpuNanos += serverCpuNanos;
    this.serverCores = serverStats.path("cores").asInt(Runtime.getRuntime().availableProcessors());
    this.wallNanos += window.wallNanos();
    this.maxQueued = Math.max(this.maxQueued, window.maxQueued());
    this.latency.add(window.latency());
    this.reports.add(window.reports());
    for (int i = 0; i < Math.min(this.series.length, window.series().length); i++) {
      this.series[i].add(window.series()[i]);
    }
    this.ops += window.ops();
    this.errors += window.errors();
    this.unsent += window.unsent();
    if (this.firstError == null) {
      this.firstError = window.firstError();
    }
    this.cost = this.cost.plus(cost);
    this.serverCancels += serverStats.path("serverCancels").asLong();
    this.serverCalls += serverStats.path("streamingCalls").asLong();
    this.lateCalls += serverStats.path("lateCalls").asLong();
    if (serverStats.has("rstStreams")) {
      this.rstStreams = Math.max(0, this.rstStreams) + serverStats.path("rstStreams").asLong();
      this.goAways = Math.max(0, this.goAways) + serverStats.path("goAways").asLong();
      this.goAwaysForResets =
          Math.max(0, this.goAwaysForResets) + serverStats.path("goAwaysForResets").asLong();
    }
    long[] perConnection = perConnection(serverStats);
    long[] sorted = perConnection.clone();
    Arrays.sort(sorted);
    for (int i = 0; i < this.channels && i < sorted.length; i++) {
      this.sortedServerShares[i] += sorted[sorted.length - 1 - i];
    }
    for (int i = 0; i < this.channels && i < clientChannelDelta.length; i++) {
      this.clientChannelCalls[i] += clientChannelDelta[i];
    }
    Map<String, Object> round = new LinkedHashMap<>();
    round.put("ops", window.ops());
    round.put("errors", window.errors());
    round.put("unsent", window.unsent());
    round.put(
        "opsPerSecond",
        (window.wallNanos() == 0) ? null : window.ops() / (window.wallNanos() / 1e9));
    round.put("p50Ms", ms(window.latency().getValueAtPercentile(50)));
    round.put("p90Ms", ms(window.latency().getValueAtPercentile(90)));
    round.put("p99Ms", ms(window.latency().getValueAtPercentile(99)));
    if (window.reports().getTotalCount() > 0) {
      round.put("reports", window.reports().getTotalCount());
      round.put("reportP50Ms", ms(window.reports().getValueAtPercentile(50)));
      round.put("reportP99Ms", ms(window.reports().getValueAtPercentile(99)));
    }
    round.put("cpuMsPer1000", perThousandMs(cost.cpuNanos(), window.queries()));
    round.put("frontendCpuMsPer1000", perThousandMs(serverCpuNanos, window.queries()));
    round.put("busiestOverMean", busiestOverMean(perConnection));
    round.put(
        "serverCallsPerQuery",
        perQuery(serverStats.path("streamingCalls").asLong(), window.queries()));
    round.put("rstStreams", serverStats.path("rstStreams").asLong(-1));
    round.put("goAways", serverStats.path("goAways").asLong(-1));
    String degraded = serverStats.path("degraded").asText(null);
    if (degraded != null) {
      long slow = serverStats.path("queriesPerConnection").path(degraded).asLong();
      long total = Arrays.stream(perConnection).sum();
      round.put(
          "degradedShareOfEven",
          (total == 0) ? null : slow / ((double) total / evenOver(perConnection)));
    }
    JsonNode faultArrivals = serverStats.path("faultArrivals");
    if (!faultArrivals.isMissingNode()) {
      faultFigures(round, faultArrivals);
    }
    JsonNode connections = serverStats.path("connections");
    if (!connections.isMissingNode()) {
      if (this.connections == null) {
        this.connections = new LinkedHashMap<>();
      }
      for (String key : CONNECTION_COUNTS) {
        this.connections.merge(key, connections.path(key).asLong(), Long::sum);
      }
      round.put("readsThatWaitedForSetUp", connections.path("readsThatWaited").asLong());
      round.put("primingCalls", connections.path("primingCalls").asLong());
      round.put("connectionsSetUp", connections.path("connectionsSetUp").asLong());
    }
    this.rounds.add(round);
  }

  /**
   * A new instance's figures in the round just added: from its client's build to ready, and the
   * latencies of its first stretch of load after ready and of its warm stretch.
   */
  void addInstance(double readyMs, Histogram first, Histogram warm) {
    Map<String, Object> round = this.rounds.get(this.rounds.size() - 1);
    round.put("readyMs", readyMs);
    round.put("firstOps", first.getTotalCount());
    round.put(
        "firstP99Ms", (first.getTotalCount() == 0) ? null : ms(first.getValueAtPercentile(99)));
    round.put("warmOps", warm.getTotalCount());
    round.put("warmP99Ms", (warm.getTotalCount() == 0) ? null : ms(warm.getValueAtPercentile(99)));
  }

  /**
   * A faulty connection's calls, counted where they arrived: its share of an even share after the
   * fault's grace period (a stalled connection's calls never reach the service, so the
   * per-connection query counts miss them), and for a connection that recovered, its share before
   * the recovery and how long after it the connection carried half of its even share again in a
   * {@link #RECOVERY_WINDOW_MS} window.
   */
  private void faultFigures(Map<String, Object> round, JsonNode arrivals) {
    long late = arrivals.path("afterGrace").asLong();
    long lateOnFaulty = arrivals.path("afterGraceOnFaulty").asLong();
    round.put("faultyArrivalsAfterGrace", lateOnFaulty);
    round.put("faultyShareOfEvenAfterGrace", evenShare(lateOnFaulty, late));
    JsonNode restoredAt = arrivals.path("restoredAtMs");
    if (!restoredAt.isNumber()) {
      return;
    }
    long bucketMs = arrivals.path("bucketMs").asLong();
    long[] all = longs(arrivals.path("all"));
    long[] faulty = longs(arrivals.path("faulty"));
    int restoredBucket = (int) Math.ceil(restoredAt.asDouble() / bucketMs);
    round.put(
        "faultyShareOfEvenBeforeRestore",
        evenShare(sum(faulty, 0, restoredBucket), sum(all, 0, restoredBucket)));
    int width = (int) (RECOVERY_WINDOW_MS / bucketMs);
    Double recovery = null;
    for (int from = restoredBucket; from + width <= all.length; from++) {
      Double share = evenShare(sum(faulty, from, from + width), sum(all, from, from + width));
      if (share != null && share >= 0.5) {
        recovery = ((from + width) * bucketMs - restoredAt.asDouble()) / 1000;
        break;
      }
    }
    round.put("recoverySeconds", recovery);
  }

  private Double evenShare(long onOne, long total) {
    return (total == 0) ? null : onOne / ((double) total / this.channels);
  }

  private static long[] longs(JsonNode array) {
    long[] values = new long[array.size()];
    for (int i = 0; i < values.length; i++) {
      values[i] = array.get(i).asLong();
    }
    return values;
  }

  private static long sum(long[] values, int from, int to) {
    long sum = 0;
    for (int i = Math.max(0, from); i < Math.min(to, values.length); i++) {
      sum += values[i];
    }
    return sum;
  }

  /** The machine's CPU steal, and other processes' CPU, over the round just added. */
  void addMachineCpu(MachineCpu.Share share) {
    Map<String, Object> round = this.rounds.get(this.rounds.size() - 1);
    round.put("stealPct", Double.isNaN(share.steal()) ? null : share.steal() * 100);
    round.put("othersCpuPct", Double.isNaN(share.others()) ? null : share.others() * 100);
  }

  /** Closes at last that the guard cancelled instead of drained, in one window. */
  void addCancelledAtLimit(long cancels) {
    this.cancelledAtLimit += cancels;
  }

  /** Hedges in the window just added: sent, won, denied, losers cancelled. */
  void addHedges(long[] window) {
    if (this.hedges == null) {
      this.hedges = new long[window.length];
    }
    for (int i = 0; i < window.length; i++) {
      this.hedges[i] += window[i];
    }
    Map<String, Object> round = this.rounds.get(this.rounds.size() - 1);
    round.put("hedgesSent", window[0]);
    round.put("hedgesWon", window[1]);
    round.put("hedgesDenied", window[2]);
  }

  private long[] perConnection(JsonNode serverStats) {
    List<Long> counts = new ArrayList<>();
    Iterator<JsonNode> values = serverStats.path("queriesPerConnection").elements();
    values.forEachRemaining((value) -> counts.add(value.asLong()));
    return counts.stream().mapToLong(Long::longValue).toArray();
  }

  /**
   * Busiest channel over the even share; on a fixed pool a channel that carried nothing counts as
   * 0.
   */
  private Double busiestOverMean(long[] perChannel) {
    long total = Arrays.stream(perChannel).sum();
    long max = Arrays.stream(perChannel).max().orElse(0);
    return (total == 0) ? null : max / ((double) total / evenOver(perChannel));
  }

  /**
   * How many channels an even share is taken over: the fixed pool's size, or on a dynamic pool the
   * channels that carried calls, as it removes some and adds others within a window.
   */
  private long evenOver(long[] perChannel) {
    return this.dynamic
        ? Math.max(1, Arrays.stream(perChannel).filter((count) -> count > 0).count())
        : this.channels;
  }

  /**
   * The dynamic pool's size over the round just added, sampled from its start at the series'
   * period.
   *
   * @param highEnd the sample at the end of a two-phase workload's high phase; -1 for none
   * @param routesOnDynamicPool whether the starter's routing followed the pool (false for stock)
   */
  void addPoolSizes(List<Integer> sizes, int highEnd, boolean routesOnDynamicPool) {
    this.routesOnDynamicPool = routesOnDynamicPool;
    Map<String, Object> round = this.rounds.get(this.rounds.size() - 1);
    round.put("poolSizes", sizes);
    round.put("poolAtStart", sizes.get(0));
    round.put("poolPeak", sizes.stream().mapToInt(Integer::intValue).max().orElse(0));
    if (highEnd >= 0) {
      round.put("poolAtEndOfHigh", sizes.get(Math.min(highEnd, sizes.size() - 1)));
    }
    round.put("poolLast", sizes.get(sizes.size() - 1));
    int step = 0;
    for (int i = 1; i < sizes.size(); i++) {
      step = Math.max(step, Math.abs(sizes.get(i) - sizes.get(i - 1)));
    }
    round.put("poolLargestStep", step);
  }

  Map<String, Object> toJson(double bucketSeconds) {
    long queries = this.ops + this.reports.getTotalCount() + this.errors;
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("variant", this.variant.label());
    if (this.dynamic) {
      json.put("pool", ClientPool.DYNAMIC);
      json.put("routesOnDynamicPool", this.routesOnDynamicPool);
    }
    json.put("ops", this.ops);
    json.put("errors", this.errors);
    json.put("unsent", this.unsent);
    json.put("firstError", this.firstError);
    json.put("opsPerSecond", (this.wallNanos == 0) ? null : this.ops / (this.wallNanos / 1e9));
    json.put("cancelledAtLimit", this.cancelledAtLimit);
    json.put("meanMs", (this.ops == 0) ? null : this.latency.getMean() / 1000.0);
    for (double p : new double[] {50, 90, 95, 99, 99.9}) {
      json.put("p" + percentileName(p) + "Ms", ms(this.latency.getValueAtPercentile(p)));
    }
    json.put("maxMs", ms(this.latency.getMaxValue()));
    if (this.reports.getTotalCount() > 0) {
      json.put("reports", this.reports.getTotalCount());
      json.put("reportP50Ms", ms(this.reports.getValueAtPercentile(50)));
      json.put("reportP99Ms", ms(this.reports.getValueAtPercentile(99)));
    }
    Map<String, Long> buckets = new LinkedHashMap<>();
    long lower = 0;
    for (long bound : BUCKET_BOUNDS_MS) {
      buckets.put(
          (lower == 0 ? "<" + bound : lower + "-" + bound),
          this.latency.getCountBetweenValues(lower * 1000, bound * 1000 - 1));
      lower = bound;
    }
    buckets.put(">" + lower, this.latency.getCountBetweenValues(lower * 1000, Long.MAX_VALUE / 2));
    json.put("bucketsMs", buckets);
    json.put("cpuMsPer1000", perThousandMs(this.cost.cpuNanos(), queries));
    int cores = Runtime.getRuntime().availableProcessors();
    json.put(
        "clientCpuBusy",
        (this.wallNanos == 0) ? null : (double) this.cost.cpuNanos() / this.wallNanos / cores);
    json.put("serverCpuMsPer1000", perThousandMs(this.serverCpuNanos, queries));
    json.put(
        "serverCpuBusy",
        (this.wallNanos == 0)
            ? null
            : (double) this.serverCpuNanos / this.wallNanos / this.serverCores);
    json.put("maxQueuedArrivals", this.maxQueued);
    json.put(
        "bytesPerQuery", (queries == 0) ? null : (double) this.cost.allocatedBytes() / queries);
    json.put(
        "throwablesPerQuery",
        (queries == 0 || this.cost.throwables() < 0)
            ? null
            : (double) this.cost.throwables() / queries);
    json.put(
        "serverCancelsPerQuery", (queries == 0) ? null : (double) this.serverCancels / queries);
    json.put("serverCalls", this.serverCalls);
    json.put("serverCallsPerQuery", perQuery(this.serverCalls, queries));
    json.put("lateCalls", this.lateCalls);
    if (this.hedges != null) {
      json.put("hedgesSent", this.hedges[0]);
      json.put("hedgesWon", this.hedges[1]);
      json.put("hedgesDenied", this.hedges[2]);
      json.put("hedgeLosersCancelled", this.hedges[3]);
      json.put("hedgesSentPerQuery", perQuery(this.hedges[0], queries));
    }
    json.put(
        "rstStreamsPerQuery",
        (queries == 0 || this.rstStreams < 0) ? null : (double) this.rstStreams / queries);
    json.put("goAways", (this.goAways < 0) ? null : this.goAways);
    json.put("goAwaysForResets", (this.goAwaysForResets < 0) ? null : this.goAwaysForResets);
    json.put("serverSharesSorted", shares(this.sortedServerShares));
    json.put("serverBusiestOverMean", busiestOverMean(this.sortedServerShares));
    json.put("clientChannelShares", shares(this.clientChannelCalls));
    json.put(
        "clientBusiestOverMean",
        Arrays.stream(this.clientChannelCalls).sum() == 0
            ? null
            : busiestOverMean(this.clientChannelCalls));
    if (this.connections != null) {
      this.connections.forEach(
          (key, count) ->
              json.put(key.equals("calls") ? "callsSeenByFrontend" : connectionKey(key), count));
      json.put(
          "primingShareOfCalls",
          (this.connections.get("calls") == 0)
              ? null
              : (double) this.connections.get("primingCalls") / this.connections.get("calls"));
    }
    json.put("rounds", this.rounds);
    List<Map<String, Object>> points = new ArrayList<>();
    for (int i = 0; i < this.series.length; i++) {
      Histogram bucket = this.series[i];
      Map<String, Object> point = new LinkedHashMap<>();
      point.put("t", i * bucketSeconds);
      point.put("count", bucket.getTotalCount());
      point.put(
          "p50Ms", (bucket.getTotalCount() == 0) ? null : ms(bucket.getValueAtPercentile(50)));
      point.put(
          "p99Ms", (bucket.getTotalCount() == 0) ? null : ms(bucket.getValueAtPercentile(99)));
      points.add(point);
    }
    json.put("series", points);
    return json;
  }

  /** A set-up count's name in the report: the reads and priming that waited say for what. */
  private static String connectionKey(String key) {
    return key.endsWith("ThatWaited") ? key + "ForSetUp" : key;
  }

  private static List<Double> shares(long[] counts) {
    long total = Arrays.stream(counts).sum();
    List<Double> shares = new ArrayList<>();
    for (long count : counts) {
      shares.add((total == 0) ? 0.0 : (double) count / total);
    }
    return shares;
  }

  private static String percentileName(double p) {
    return (p == Math.rint(p)) ? Integer.toString((int) p) : Double.toString(p).replace(".", "");
  }

  /** A number of ms as it was given: 200 rather than 200.0. */
  static String trim(double value) {
    return (value == Math.rint(value)) ? Long.toString((long) value) : Double.toString(value);
  }

  static double ms(long micros) {
    return micros / 1000.0;
  }

  private static Double perQuery(long count, long queries) {
    return (queries == 0) ? null : (double) count / queries;
  }

  private static Double perThousandMs(long nanos, long queries) {
    return (queries == 0) ? null : nanos / 1e6 / queries * 1000;
  }
}
