package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * Turns every {@code results-*.json} in a folder into {@code benchmarks.md} (tables shaped like the
 * reference results: stock, tuned, delta, then the other variants), {@code benchmarks.json} (all
 * client lines in one file) and {@code benchmarks.html} (inline SVG: latency percentiles over the
 * window with the bursts shaded, and each variant's per-channel load).
 */
public final class Report {

  private static final ObjectMapper json =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  static final String[] COLORS = {"#555555", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"};

  private Report() {}

  public static void main(String[] args) throws IOException {
    write(Paths.get(args.length > 0 ? args[0] : "target/benchmark-results"));
  }

  static void write(Path folder) throws IOException {
    // Newest client line first: the baseline.
    List<JsonNode> lines = new ArrayList<>(read(folder, "results-.*\\.json"));
    Collections.reverse(lines);
    List<JsonNode> jmh = new ArrayList<>();
    for (Path file : files(folder, "jmh-.*\\.json")) {
      ObjectNode run = json.createObjectNode();
      String name = file.getFileName().toString();
      run.put("client", name.substring(4, name.length() - 5));
      run.set("results", json.readTree(file.toFile()));
      jmh.add(run);
    }
    ObjectNode all = json.createObjectNode();
    ArrayNode array = all.putArray("lines");
    lines.forEach(array::add);
    ArrayNode micro = all.putArray("jmh");
    jmh.forEach(micro::add);
    json.writeValue(folder.resolve("benchmarks.json").toFile(), all);
    Files.writeString(
        folder.resolve("benchmarks.md"),
        markdown(lines) + targetsMarkdown(lines, jmh) + jmhMarkdown(jmh),
        StandardCharsets.UTF_8);
    Files.writeString(folder.resolve("benchmarks.html"), html(lines), StandardCharsets.UTF_8);
  }

  private static List<Path> files(Path folder, String pattern) throws IOException {
    try (Stream<Path> files = Files.list(folder)) {
      return files
          .filter((path) -> path.getFileName().toString().matches(pattern))
          .sorted()
          .toList();
    }
  }

  private static List<JsonNode> read(Path folder, String pattern) throws IOException {
    List<JsonNode> read = new ArrayList<>();
    for (Path file : files(folder, pattern)) {
      read.add(json.readTree(file.toFile()));
    }
    return read;
  }

  /** The targets, each with what this run measured against it, per client line. */
  static String targetsMarkdown(List<JsonNode> lines, List<JsonNode> jmh) {
    if (lines.isEmpty()) {
      return "";
    }
    StringBuilder md = new StringBuilder("\n## Targets\n\n| target |");
    lines.forEach((line) -> md.append(' ').append(client(line)).append(" |"));
    md.append("\n|---|").append("---|".repeat(lines.size())).append('\n');
    target(
        md,
        lines,
        "tuned throwables / query at most 0.2 (stock beside it), per workload",
        (line) ->
            perWorkload(
                line,
                (w) ->
                    fmt(path(w, "tuned", "throwablesPerQuery"), 2)
                        + " (stock "
                        + fmt(path(w, "stock", "throwablesPerQuery"), 2)
                        + ")"));
    target(
        md,
        lines,
        "RST_STREAM sent / query, tuned (stock)",
        (line) ->
            perWorkload(
                line,
                (w) ->
                    fmt(path(w, "tuned", "rstStreamsPerQuery"), 2)
                        + " ("
                        + fmt(path(w, "stock", "rstStreamsPerQuery"), 2)
                        + ")"));
    target(
        md,
        lines,
        "GOAWAYs received: 0 for tuned (stock)",
        (line) ->
            perWorkload(
                line,
                (w) -> {
                  // Where the frontend retires connections, each retirement is a GOAWAY: only
                  // those for resets are the client's.
                  String key = w.has("noRetirement") ? "goAwaysForResets" : "goAways";
                  return (w.has("noRetirement") ? "for resets " : "")
                      + path(w, "tuned", key).asText("n/a")
                      + " ("
                      + path(w, "stock", key).asText("n/a")
                      + ")";
                }));
    target(
        md,
        lines,
        "goal: bytes / query at least 15% fewer (tuned / stock)",
        (line) ->
            perWorkload(
                line,
                (w) ->
                    ratio(path(w, "stock", "bytesPerQuery"), path(w, "tuned", "bytesPerQuery"))));
    target(
        md,
        lines,
        "client CPU / query: tuned no more than stock; goal 10% less (tuned / stock)",
        (line) ->
            perWorkload(
                line,
                (w) -> ratio(path(w, "stock", "cpuMsPer1000"), path(w, "tuned", "cpuMsPer1000"))));
    target(
        md,
        lines,
        "healthy workloads: P50 and P99 within 5% of stock or better (tuned / stock)",
        HEALTHY,
        (line) ->
            String.join(
                "; ",
                HEALTHY.stream()
                    .map(
                        (name) ->
                            name
                                + " "
                                + ratio(
                                    path(workload(line, name), "stock", "p50Ms"),
                                    path(workload(line, name), "tuned", "p50Ms"))
                                + ", "
                                + ratio(
                                    path(workload(line, name), "stock", "p99Ms"),
                                    path(workload(line, name), "tuned", "p99Ms")))
                    .toList()));
    target(
        md,
        lines,
        "goal: spiky P99 ratio 0.3 (tuned / stock)",
        List.of("spiky"),
        (line) ->
            ratio(
                path(workload(line, "spiky"), "stock", "p99Ms"),
                path(workload(line, "spiky"), "tuned", "p99Ms")));
    target(
        md,
        lines,
        "goal: bursty P90 ratio 0.25 (tuned / stock)",
        List.of("bursty"),
        (line) ->
            ratio(
                path(workload(line, "bursty"), "stock", "p90Ms"),
                path(workload(line, "bursty"), "tuned", "p90Ms")));
    boolean dynamic = lines.stream().anyMatch(Report::dynamicPool);
    target(
        md,
        lines,
        dynamic
            ? "degraded on the dynamic pool: P99 at most 0.45x stock (tuned / stock)"
            : "degraded: P99 at most 0.5x, goal 0.35x (tuned / stock)",
        List.of("degraded"),
        (line) ->
            ratio(
                path(workload(line, "degraded"), "stock", "p99Ms"),
                path(workload(line, "degraded"), "tuned", "p99Ms")));
    target(
        md,
        lines,
        "degraded: P90 not above stock's (tuned / stock)",
        List.of("degraded"),
        (line) ->
            ratio(
                path(workload(line, "degraded"), "stock", "p90Ms"),
                path(workload(line, "degraded"), "tuned", "p90Ms")));
    target(
        md,
        lines,
        "degraded: slowed connection's share of its even share, tuned (stock), per round",
        List.of("degraded"),
        (line) ->
            roundsOf(workload(line, "degraded"), "tuned", "degradedShareOfEven")
                + " ("
                + roundsOf(workload(line, "degraded"), "stock", "degradedShareOfEven")
                + ")");
    target(
        md,
        lines,
        "stalled: reads sent to the stalled connection after its first 200 ms: 0,"
            + " tuned (stock), per round",
        List.of("stalled"),
        (line) ->
            roundsOf(workload(line, "stalled"), "tuned", "faultyArrivalsAfterGrace")
                + " ("
                + roundsOf(workload(line, "stalled"), "stock", "faultyArrivalsAfterGrace")
                + ")");
    target(
        md,
        lines,
        "stalled: failed reads, tuned (stock)",
        List.of("stalled"),
        (line) ->
            path(workload(line, "stalled"), "tuned", "errors").asText("n/a")
                + " ("
                + path(workload(line, "stalled"), "stock", "errors").asText("n/a")
                + ")");
    target(
        md,
        lines,
        "recovered: s until the connection carries half its even share again,"
            + " tuned (stock), per round",
        List.of("recovered"),
        (line) ->
            roundsOf(workload(line, "recovered"), "tuned", "recoverySeconds")
                + " ("
                + roundsOf(workload(line, "recovered"), "stock", "recoverySeconds")
                + ")");
    target(
        md,
        lines,
        "fresh client: at least 0.8 of ideal throughput, tuned (stock)",
        List.of("fresh-client"),
        (line) ->
            fmt(shareOfIdeal(workload(line, "fresh-client"), "tuned"), 2)
                + " ("
                + fmt(shareOfIdeal(workload(line, "fresh-client"), "stock"), 2)
                + ")");
    target(
        md,
        lines,
        "fresh client: P99 at most 2x the server time, no failed query, tuned (stock)",
        List.of("fresh-client"),
        (line) ->
            fmt(overServerTime(workload(line, "fresh-client"), "tuned"), 2)
                + "x, "
                + path(workload(line, "fresh-client"), "tuned", "errors").asText("n/a")
                + " failed ("
                + fmt(overServerTime(workload(line, "fresh-client"), "stock"), 2)
                + "x, "
                + path(workload(line, "fresh-client"), "stock", "errors").asText("n/a")
                + " failed)");
    target(
        md,
        lines,
        "imbalance that remains: spiky P99, tuned / round robin (busiest/mean tuned, round robin)",
        List.of("spiky"),
        (line) ->
            ratio(
                    path(workload(line, "spiky"), "round robin", "p99Ms"),
                    path(workload(line, "spiky"), "tuned", "p99Ms"))
                + " ("
                + fmt(path(workload(line, "spiky"), "tuned", "serverBusiestOverMean"), 2)
                + ", "
                + fmt(path(workload(line, "spiky"), "round robin", "serverBusiestOverMean"), 2)
                + ")");
    hedgingTargets(md, lines);
    growShrinkTarget(md, lines);
    WarmUpReport.targets(md, lines);
    md.append(
        "\nTargets on transactional overhead (under 300 ns and 100 B per call) are in the JMH"
            + " table below.\n");
    return md.toString();
  }

  /** The variant the hedging targets are read on: the starter's defaults with hedging on. */
  static final String HEDGED = "tuned + hedging";

  /** Hedged reads' targets (issue 35): the benchmark's, then the test bounds as figures. */
  private static void hedgingTargets(StringBuilder md, List<JsonNode> lines) {
    String stragglers = BenchmarkMain.STRAGGLERS;
    String outage = BenchmarkMain.STRAGGLERS_OUTAGE;
    boolean hedged =
        lines.stream()
            .anyMatch(
                (line) ->
                    Stream.of(stragglers, outage)
                        .map((name) -> workload(line, name))
                        .anyMatch((w) -> w != null && variant(w, HEDGED) != null));
    if (!hedged) {
      return;
    }
    target(
        md,
        lines,
        lines.stream().anyMatch(Report::dynamicPool)
            ? "stragglers on the dynamic pool: P99 at most 0.30x stock, tuned + hedging / stock"
                + " (stock -> tuned + hedging, ms)"
            : "stragglers: P99 at most 0.30x stock on 6.127, tuned + hedging / stock (stock -> tuned"
                + " + hedging, ms)",
        List.of(stragglers),
        (line) -> ratioWithFigures(workload(line, stragglers), "stock", HEDGED, "p99Ms"));
    target(
        md,
        lines,
        "stragglers: P99 at most 0.35x tuned, tuned + hedging / tuned (tuned -> tuned + hedging,"
            + " ms)",
        List.of(stragglers),
        (line) -> ratioWithFigures(workload(line, stragglers), "tuned", HEDGED, "p99Ms"));
    target(
        md,
        lines,
        "stragglers: P50 within 1.1x tuned, tuned + hedging / tuned",
        List.of(stragglers),
        (line) ->
            ratio(
                path(workload(line, stragglers), "tuned", "p50Ms"),
                path(workload(line, stragglers), HEDGED, "p50Ms")));
    target(
        md,
        lines,
        "stragglers: server calls / query at most 1.06, tuned + hedging (tuned, stock)",
        List.of(stragglers),
        (line) -> callsPerQuery(workload(line, stragglers)));
    target(
        md,
        lines,
        "stragglers: failed queries 0, tuned + hedging (tuned, stock)",
        List.of(stragglers),
        (line) -> threeVariants(workload(line, stragglers), "errors"));
    target(
        md,
        lines,
        "outage: server calls / query at most 1 + max-extra + 0.01 = 1.06, tuned + hedging (tuned,"
            + " stock)",
        List.of(outage),
        (line) -> callsPerQuery(workload(line, outage)));
    target(
        md,
        lines,
        "outage: P99 at most 1.05x tuned, tuned + hedging / tuned (tuned -> tuned + hedging, ms)",
        List.of(outage),
        (line) -> ratioWithFigures(workload(line, outage), "tuned", HEDGED, "p99Ms"));
    target(
        md,
        lines,
        "stragglers and outage: GOAWAY received, tuned + hedging (tuned, stock)",
        List.of(stragglers, outage),
        (line) ->
            String.join(
                "; ",
                Stream.of(stragglers, outage)
                    .filter((name) -> workload(line, name) != null)
                    .map((name) -> name + " " + threeVariants(workload(line, name), "goAways"))
                    .toList()));
  }

  /**
   * The dynamic pool grows and shrinks at the load where stock's does: per round, each variant's
   * peak, its size at the end of the high phase and its size at the end of the window, within one
   * of the pool's steps (the largest change between two of stock's samples, at least 1) of stock's.
   */
  private static void growShrinkTarget(StringBuilder md, List<JsonNode> lines) {
    String name = BenchmarkMain.GROW_SHRINK;
    target(
        md,
        lines,
        "grow-shrink: pool's peak / size as the high phase ends / size at the end, within one"
            + " step of stock's, per round (stock's sizes and step; each variant's, and its"
            + " difference from stock's)",
        List.of(name),
        (line) -> withinOneStep(workload(line, name)));
  }

  /** Per round: whether every variant's pool kept within one of stock's steps, with the sizes. */
  static String withinOneStep(JsonNode workload) {
    JsonNode stock = (workload == null) ? null : variant(workload, "stock");
    if (stock == null) {
      return "n/a";
    }
    List<String> rounds = new ArrayList<>();
    for (int r = 0; r < stock.path("rounds").size(); r++) {
      JsonNode base = stock.path("rounds").get(r);
      int step = Math.max(1, base.path("poolLargestStep").asInt());
      boolean within = true;
      List<String> sizes = new ArrayList<>();
      for (JsonNode other : workload.path("variants")) {
        if (other == stock) {
          continue;
        }
        JsonNode round = other.path("rounds").path(r);
        List<String> differences = new ArrayList<>();
        for (String key : POOL_CHECKS) {
          int difference = round.path(key).asInt() - base.path(key).asInt();
          within &= Math.abs(difference) <= step;
          differences.add(String.format(Locale.ROOT, "%+d", difference));
        }
        sizes.add(
            other.path("variant").asText()
                + " "
                + poolTriple(round)
                + " ("
                + String.join("/", differences)
                + ")");
      }
      rounds.add(
          "r"
              + (r + 1)
              + " "
              + (within ? "yes" : "NO")
              + ": stock "
              + poolTriple(base)
              + " (step "
              + step
              + "), "
              + String.join(", ", sizes));
    }
    return String.join("; ", rounds);
  }

  /** The pool sizes the grow-and-shrink check compares. */
  private static final List<String> POOL_CHECKS =
      List.of("poolPeak", "poolAtEndOfHigh", "poolLast");

  private static String poolTriple(JsonNode round) {
    return POOL_CHECKS.stream()
        .map((key) -> round.path(key).asText("n/a"))
        .reduce((a, b) -> a + "/" + b)
        .orElse("");
  }

  /** Whether a client line's run was on grpc-gcp's dynamic pool. */
  static boolean dynamicPool(JsonNode line) {
    return line.path("pool").path("kind").asText().equals(ClientPool.DYNAMIC);
  }

  /** The run's pool, for the report's first lines. */
  static String poolDescription(JsonNode line) {
    JsonNode pool = line.path("pool");
    if (pool.isMissingNode()) {
      return "";
    }
    if (!dynamicPool(line)) {
      return "grpc-gcp's fixed pool of " + pool.path("channels").asText() + " channels";
    }
    StringBuilder text =
        new StringBuilder("grpc-gcp's dynamic pool (`--pool dynamic`), Spanner's defaults: ")
            .append(pool.path("initSize").asText())
            .append(" channels to start, ")
            .append(pool.path("minSize").asText())
            .append(" to ")
            .append(pool.path("maxSize").asText())
            .append(", one added past ")
            .append(pool.path("maxRpcPerChannel").asText())
            .append(" calls in flight per channel, removed below ")
            .append(pool.path("minRpcPerChannel").asText())
            .append(" per channel");
    if (pool.has("scaleDownConsecutiveLowLoadChecks")) {
      text.append(" (")
          .append(pool.path("scaleDownConsecutiveLowLoadChecks").asText())
          .append(" checks in a row, at most ")
          .append(pool.path("maxScaleDownChannels").asText())
          .append(" at a time)");
    }
    text.append("; shortened so that a window sees it scale: scale-down interval ")
        .append(seconds(pool, "scaleDownIntervalS"))
        .append(" (production ")
        .append(seconds(pool, "productionScaleDownIntervalS"))
        .append(")");
    if (pool.has("scaleUpCooldownS")) {
      text.append(", scale-up cooldown ")
          .append(seconds(pool, "scaleUpCooldownS"))
          .append(" (production ")
          .append(seconds(pool, "productionScaleUpCooldownS"))
          .append("), a removed idle channel closed after ")
          .append(seconds(pool, "drainIdleGraceS"))
          .append(" (production ")
          .append(seconds(pool, "productionDrainIdleGraceS"))
          .append(")");
    } else {
      text.append("; this grpc-gcp has no scale-up cooldown or drain grace to set");
    }
    return text.append(". These shortened settings are grow-shrink's; every other workload runs")
        .append(" on Spanner's own (a scale-down every ")
        .append(seconds(pool, "productionScaleDownIntervalS"))
        .append("), which no window of seconds sees. `--channels` does not apply.")
        .toString();
  }

  private static String seconds(JsonNode pool, String key) {
    double value = pool.path(key).asDouble();
    return (value >= 60 && value % 60 == 0)
        ? fmt(value / 60, 0) + " min"
        : VariantTally.trim(value) + " s";
  }

  /** A ratio of one figure of two variants, with the figures: {@code x0.25 (40.00 -> 10.00)}. */
  private static String ratioWithFigures(JsonNode workload, String from, String to, String key) {
    return ratio(path(workload, from, key), path(workload, to, key))
        + " ("
        + fmt(path(workload, from, key), 2)
        + " -> "
        + fmt(path(workload, to, key), 2)
        + ")";
  }

  private static String callsPerQuery(JsonNode workload) {
    return fmt(path(workload, HEDGED, "serverCallsPerQuery"), 3)
        + " ("
        + fmt(path(workload, "tuned", "serverCallsPerQuery"), 3)
        + ", "
        + fmt(path(workload, "stock", "serverCallsPerQuery"), 3)
        + ")";
  }

  private static String threeVariants(JsonNode workload, String key) {
    return path(workload, HEDGED, key).asText("n/a")
        + " ("
        + path(workload, "tuned", key).asText("n/a")
        + ", "
        + path(workload, "stock", key).asText("n/a")
        + ")";
  }

  /**
   * Each hedging variant beside stock and tuned, per client line and workload: latency, the calls
   * that reached the frontend, resets and GOAWAYs, failures and the hedges themselves. Empty when
   * no variant hedged.
   */
  static String hedgingHeadline(List<JsonNode> lines) {
    StringBuilder rows = new StringBuilder();
    for (JsonNode results : lines) {
      for (JsonNode workload : results.path("workloads")) {
        JsonNode stock = variant(workload, "stock");
        JsonNode tuned = variant(workload, "tuned");
        for (JsonNode hedged : workload.path("variants")) {
          if (!hedged.has("hedgesSent")) {
            continue;
          }
          rows.append("| ")
              .append(client(results))
              .append(" | ")
              .append(workload.path("name").asText())
              .append(" | ")
              .append(hedged.path("variant").asText());
          for (String key : new String[] {"p50Ms", "p99Ms", "p999Ms"}) {
            rows.append(" | ").append(three(stock, tuned, hedged, key, 2));
            if (key.equals("p99Ms")) {
              rows.append(" | ")
                  .append(ratio(field(stock, key), hedged.path(key)))
                  .append(" | ")
                  .append(ratio(field(tuned, key), hedged.path(key)));
            }
          }
          rows.append(" | ")
              .append(three(stock, tuned, hedged, "serverCallsPerQuery", 3))
              .append(" | ")
              .append(three(stock, tuned, hedged, "rstStreamsPerQuery", 2))
              .append(" | ")
              .append(threeText(stock, tuned, hedged, "goAways"))
              .append(" | ")
              .append(threeText(stock, tuned, hedged, "errors"))
              .append(" | ")
              .append(three(stock, tuned, hedged, "cpuMsPer1000", 0))
              .append(" | ")
              .append(hedged.path("hedgesSent").asText())
              .append(" / ")
              .append(hedged.path("hedgesWon").asText())
              .append(" / ")
              .append(hedged.path("hedgesDenied").asText())
              .append(" (")
              .append(pct(hedged.path("hedgesSentPerQuery").asDouble()))
              .append(" sent) |\n");
        }
      }
    }
    if (rows.length() == 0) {
      return "";
    }
    return "\n## Headline: hedged reads\n\n"
        + "Each figure is stock / tuned / the hedging variant. Server calls: streaming calls that"
        + " reached the frontend per query (a hedge is one more). Hedges: sent / won (the hedge"
        + " answered first) / denied (due, but over the budget), from the starter's own counts.\n\n"
        + "| client line | workload | variant | P50 (ms) | P99 (ms) | P99 / stock | P99 / tuned"
        + " | P99.9 (ms) | server calls / query | RST_STREAM sent / query | GOAWAY received"
        + " | failed queries | client CPU ms / 1000 queries | hedges sent / won / denied |\n"
        + "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        + rows;
  }

  /**
   * Where the report has no hedging variant, where to find one: the stragglers workloads are run
   * when named, and published on a page of their own.
   */
  static String hedgingPointer(List<JsonNode> lines) {
    for (JsonNode results : lines) {
      for (JsonNode workload : results.path("workloads")) {
        for (JsonNode variant : workload.path("variants")) {
          if (variant.has("hedgesSent")) {
            return "";
          }
        }
      }
    }
    return "\n## Hedged reads\n\n"
        + "Hedging is off by default and measured apart: the stragglers workloads (the spiky load on"
        + " a frontend where 2 % of calls are 50 ms late, and an outage where every call is) with"
        + " stock, tuned and tuned + hedging side by side, and the cost per read in JMH, are in"
        + " [benchmarks-hedging.md](benchmarks-hedging.md); the choice of the delay's percentile in"
        + " [benchmarks-hedging-delay.md](benchmarks-hedging-delay.md).\n";
  }

  private static JsonNode field(JsonNode variant, String key) {
    return (variant == null) ? MissingNode.getInstance() : variant.path(key);
  }

  private static String three(
      JsonNode stock, JsonNode tuned, JsonNode hedged, String key, int digits) {
    return fmt(field(stock, key), digits)
        + " / "
        + fmt(field(tuned, key), digits)
        + " / "
        + fmt(hedged.path(key), digits);
  }

  private static String threeText(JsonNode stock, JsonNode tuned, JsonNode hedged, String key) {
    return field(stock, key).asText("n/a")
        + " / "
        + field(tuned, key).asText("n/a")
        + " / "
        + hedged.path(key).asText("n/a");
  }

  /** The workloads without a faulty connection, on which tuned should cost nothing. */
  private static final List<String> HEALTHY = List.of("steady", "bursty", "spiky");

  /** Throughput over what the threads would reach if only the server's time counted. */
  static double shareOfIdeal(JsonNode workload, String variant) {
    double ideal = (workload == null) ? 0 : workload.path("idealQueriesPerSecond").asDouble();
    return (ideal == 0)
        ? Double.NaN
        : path(workload, variant, "opsPerSecond").asDouble(Double.NaN) / ideal;
  }

  /** P99 over the frontend's mean time per query. */
  static double overServerTime(JsonNode workload, String variant) {
    JsonNode service = (workload == null) ? MissingNode.getInstance() : workload.path("serviceMs");
    double mean = service.path(0).asDouble() + service.path(1).asDouble();
    return (mean == 0) ? Double.NaN : path(workload, variant, "p99Ms").asDouble(Double.NaN) / mean;
  }

  /** A target row, written only where some client line ran one of {@code workloads}. */
  static void target(
      StringBuilder md,
      List<JsonNode> lines,
      String name,
      List<String> workloads,
      Function<JsonNode, String> cell) {
    if (lines.stream()
        .anyMatch((line) -> workloads.stream().anyMatch((w) -> workload(line, w) != null))) {
      target(md, lines, name, cell);
    }
  }

  private static void target(
      StringBuilder md, List<JsonNode> lines, String name, Function<JsonNode, String> cell) {
    md.append("| ").append(name);
    lines.forEach((line) -> md.append(" | ").append(cell.apply(line)));
    md.append(" |\n");
  }

  private static String perWorkload(JsonNode line, Function<JsonNode, String> cell) {
    List<String> cells = new ArrayList<>();
    for (JsonNode workload : line.path("workloads")) {
      cells.add(workload.path("name").asText() + " " + cell.apply(workload));
    }
    return String.join("; ", cells);
  }

  static JsonNode workload(JsonNode line, String name) {
    for (JsonNode workload : line.path("workloads")) {
      if (workload.path("name").asText().equals(name)) {
        return workload;
      }
    }
    return null;
  }

  private static JsonNode path(JsonNode workload, String variant, String key) {
    JsonNode found = (workload == null) ? null : variant(workload, variant);
    return (found == null) ? MissingNode.getInstance() : found.path(key);
  }

  private static String roundsOf(JsonNode workload, String variant, String key) {
    JsonNode found = (workload == null) ? null : variant(workload, variant);
    return (found == null) ? "n/a" : perRound(found, key, 2);
  }

  /** JMH's per-benchmark results (its {@code -rf json} output), one file per client line. */
  static String jmhMarkdown(List<JsonNode> runs) {
    if (runs.isEmpty()) {
      return "";
    }
    StringBuilder md = new StringBuilder();
    md.append("\n## What the starter adds per query (JMH, `-prof gc`)\n");
    StringBuilder stream = new StringBuilder();
    for (JsonNode run : runs) {
      double[] channelStock = jmhScore(run, "channelStock", null, null);
      double[] channelCounted = jmhScore(run, "channelCounted", null, null);
      for (String request : new String[] {"single-use", "transaction"}) {
        for (String close : new String[] {"at-last", "after-end"}) {
          double[] streamStock = jmhScore(run, "streamStock", request, close);
          double[] streamTuned = jmhScore(run, "streamTuned", request, close);
          if (streamStock == null
              || streamTuned == null
              || channelStock == null
              || channelCounted == null) {
            continue;
          }
          double ns = (streamTuned[0] - streamStock[0]) + (channelCounted[0] - channelStock[0]);
          double bytes = (streamTuned[1] - streamStock[1]) + (channelCounted[1] - channelStock[1]);
          stream
              .append("| ")
              .append(run.path("client").asText())
              .append(" | ")
              .append(request)
              .append(" | ")
              .append(close)
              .append(" | ")
              .append(fmt(streamStock[0], 1))
              .append(" -> ")
              .append(fmt(streamTuned[0], 1))
              .append(" | ")
              .append(fmt(streamTuned[1] - streamStock[1], 0))
              .append(" | ")
              .append(fmt(channelStock[0], 1))
              .append(" -> ")
              .append(fmt(channelCounted[0], 1))
              .append(" | ")
              .append(fmt(channelCounted[1] - channelStock[1], 0))
              .append(" | ")
              .append(fmt(ns, 0))
              .append(" ns, ")
              .append(fmt(bytes, 0))
              .append(" B |\n");
        }
      }
    }
    if (stream.length() > 0) {
      md.append(
              "\nStream path (StarterOverheadBenchmark): request classification, routing and the"
                  + " guard's wrapper for one query (start, the row marked `last`, the end, the"
                  + " close: `at-last` closes before the trailers, as a point select does;"
                  + " `after-end` after them), against the same sequence on the bare call. Channel"
                  + " (ChannelLoadBenchmark): the load-counting interceptor around one gRPC call."
                  + " Added per query is the sum. What the guard saves is in the load tables"
                  + " above.\n\n")
          .append(
              "| client line | request | close | stream: stock -> tuned (ns) | stream: added B/op"
                  + " | channel: bare -> counted (ns) | channel: added B/op | added per query |\n")
          .append("|---|---|---|---|---|---|---|---|\n")
          .append(stream);
    }
    md.append(hedgingJmh(runs));
    md.append(observationsJmh(runs));
    StringBuilder experiment = new StringBuilder();
    for (JsonNode run : runs) {
      double[] idle = jmhScore(run, "noExperiment", null, null);
      double[] recording = jmhScore(run, "experimentRecording", null, null);
      if (idle != null && recording != null) {
        experiment
            .append("| ")
            .append(run.path("client").asText())
            .append(" | ")
            .append(fmt(idle[0], 1))
            .append(" ns, ")
            .append(fmt(idle[1], 0))
            .append(" B | ")
            .append(fmt(recording[0], 1))
            .append(" ns, ")
            .append(fmt(recording[1], 0))
            .append(" B |\n");
      }
    }
    if (experiment.length() > 0) {
      md.append(
              "\nSwitchback experiment (ExperimentBenchmark): one single-use query through the"
                  + " counting interceptor, on a client with no experiment and on one whose"
                  + " experiment is recording.\n\n")
          .append("| client line | no experiment | experiment recording |\n")
          .append("|---|---|---|\n")
          .append(experiment);
    }
    return md.toString();
  }

  /**
   * HedgingBenchmark: a single-use point select with hedging off and on, no hedge sent; and the
   * starter's side of one hedge sent (the same read with and without its hedge).
   */
  static String hedgingJmh(List<JsonNode> runs) {
    StringBuilder rows = new StringBuilder();
    for (JsonNode run : runs) {
      for (String close : new String[] {"at-last", "after-end"}) {
        double[] off = jmhScore(run, "readHedgingOff", null, close);
        double[] on = jmhScore(run, "readHedgingOn", null, close);
        double[] notSent = jmhScore(run, "hedgeNotSent", null, close);
        double[] sent = jmhScore(run, "hedgeSent", null, close);
        if (off == null || on == null || notSent == null || sent == null) {
          continue;
        }
        rows.append("| ")
            .append(run.path("client").asText())
            .append(" | ")
            .append(close)
            .append(" | ")
            .append(fmt(off[0], 1))
            .append(" -> ")
            .append(fmt(on[0], 1))
            .append(" | ")
            .append(fmt(off[1], 0))
            .append(" -> ")
            .append(fmt(on[1], 0))
            .append(" | ")
            .append(fmt(on[0] - off[0], 0))
            .append(" ns, ")
            .append(fmt(on[1] - off[1], 0))
            .append(" B | ")
            .append(fmt(sent[0] - notSent[0], 0))
            .append(" ns, ")
            .append(fmt(sent[1] - notSent[1], 0))
            .append(" B |\n");
      }
    }
    if (rows.length() == 0) {
      return "";
    }
    return "\nHedging (HedgingBenchmark): a single-use point select through the tuned stream path"
        + " with hedging off and on, answering at once, so that no hedge is sent (the delay is"
        + " learned, 1 ms here, its floor); and the starter's side of one hedge sent: its token, its"
        + " guarded stream, pick and context, and the loser's drain, on the same read with and"
        + " without its hedge. The second gRPC call itself (gax, grpc-java, Netty) is not in it:"
        + " that is in the load benchmark's bytes / hedge sent. No lock is taken on the path of a"
        + " read that is not hedged (see the benchmark's Javadoc).\n\n"
        + "| client line | close | ns: hedging off -> on | B/op: off -> on"
        + " | added per read, no hedge sent | added per hedge sent |\n"
        + "|---|---|---|---|---|---|\n"
        + rows;
  }

  /**
   * ObservationBenchmark: a point select's operation and attempt with no observer, observed on a
   * Prometheus registry through Micrometer's meter handler, and on {@code
   * ObservationRegistry.NOOP}; beside Micrometer's own two bare observations on the same registry.
   */
  static String observationsJmh(List<JsonNode> runs) {
    StringBuilder rows = new StringBuilder();
    for (JsonNode run : runs) {
      for (String observations : new String[] {"off", "on", "on-default-handler", "on-noop"}) {
        double[] call = observationScore(run, "pointSelect", observations);
        double[] bare = observationScore(run, "bareObservations", observations);
        if (call == null) {
          continue;
        }
        rows.append("| ")
            .append(run.path("client").asText())
            .append(" | ")
            .append(observations)
            .append(" | ")
            .append(fmt(call[0], 1))
            .append(" | ")
            .append(fmt(call[1], 0))
            .append(" | ")
            .append((bare == null || observations.equals("off")) ? "" : fmt(bare[0], 1))
            .append(" | ")
            .append((bare == null || observations.equals("off")) ? "" : fmt(bare[1], 0))
            .append(" |\n");
      }
    }
    if (rows.length() == 0) {
      return "";
    }
    return "\nObservations (ObservationBenchmark): one point select's observation work as the hooks"
        + " do it (its operation around a real ObservedStream, one attempt with its server-timing"
        + " read and parsed), with no observer (off), observed on a Prometheus registry as Boot"
        + " sets it up with the starter (on: the starter's SpannerCallMeterObservationHandler ahead"
        + " of Micrometer's DefaultMeterObservationHandler), with Micrometer's handler alone"
        + " (on-default-handler), and on ObservationRegistry.NOOP (on-noop); beside it, Micrometer's own floor on the same"
        + " registry: two bare observations with the same keys.\n\n"
        + "| client line | observations | ns/op | B/op | bare observations, ns/op | B/op |\n"
        + "|---|---|---|---|---|---|\n"
        + rows;
  }

  private static double[] observationScore(JsonNode run, String benchmark, String observations) {
    for (JsonNode result : run.path("results")) {
      if (result.path("benchmark").asText().endsWith("ObservationBenchmark." + benchmark)
          && result.path("params").path("observations").asText().equals(observations)) {
        return scoreOf(result);
      }
    }
    return null;
  }

  /** A JMH result's score (ns/op) and normalised allocation (B/op, NaN without -prof gc). */
  private static double[] scoreOf(JsonNode result) {
    JsonNode secondary = result.path("secondaryMetrics");
    JsonNode alloc =
        secondary.has("gc.alloc.rate.norm")
            ? secondary.path("gc.alloc.rate.norm")
            : secondary.path("\u00b7gc.alloc.rate.norm");
    return new double[] {
      result.path("primaryMetric").path("score").asDouble(),
      alloc.path("score").asDouble(Double.NaN)
    };
  }

  /** Score (ns/op) and normalised allocation (B/op) of one benchmark, or null. */
  private static double[] jmhScore(JsonNode run, String benchmark, String request, String close) {
    for (JsonNode result : run.path("results")) {
      JsonNode params = result.path("params");
      if (result.path("benchmark").asText().endsWith("." + benchmark)
          && (request == null || params.path("request").asText().equals(request))
          && (close == null || params.path("close").asText().equals(close))) {
        return scoreOf(result);
      }
    }
    return null;
  }

  static String line(JsonNode results) {
    return "google-cloud-spanner "
        + results.path("client").path("spanner").asText()
        + " + grpc-gcp "
        + results.path("client").path("grpcGcp").asText()
        + (dynamicPool(results) ? " (dynamic pool)" : "");
  }

  /**
   * A client line's column or row label: its google-cloud-spanner version, and its pool where that
   * is the dynamic one, as a report may hold a line's runs on both pools.
   */
  static String client(JsonNode results) {
    return results.path("client").path("spanner").asText()
        + (dynamicPool(results) ? " (dynamic pool)" : "");
  }

  // ---- markdown

  static String markdown(List<JsonNode> lines) {
    StringBuilder md = new StringBuilder();
    md.append("# spanner-tuning load benchmark\n\n");
    md.append(
        "Simulated frontend (its own JVM, loopback TCP): autoconfigure's MockSpannerServer, the"
            + " project's own Spanner service. Real: the Spanner client, gax, grpc-gcp, grpc-java,"
            + " Netty, TCP. Latency is measured from each query's scheduled (open-loop) start.\n\n");
    if (lines.isEmpty()) {
      return md.append("No results.\n").toString();
    }
    for (JsonNode results : lines) {
      md.append("- ")
          .append(line(results))
          .append(": started ")
          .append(results.path("started").asText())
          .append(", ")
          .append(fmt(results.path("durationSeconds").asDouble(), 0))
          .append(" s, ")
          .append(results.path("machine").path("cores").asText())
          .append(" cores")
          .append(
              results.path("machine").has("cpu")
                  ? " (" + results.path("machine").path("cpu").asText() + ")"
                  : "")
          .append(", ")
          .append(results.path("machine").path("java").asText())
          .append("\n");
    }
    JsonNode first = lines.get(0);
    md.append("\nCommand: `")
        .append(first.path("flags").path("command").asText())
        .append("`\n\nAll flags, as used: `");
    first
        .path("flags")
        .fields()
        .forEachRemaining(
            (entry) -> {
              if (!entry.getKey().equals("command") && !entry.getKey().equals("out")) {
                md.append("--")
                    .append(entry.getKey())
                    .append(' ')
                    .append(entry.getValue().asText())
                    .append(' ');
              }
            });
    md.append("`\n\n");
    for (JsonNode results : lines) {
      String pool = poolDescription(results);
      if (!pool.isEmpty()) {
        md.append("Channel pool, ")
            .append(results.path("client").path("spanner").asText())
            .append(": ")
            .append(pool)
            .append("\n\n");
      }
    }
    md.append("Frontend model: ");
    first
        .path("frontend")
        .fields()
        .forEachRemaining(
            (entry) ->
                md.append(entry.getKey())
                    .append(" = ")
                    .append(entry.getValue().asText())
                    .append("; "));
    md.append(
        "\n\n## Scale\n\n| workload | reference | here | scale | bursts | client threads | windows |\n|---|---|---|---|---|---|---|\n");
    for (JsonNode workload : first.path("workloads")) {
      if (workload.path("closedLoop").asBoolean()) {
        continue;
      }
      md.append("| ")
          .append(workload.path("name").asText())
          .append(" | ")
          .append(fmt(workload.path("referenceRate").asDouble(), 0))
          .append("/s")
          .append(" | ")
          .append(fmt(workload.path("baseRate").asDouble(), 0))
          .append("/s")
          .append(" | ")
          .append(fmt(workload.path("scale").asDouble(), 3))
          .append(" | ")
          .append(bursts(workload))
          .append(" | ")
          .append(workload.path("threads").asText())
          .append(faultNote(workload))
          .append(" | ")
          .append(workload.path("rounds").asText())
          .append(" x ")
          .append(fmt(workload.path("windowS").asDouble(), 0))
          .append(" s per variant |\n");
    }
    md.append(CpuLimitedReport.headline(lines));
    md.append("\n## Headline: tuned / stock\n\n")
        .append(
            "| client line | workload | P50 | P90 | P99 | CPU / query | bytes / query | throwables / query | RST_STREAM sent / query | GOAWAY received | busiest / mean (server) |\n")
        .append("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (JsonNode results : lines) {
      for (JsonNode workload : results.path("workloads")) {
        JsonNode stock = variant(workload, "stock");
        JsonNode tuned = variant(workload, "tuned");
        if (stock == null || tuned == null) {
          continue;
        }
        md.append("| ")
            .append(client(results))
            .append(" | ")
            .append(workload.path("name").asText());
        for (String key : new String[] {"p50Ms", "p90Ms", "p99Ms"}) {
          md.append(" | ").append(pair(stock.path(key), tuned.path(key), 2));
        }
        md.append(" | ")
            .append(pair(stock.path("cpuMsPer1000"), tuned.path("cpuMsPer1000"), 0))
            .append(" ms/1000");
        md.append(" | ").append(pair(stock.path("bytesPerQuery"), tuned.path("bytesPerQuery"), 0));
        md.append(" | ")
            .append(fmt(stock.path("throwablesPerQuery"), 2))
            .append(" -> ")
            .append(fmt(tuned.path("throwablesPerQuery"), 2))
            .append(" | ")
            .append(fmt(stock.path("rstStreamsPerQuery"), 2))
            .append(" -> ")
            .append(fmt(tuned.path("rstStreamsPerQuery"), 2))
            .append(" | ")
            .append(stock.path("goAways").asText("n/a"))
            .append(" -> ")
            .append(tuned.path("goAways").asText("n/a"))
            .append(" | ")
            .append(fmt(stock.path("serverBusiestOverMean"), 2))
            .append(" -> ")
            .append(fmt(tuned.path("serverBusiestOverMean"), 2))
            .append(" |\n");
      }
    }
    md.append(dynamicPoolHeadline(lines))
        .append(WarmUpReport.headline(lines))
        .append(hedgingHeadline(lines))
        .append(hedgingPointer(lines));
    for (JsonNode results : lines) {
      md.append("\n## ")
          .append(line(results))
          .append("\n\n### Floor (one query at a time, idle)\n\n")
          .append("| | mean | P50 | P99 | max |\n|---|---|---|---|---|\n");
      results
          .path("floor")
          .fields()
          .forEachRemaining(
              (entry) ->
                  md.append("| ")
                      .append(entry.getKey())
                      .append(" | ")
                      .append(fmt(entry.getValue().path("meanMs"), 2))
                      .append(" | ")
                      .append(fmt(entry.getValue().path("p50Ms"), 2))
                      .append(" | ")
                      .append(fmt(entry.getValue().path("p99Ms"), 2))
                      .append(" | ")
                      .append(fmt(entry.getValue().path("maxMs"), 2))
                      .append(" |\n"));
      for (JsonNode workload : results.path("workloads")) {
        if (workload.path("closedLoop").asBoolean()) {
          md.append("\n### ")
              .append(workload.path("description").asText())
              .append(" (")
              .append(workload.path("threads").asText())
              .append(" threads, ")
              .append(workload.path("rounds").asText())
              .append(" x ")
              .append(fmt(workload.path("windowS").asDouble(), 0))
              .append(" s per variant)\n\n");
        } else {
          md.append("\n### ")
              .append(workload.path("description").asText())
              .append(" (")
              .append(fmt(workload.path("baseRate").asDouble(), 0))
              .append("/s, ")
              .append(bursts(workload))
              .append(", ")
              .append(workload.path("threads").asText())
              .append(" threads)\n\n");
        }
        table(md, workload);
        WarmUpReport.section(md, workload);
        poolSizes(md, workload);
      }
      CpuLimitedReport.section(md, results);
    }
    md.append(
        "\nMs are milliseconds; \"delta\" is tuned against stock. Throwables: JFR"
            + " jdk.ExceptionStatistics over the client JVM, including the stack traces that Netty's"
            + " leak detector (on by default) samples from buffer allocations, which every variant pays; n/a where JFR"
            + " delivered no sample within 5 s of a window's end (its periodic events can starve on a saturated core)."
            + " Bytes: per-thread allocation counters"
            + " (com.sun.management.ThreadMXBean) summed over the threads alive at the window's end. CPU: the client process's"
            + " CPU time. RST_STREAM and GOAWAY: frames counted on the wire by a loopback proxy in front of the"
            + " server; cancels seen by server: streams still open on the server when the reset came. Busiest / mean: the"
            + " busiest connection's point selects over an even share of the pool, counted by the"
            + " server per TCP connection; client-counted: by the starter's channel counter. Where a ratio falls short, the saturation"
            + " rows say which side ran out: client and frontend CPU busy (process CPU time over the"
            + " window's wall time and the cores the process may use; unless the client is CPU-limited, the two JVMs share the machine's cores), and arrivals"
            + " queued for want of a free client thread.\n");
    return md.toString();
  }

  /**
   * Each variant on the dynamic pool beside stock, per client line and workload: the latency, the
   * failed queries and the pool's size. Empty when no line ran on the dynamic pool.
   */
  static String dynamicPoolHeadline(List<JsonNode> lines) {
    StringBuilder rows = new StringBuilder();
    for (JsonNode results : lines) {
      if (!dynamicPool(results)) {
        continue;
      }
      for (JsonNode workload : results.path("workloads")) {
        JsonNode stock = variant(workload, "stock");
        for (JsonNode variant : workload.path("variants")) {
          rows.append("| ")
              .append(results.path("client").path("spanner").asText())
              .append(" | ")
              .append(workload.path("name").asText())
              .append(" | ")
              .append(variant.path("variant").asText())
              .append(" | ")
              .append(fmt(variant.path("p50Ms"), 2))
              .append(" | ")
              .append(fmt(variant.path("p99Ms"), 2))
              .append(" | ")
              .append(ratio(field(stock, "p50Ms"), variant.path("p50Ms")))
              .append(" | ")
              .append(ratio(field(stock, "p99Ms"), variant.path("p99Ms")))
              .append(" | ")
              .append(fmt(variant.path("p999Ms"), 2))
              .append(" | ")
              .append(variant.path("errors").asText("n/a"))
              .append(" | ")
              .append(poolPerRound(variant))
              .append(" |\n");
        }
      }
    }
    if (rows.length() == 0) {
      return "";
    }
    return "\n## Headline: dynamic channel pool\n\n"
        + "Every variant on grpc-gcp's dynamic pool, its ratios over stock on the same pool."
        + " Latency pooled over the rounds. Pool: its size as grpc-gcp counts it at the window's"
        + " start, its peak and at the window's end, per round; every size, a sample each "
        + "bucket, is in the tables below each workload.\n\n"
        + "| client line | workload | variant | P50 (ms) | P99 (ms) | P50 / stock | P99 / stock"
        + " | P99.9 (ms) | failed queries | pool: start / peak / end, per round |\n"
        + "|---|---|---|---|---|---|---|---|---|---|\n"
        + rows;
  }

  /** The pool's size at a window's start, its peak and at its end, per round. */
  static String poolPerRound(JsonNode variant) {
    List<String> rounds = new ArrayList<>();
    variant
        .path("rounds")
        .forEach(
            (round) ->
                rounds.add(
                    round.path("poolAtStart").asText("n/a")
                        + " / "
                        + round.path("poolPeak").asText("n/a")
                        + " / "
                        + round.path("poolLast").asText("n/a")));
    return String.join(", ", rounds);
  }

  /**
   * A dynamic-pool workload's pool size over each window, one line per variant and round, one
   * sample per series bucket; nothing on a fixed pool.
   */
  static void poolSizes(StringBuilder md, JsonNode workload) {
    if (!workload.path("pool").asText().equals(ClientPool.DYNAMIC)) {
      return;
    }
    boolean phases = workload.has("phases");
    md.append("\nPool size every ")
        .append(VariantTally.trim(workload.path("poolSampleS").asDouble()))
        .append(" s from the window's start, as grpc-gcp counts its channels");
    if (phases) {
      md.append(" (")
          .append(workload.path("phases").path("highThreads").asText())
          .append(" threads until ")
          .append(VariantTally.trim(workload.path("phases").path("highS").asDouble()))
          .append(" s, then ")
          .append(workload.path("phases").path("lowThreads").asText())
          .append(")");
    }
    md.append(":\n\n| variant | round | start / peak")
        .append(phases ? " / as the high phase ends" : "")
        .append(" / end | largest step | sizes |\n|---|---|---|---|---|\n");
    for (JsonNode variant : workload.path("variants")) {
      int r = 0;
      for (JsonNode round : variant.path("rounds")) {
        List<String> sizes = new ArrayList<>();
        round.path("poolSizes").forEach((size) -> sizes.add(size.asText()));
        md.append("| ")
            .append(variant.path("variant").asText())
            .append(" | ")
            .append(++r)
            .append(" | ")
            .append(round.path("poolAtStart").asText("n/a"))
            .append(" / ")
            .append(round.path("poolPeak").asText("n/a"))
            .append(phases ? " / " + round.path("poolAtEndOfHigh").asText("n/a") : "")
            .append(" / ")
            .append(round.path("poolLast").asText("n/a"))
            .append(" | ")
            .append(round.path("poolLargestStep").asText("n/a"))
            .append(" | ")
            .append(String.join(" ", sizes))
            .append(" |\n");
      }
    }
    if (phases) {
      md.append("\nWithin one of stock's steps, per round: ")
          .append(withinOneStep(workload))
          .append("\n");
    }
  }

  /** What the workload does to one connection, for the scale table. */
  private static String faultNote(JsonNode workload) {
    String slowed = "one connection +" + workload.path("degradeMs").asText() + " ms";
    String deadline =
        workload.has("deadlineMs")
            ? ", each query's deadline " + workload.path("deadlineMs").asText() + " ms"
            : "";
    if (workload.has("stragglers")) {
      JsonNode stragglers = workload.path("stragglers");
      double share = stragglers.path("share").asDouble();
      String late = fmt(stragglers.path("lateMs").asDouble(), 0) + " ms late";
      deadline +=
          (share >= 1)
              ? ", every call " + late
              : ", " + fmt(share * 100, 1) + " % of calls " + late + " (each independently)";
    }
    deadline += WarmUpReport.note(workload);
    if (workload.has("reportEvery")) {
      deadline += ", one query in " + workload.path("reportEvery").asText() + " a report";
    }
    return switch (workload
        .path("fault")
        .asText(workload.path("degradeMs").asLong() > 0 ? "slowed" : "none")) {
      case "slowed" -> ", " + slowed + deadline;
      case "recovered" -> ", " + slowed + " for the first half of each window" + deadline;
      case "stalled" -> ", the busiest connection stops answering" + deadline;
      default -> deadline;
    };
  }

  static void table(StringBuilder md, JsonNode workload) {
    List<JsonNode> variants = new ArrayList<>();
    workload.path("variants").forEach(variants::add);
    JsonNode stock = variant(workload, "stock");
    JsonNode tuned = variant(workload, "tuned");
    boolean delta = stock != null && tuned != null;
    List<JsonNode> columns = new ArrayList<>();
    if (delta) {
      columns.add(stock);
      columns.add(tuned);
    }
    variants.stream().filter((v) -> !delta || (v != stock && v != tuned)).forEach(columns::add);
    md.append("| metric");
    for (int i = 0; i < columns.size(); i++) {
      md.append(" | ").append(columns.get(i).path("variant").asText());
      if (delta && i == 1) {
        md.append(" | delta");
      }
    }
    md.append(" |\n|---");
    md.append("|---".repeat(columns.size() + (delta ? 1 : 0))).append("|\n");
    row(md, "operations", columns, delta, (v) -> v.path("ops").asText(), null);
    row(md, "errors", columns, delta, (v) -> v.path("errors").asText(), null);
    boolean jdbc = workload.path("api").asText().equals("jdbc");
    if (workload.path("closedLoop").asBoolean() || jdbc) {
      row(
          md,
          "throughput (queries/s)",
          columns,
          delta,
          (v) -> fmt(v.path("opsPerSecond"), 0),
          (pair) -> ratio(pair[0].path("opsPerSecond"), pair[1].path("opsPerSecond")));
    }
    boolean dynamic = workload.path("pool").asText().equals(ClientPool.DYNAMIC);
    boolean reports = workload.has("reportEvery");
    if (dynamic) {
      row(
          md,
          "routing follows the dynamic pool",
          columns,
          delta,
          (v) -> v.path("routesOnDynamicPool").asBoolean() ? "yes" : "no",
          null);
      row(md, "pool: start / peak / end, per round", columns, delta, Report::poolPerRound, null);
    }
    // Where one noisy round could carry a pooled tail, the median of rounds beside it.
    if (jdbc || workload.has("stragglers") || dynamic || reports) {
      row(md, "failed queries per round", columns, delta, (v) -> perRound(v, "errors", 0), null);
      List<String[]> metrics = new ArrayList<>();
      metrics.add(new String[] {"P50, median of rounds (ms)", "p50Ms", "2"});
      metrics.add(new String[] {"P99, median of rounds (ms)", "p99Ms", "2"});
      if (jdbc) {
        metrics.add(new String[] {"throughput, median of rounds (queries/s)", "opsPerSecond", "0"});
      }
      for (String[] metric : metrics) {
        row(
            md,
            metric[0],
            columns,
            delta,
            (v) -> fmt(medianOfRounds(v, metric[1]), Integer.parseInt(metric[2])),
            (pair) ->
                ratio(medianOfRounds(pair[0], metric[1]), medianOfRounds(pair[1], metric[1])));
      }
    }
    if (reports) {
      reportRows(md, columns, delta);
    }
    if (workload.path("closedLoop").asBoolean()) {
      row(
          md,
          "closes at last cancelled instead of drained",
          columns,
          delta,
          (v) -> v.path("cancelledAtLimit").asText(),
          null);
    }
    for (String[] metric :
        new String[][] {
          {"mean", "meanMs"},
          {"P50", "p50Ms"},
          {"P90", "p90Ms"},
          {"P95", "p95Ms"},
          {"P99", "p99Ms"},
          {"P99.9", "p999Ms"},
          {"max", "maxMs"}
        }) {
      row(
          md,
          metric[0] + " (ms)",
          columns,
          delta,
          (v) -> fmt(v.path(metric[1]), 2),
          (pair) -> ratio(pair[0].path(metric[1]), pair[1].path(metric[1])));
    }
    List<String> bucketNames = new ArrayList<>();
    columns.get(0).path("bucketsMs").fieldNames().forEachRemaining(bucketNames::add);
    for (String bucket : bucketNames) {
      row(
          md,
          bucket + " ms",
          columns,
          delta,
          (v) -> bucketCell(v, bucket),
          (pair) -> pointsDelta(share(pair[0], bucket), share(pair[1], bucket)));
    }
    row(
        md,
        "at or above 50 ms",
        columns,
        delta,
        (v) -> pct(share(v, "50-100") + share(v, ">100")),
        (pair) ->
            pointsDelta(
                share(pair[0], "50-100") + share(pair[0], ">100"),
                share(pair[1], "50-100") + share(pair[1], ">100")));
    row(
        md,
        "client CPU ms / 1000 queries",
        columns,
        delta,
        (v) -> fmt(v.path("cpuMsPer1000"), 0),
        (pair) -> ratio(pair[0].path("cpuMsPer1000"), pair[1].path("cpuMsPer1000")));
    row(
        md,
        "client CPU busy (share of the cores it may use)",
        columns,
        delta,
        (v) -> pct(v.path("clientCpuBusy").asDouble()),
        null);
    row(
        md,
        "frontend CPU ms / 1000 queries",
        columns,
        delta,
        (v) -> fmt(v.path("serverCpuMsPer1000"), 0),
        null);
    row(
        md,
        "frontend CPU busy (share of the cores it may use)",
        columns,
        delta,
        (v) -> pct(v.path("serverCpuBusy").asDouble()),
        null);
    row(
        md,
        "most arrivals waiting for a client thread",
        columns,
        delta,
        (v) -> v.path("maxQueuedArrivals").asText(),
        null);
    row(
        md,
        "bytes allocated / query",
        columns,
        delta,
        (v) -> fmt(v.path("bytesPerQuery"), 0),
        (pair) -> ratio(pair[0].path("bytesPerQuery"), pair[1].path("bytesPerQuery")));
    row(
        md,
        "throwables / query",
        columns,
        delta,
        (v) -> fmt(v.path("throwablesPerQuery"), 2),
        null);
    row(
        md,
        "RST_STREAM sent / query (wire)",
        columns,
        delta,
        (v) -> fmt(v.path("rstStreamsPerQuery"), 2),
        null);
    row(
        md,
        "cancels seen by server / query",
        columns,
        delta,
        (v) -> fmt(v.path("serverCancelsPerQuery"), 2),
        null);
    row(
        md,
        "GOAWAY received (for resets)",
        columns,
        delta,
        (v) ->
            v.path("goAways").asText("n/a") + " (" + v.path("goAwaysForResets").asText("n/a") + ")",
        null);
    if (workload.has("stragglers") || columns.stream().anyMatch((v) -> v.has("hedgesSent"))) {
      hedgingRows(md, columns, delta, tuned);
    }
    row(
        md,
        "busiest / mean, server",
        columns,
        delta,
        (v) -> fmt(v.path("serverBusiestOverMean"), 2),
        null);
    row(
        md,
        "busiest / mean, client-counted",
        columns,
        delta,
        (v) -> fmt(v.path("clientBusiestOverMean"), 2),
        null);
    row(md, "P99 per round (ms)", columns, delta, (v) -> perRound(v, "p99Ms", 1), null);
    row(md, "CPU steal per round (%; ! over 5 %)", columns, delta, (v) -> stealPerRound(v), null);
    row(
        md,
        "other processes' CPU per round (% of the machine)",
        columns,
        delta,
        (v) -> perRound(v, "othersCpuPct", 0),
        null);
    row(
        md,
        "busiest / mean per round",
        columns,
        delta,
        (v) -> perRound(v, "busiestOverMean", 2),
        null);
    switch (workload.path("fault").asText()) {
      case "slowed" ->
          row(
              md,
              "slowed connection, share of its even share, per round",
              columns,
              delta,
              (v) -> perRound(v, "degradedShareOfEven", 2),
              null);
      case "stalled" -> {
        row(
            md,
            "reads sent to the stalled connection after its first 200 ms, per round",
            columns,
            delta,
            (v) -> perRound(v, "faultyArrivalsAfterGrace", 0),
            null);
        row(
            md,
            "stalled connection after its first 200 ms, share of its even share, per round",
            columns,
            delta,
            (v) -> perRound(v, "faultyShareOfEvenAfterGrace", 2),
            null);
      }
      case "recovered" -> {
        row(
            md,
            "slowed connection while slowed, share of its even share, per round",
            columns,
            delta,
            (v) -> perRound(v, "faultyShareOfEvenBeforeRestore", 2),
            null);
        row(
            md,
            "s from recovery until it carried half its even share in 0.5 s, per round",
            columns,
            delta,
            (v) -> perRound(v, "recoverySeconds", 2),
            null);
      }
      default -> {}
    }
    if (workload.has("idealQueriesPerSecond")) {
      row(
          md,
          "share of ideal throughput (threads / mean server time)",
          columns,
          delta,
          (v) -> fmt(shareOfIdeal(workload, v.path("variant").asText()), 2),
          null);
      row(
          md,
          "P99 / mean server time",
          columns,
          delta,
          (v) -> fmt(overServerTime(workload, v.path("variant").asText()), 2),
          null);
    }
    List<String> errors = new ArrayList<>();
    for (JsonNode v : columns) {
      if (!v.path("firstError").isNull() && !v.path("firstError").isMissingNode()) {
        errors.add(v.path("variant").asText() + ": " + v.path("firstError").asText());
      }
    }
    if (!errors.isEmpty()) {
      md.append("\nFirst error per variant: ").append(String.join("; ", errors)).append("\n");
    }
    if (reports) {
      md.append("\nOne query in ")
          .append(workload.path("reportEvery").asText())
          .append(
              " is a report, read to its end, which the frontend serves later on every connection"
                  + " (its reportCost): the latency rows and buckets are the point selects' alone,"
                  + " the report rows the reports'; failed queries, CPU and calls per query count"
                  + " both.\n");
    }
  }

  /**
   * A mixed workload's reports, apart from the point selects: how many, and their latency from the
   * scheduled start to the last row, pooled and the median of rounds.
   */
  private static void reportRows(StringBuilder md, List<JsonNode> columns, boolean delta) {
    row(md, "reports read to the end", columns, delta, (v) -> v.path("reports").asText(), null);
    for (String[] metric : new String[][] {{"P50", "reportP50Ms"}, {"P99", "reportP99Ms"}}) {
      row(
          md,
          "report " + metric[0] + " (ms)",
          columns,
          delta,
          (v) -> fmt(v.path(metric[1]), 2),
          (pair) -> ratio(pair[0].path(metric[1]), pair[1].path(metric[1])));
      row(
          md,
          "report " + metric[0] + ", median of rounds (ms)",
          columns,
          delta,
          (v) -> fmt(medianOfRounds(v, metric[1]), 2),
          (pair) -> ratio(medianOfRounds(pair[0], metric[1]), medianOfRounds(pair[1], metric[1])));
    }
  }

  /**
   * What reached the frontend and what hedging did: on the straggler workloads, and wherever a
   * variant hedged.
   */
  private static void hedgingRows(
      StringBuilder md, List<JsonNode> columns, boolean delta, JsonNode tuned) {
    row(
        md,
        "server calls / query (frontend)",
        columns,
        delta,
        (v) -> fmt(v.path("serverCallsPerQuery"), 3),
        null);
    row(
        md,
        "calls made late by the frontend (stragglers)",
        columns,
        delta,
        (v) ->
            v.path("lateCalls").asText("n/a")
                + " ("
                + pct(v.path("lateCalls").asDouble() / Math.max(1, v.path("serverCalls").asLong()))
                + " of calls)",
        null);
    row(
        md,
        "hedges sent / won / denied",
        columns,
        delta,
        (v) ->
            v.has("hedgesSent")
                ? v.path("hedgesSent").asText()
                    + " / "
                    + v.path("hedgesWon").asText()
                    + " / "
                    + v.path("hedgesDenied").asText()
                : "",
        null);
    row(
        md,
        "hedges sent / query",
        columns,
        delta,
        (v) -> v.has("hedgesSent") ? pct(v.path("hedgesSentPerQuery").asDouble()) : "",
        null);
    row(
        md,
        "hedge losers cancelled",
        columns,
        delta,
        (v) -> v.has("hedgesSent") ? v.path("hedgeLosersCancelled").asText() : "",
        null);
    row(
        md,
        "bytes / hedge sent, over tuned's bytes / query",
        columns,
        delta,
        (v) -> v.has("hedgesSent") ? fmt(bytesPerHedge(v, tuned), 0) : "",
        null);
    row(
        md,
        "hedges sent per round",
        columns,
        delta,
        (v) -> v.has("hedgesSent") ? perRound(v, "hedgesSent", 0) : "",
        null);
  }

  /**
   * What a hedging variant allocated per query beyond tuned, per hedge it sent: the second
   * attempt's objects, end to end, in the client process. NaN without tuned or without hedges.
   */
  static double bytesPerHedge(JsonNode hedged, JsonNode tuned) {
    double hedges = hedged.path("hedgesSentPerQuery").asDouble();
    if (tuned == null || hedges == 0 || !tuned.path("bytesPerQuery").isNumber()) {
      return Double.NaN;
    }
    return (hedged.path("bytesPerQuery").asDouble() - tuned.path("bytesPerQuery").asDouble())
        / hedges;
  }

  private static void row(
      StringBuilder md,
      String name,
      List<JsonNode> columns,
      boolean delta,
      Function<JsonNode, String> cell,
      Function<JsonNode[], String> deltaCell) {
    md.append("| ").append(name);
    for (int i = 0; i < columns.size(); i++) {
      md.append(" | ").append(cell.apply(columns.get(i)));
      if (delta && i == 1) {
        md.append(" | ")
            .append(
                (deltaCell == null)
                    ? ""
                    : deltaCell.apply(new JsonNode[] {columns.get(0), columns.get(1)}));
      }
    }
    md.append(" |\n");
  }

  /** The median over the variant's rounds of one figure; missing if no round has it. */
  static JsonNode medianOfRounds(JsonNode variant, String key) {
    List<Double> values = new ArrayList<>();
    variant
        .path("rounds")
        .forEach(
            (round) -> {
              if (round.path(key).isNumber()) {
                values.add(round.path(key).asDouble());
              }
            });
    if (values.isEmpty()) {
      return MissingNode.getInstance();
    }
    values.sort(null);
    int middle = values.size() / 2;
    double median =
        (values.size() % 2 == 1)
            ? values.get(middle)
            : (values.get(middle - 1) + values.get(middle)) / 2;
    return DoubleNode.valueOf(median);
  }

  static String perRound(JsonNode variant, String key, int digits) {
    List<String> values = new ArrayList<>();
    variant.path("rounds").forEach((round) -> values.add(fmt(round.path(key), digits)));
    return String.join(", ", values);
  }

  /** Each round's CPU steal in percent, marked {@code !} where it was over 5 %. */
  static String stealPerRound(JsonNode variant) {
    List<String> values = new ArrayList<>();
    variant
        .path("rounds")
        .forEach(
            (round) -> {
              JsonNode steal = round.path("stealPct");
              boolean marked = steal.isNumber() && steal.asDouble() > MachineCpu.Share.MARK * 100;
              values.add(fmt(steal, 1) + (marked ? " !" : ""));
            });
    return String.join(", ", values);
  }

  private static String bucketCell(JsonNode variant, String bucket) {
    return variant.path("bucketsMs").path(bucket).asLong()
        + " ("
        + pct(share(variant, bucket))
        + ")";
  }

  private static double share(JsonNode variant, String bucket) {
    long ops = variant.path("ops").asLong();
    return (ops == 0) ? 0 : (double) variant.path("bucketsMs").path(bucket).asLong() / ops;
  }

  static JsonNode variant(JsonNode workload, String label) {
    for (JsonNode variant : workload.path("variants")) {
      if (variant.path("variant").asText().equals(label)) {
        return variant;
      }
    }
    return null;
  }

  static String bursts(JsonNode workload) {
    double multiplier = workload.path("burstMultiplier").asDouble();
    if (multiplier <= 1 || workload.path("burstLengthS").asDouble() <= 0) {
      return "none";
    }
    return fmt(multiplier, 1)
        + "x for "
        + fmt(workload.path("burstLengthS").asDouble(), 1)
        + " s every "
        + fmt(workload.path("burstPeriodS").asDouble(), 1)
        + " s";
  }

  static String pair(JsonNode stock, JsonNode tuned, int digits) {
    return fmt(stock, digits) + " -> " + fmt(tuned, digits) + " (" + ratio(stock, tuned) + ")";
  }

  static String ratio(JsonNode stock, JsonNode tuned) {
    if (!stock.isNumber() || !tuned.isNumber() || stock.asDouble() == 0) {
      return "n/a";
    }
    return "x" + fmt(tuned.asDouble() / stock.asDouble(), 2);
  }

  private static String pointsDelta(double stock, double tuned) {
    return String.format(Locale.ROOT, "%+.1f pt", (tuned - stock) * 100);
  }

  static String pct(double share) {
    return String.format(Locale.ROOT, "%.1f%%", share * 100);
  }

  static String fmt(JsonNode value, int digits) {
    return (value == null || !value.isNumber()) ? "n/a" : fmt(value.asDouble(), digits);
  }

  static String fmt(double value, int digits) {
    if (Double.isNaN(value)) {
      return "n/a";
    }
    return String.format(Locale.ROOT, "%." + digits + "f", value);
  }

  // ---- html

  static String html(List<JsonNode> lines) {
    StringBuilder html = new StringBuilder();
    html.append(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>spanner-tuning load"
            + " benchmark</title><style>body{font-family:sans-serif;margin:20px}svg{background:#fff;"
            + "border:1px solid #ddd;margin:4px}h2{margin-top:28px}.legend span{margin-right:14px}"
            + "</style></head><body>\n<h1>spanner-tuning load benchmark</h1>\n");
    html.append("<p>Latency percentiles per ")
        .append(
            "window bucket, all rounds merged (solid P99,"
                + " dashed P50, log scale); bursts shaded. Per-channel load: each variant's share of point"
                + " selects per connection, busiest first, as the server counted them; the line is the"
                + " even share. On the dynamic pool, each variant's pool size over the window, a"
                + " line per round.</p>\n");
    for (JsonNode results : lines) {
      html.append("<h2>").append(line(results)).append("</h2>\n");
      for (JsonNode workload : results.path("workloads")) {
        html.append("<h3>").append(workload.path("description").asText()).append("</h3>\n");
        html.append("<div class=\"legend\">");
        int index = 0;
        for (JsonNode variant : workload.path("variants")) {
          html.append("<span style=\"color:")
              .append(COLORS[index++ % COLORS.length])
              .append("\">&#9632; ")
              .append(variant.path("variant").asText())
              .append("</span>");
        }
        html.append("</div>\n")
            .append(latencyChart(workload))
            .append(WarmUpReport.html(workload))
            .append(loadChart(workload))
            .append(poolChart(workload))
            .append("\n");
      }
      CpuLimitedReport.html(html, results);
    }
    return html.append("</body></html>\n").toString();
  }

  static String latencyChart(JsonNode workload) {
    int width = 760;
    int height = 260;
    int left = 50;
    int bottom = 30;
    double window = workload.path("windowS").asDouble();
    double maxMs = 1;
    for (JsonNode variant : workload.path("variants")) {
      for (JsonNode point : variant.path("series")) {
        maxMs = Math.max(maxMs, point.path("p99Ms").asDouble(0));
      }
    }
    double top = Math.log10(Math.max(10, maxMs * 1.2));
    double bottomLog = 0;
    double plotWidth = width - left - 10;
    double plotHeight = height - bottom - 10;
    Function<Double, Double> x = (t) -> left + t / window * plotWidth;
    Function<Double, Double> y =
        (ms) -> 10 + (top - Math.log10(Math.max(1, ms))) / (top - bottomLog) * plotHeight;
    StringBuilder svg = new StringBuilder();
    svg.append("<svg width=\"")
        .append(width)
        .append("\" height=\"")
        .append(height)
        .append("\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"10\">");
    for (JsonNode burst : workload.path("bursts")) {
      double from = x.apply(burst.get(0).asDouble());
      double to = x.apply(burst.get(1).asDouble());
      svg.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%.1f\" y=\"10\" width=\"%.1f\" height=\"%.1f\" fill=\"#f6d8d8\"/>",
              from,
              Math.max(1, to - from),
              plotHeight));
    }
    logGrid(svg, y, top, left, width - 10);
    for (int t = 0; t <= window; t += Math.max(1, (int) (window / 10))) {
      svg.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\">%d s</text>",
              x.apply((double) t) - 6,
              height - 12,
              t));
    }
    int index = 0;
    for (JsonNode variant : workload.path("variants")) {
      String color = COLORS[index++ % COLORS.length];
      for (String key : new String[] {"p99Ms", "p50Ms"}) {
        StringBuilder points = new StringBuilder();
        double bucket =
            variant.path("series").size() > 1
                ? variant.path("series").get(1).path("t").asDouble()
                : window;
        for (JsonNode point : variant.path("series")) {
          if (point.path(key).isNumber()) {
            points.append(
                String.format(
                    Locale.ROOT,
                    "%.1f,%.1f ",
                    x.apply(point.path("t").asDouble() + bucket / 2),
                    y.apply(point.path(key).asDouble())));
          }
        }
        svg.append("<polyline fill=\"none\" stroke=\"")
            .append(color)
            .append("\" stroke-width=\"1.5\"")
            .append(key.equals("p50Ms") ? " stroke-dasharray=\"4,3\"" : "")
            .append(" points=\"")
            .append(points)
            .append("\"/>");
      }
    }
    return svg.append("</svg>").toString();
  }

  static String loadChart(JsonNode workload) {
    List<JsonNode> variants = new ArrayList<>();
    workload.path("variants").forEach(variants::add);
    int channels = variants.isEmpty() ? 0 : variants.get(0).path("serverSharesSorted").size();
    int group = channels * 12 + 20;
    int width = Math.max(300, 40 + variants.size() * group);
    int height = 170;
    double maxShare = 2.0 / Math.max(1, channels);
    for (JsonNode variant : variants) {
      for (JsonNode share : variant.path("serverSharesSorted")) {
        maxShare = Math.max(maxShare, share.asDouble());
      }
    }
    double plotHeight = height - 50;
    StringBuilder svg = new StringBuilder();
    svg.append("<svg width=\"")
        .append(width)
        .append("\" height=\"")
        .append(height)
        .append("\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"10\">");
    double even = 1.0 / Math.max(1, channels);
    double evenY = 10 + plotHeight - even / maxShare * plotHeight;
    svg.append(
        String.format(
            Locale.ROOT,
            "<line x1=\"30\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"3,3\"/>"
                + "<text x=\"2\" y=\"%.1f\">even</text>",
            width - 5,
            evenY,
            evenY,
            evenY + 3));
    for (int v = 0; v < variants.size(); v++) {
      JsonNode variant = variants.get(v);
      String color = COLORS[v % COLORS.length];
      double x0 = 40 + v * group;
      int i = 0;
      for (JsonNode share : variant.path("serverSharesSorted")) {
        double h = share.asDouble() / maxShare * plotHeight;
        svg.append(
            String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"%.1f\" fill=\"%s\"/>",
                x0 + i * 12,
                10 + plotHeight - h,
                h,
                color));
        i++;
      }
      svg.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%.1f\">%s (%s)</text>",
              x0,
              height - 22.0,
              variant.path("variant").asText(),
              fmt(variant.path("serverBusiestOverMean"), 2)));
    }
    return svg.append("</svg>").toString();
  }

  /**
   * On the dynamic pool, each variant's pool size over the window, every round a line; empty on a
   * fixed pool.
   */
  static String poolChart(JsonNode workload) {
    if (!workload.path("pool").asText().equals(ClientPool.DYNAMIC)) {
      return "";
    }
    int width = 760;
    int height = 200;
    int left = 50;
    int bottom = 30;
    double period = workload.path("poolSampleS").asDouble();
    int maxSize = 1;
    int samples = 1;
    for (JsonNode variant : workload.path("variants")) {
      for (JsonNode round : variant.path("rounds")) {
        samples = Math.max(samples, round.path("poolSizes").size());
        for (JsonNode size : round.path("poolSizes")) {
          maxSize = Math.max(maxSize, size.asInt());
        }
      }
    }
    double window = Math.max(period, (samples - 1) * period);
    double plotWidth = width - left - 10;
    double plotHeight = height - bottom - 10;
    int top = maxSize + 1;
    Function<Double, Double> x = (t) -> left + t / window * plotWidth;
    Function<Double, Double> y = (size) -> 10 + (top - size) / top * plotHeight;
    StringBuilder svg = new StringBuilder();
    svg.append("<svg width=\"")
        .append(width)
        .append("\" height=\"")
        .append(height)
        .append("\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"10\">");
    for (int size = 0; size <= top; size += 2) {
      double yy = y.apply((double) size);
      svg.append(
          String.format(
              Locale.ROOT,
              "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                  + "<text x=\"4\" y=\"%.1f\">%d ch</text>",
              left,
              width - 10,
              yy,
              yy,
              yy + 3,
              size));
    }
    for (int t = 0; t <= window; t += Math.max(1, (int) (window / 10))) {
      svg.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\">%d s</text>",
              x.apply((double) t) - 6,
              height - 12,
              t));
    }
    int index = 0;
    for (JsonNode variant : workload.path("variants")) {
      String color = COLORS[index++ % COLORS.length];
      for (JsonNode round : variant.path("rounds")) {
        StringBuilder points = new StringBuilder();
        int i = 0;
        Double last = null;
        for (JsonNode size : round.path("poolSizes")) {
          double t = i++ * period;
          if (last != null) {
            points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x.apply(t), y.apply(last)));
          }
          last = size.asDouble();
          points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x.apply(t), y.apply(last)));
        }
        svg.append("<polyline fill=\"none\" stroke=\"")
            .append(color)
            .append("\" stroke-width=\"1.5\" stroke-opacity=\"0.7\" points=\"")
            .append(points)
            .append("\"/>");
      }
    }
    return svg.append("</svg>").toString();
  }

  /**
   * Grid lines and labels at 1, 10, 100 ... ms up to {@code top} (log10 ms) on a log-scale chart.
   */
  static void logGrid(
      StringBuilder svg, Function<Double, Double> y, double top, int left, int right) {
    for (double ms : new double[] {1, 10, 100, 1000, 10000}) {
      if (Math.log10(ms) > top) {
        break;
      }
      double yy = y.apply(ms);
      svg.append(
          String.format(
              Locale.ROOT,
              "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                  + "<text x=\"4\" y=\"%.1f\">%s ms</text>",
              left,
              right,
              yy,
              yy,
              yy + 3,
              fmt(ms, 0)));
    }
  }
}
