package io.github.spannertuning.benchmarks;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The warm-connection workloads in the report: {@code aging} beside the same load with no
 * retirement, and {@code fresh-instance}'s time to ready and first second; their headline, their
 * targets, their sections and their lines in the HTML.
 */
final class WarmUpReport {

  /** aging: tuned's P99.9 at most this times its P99.9 with no connection retired. */
  static final double AGING_LIMIT = 1.2;

  /** fresh-instance: tuned's first-second P99 after ready at most this times its warm P99. */
  static final double FRESH_INSTANCE_LIMIT = 1.2;

  private static final String AGING = BenchmarkMain.AGING;

  private static final String FRESH_INSTANCE = BenchmarkMain.FRESH_INSTANCE;

  private WarmUpReport() {}

  /**
   * A variant's P99.9 under aging over its P99.9 on the frontend that retired no connection, in the
   * same run; NaN where either is missing.
   */
  static double agingRatio(JsonNode workload, String variant) {
    return over(
        field(variantOf(workload, variant), "p999Ms"),
        field(unretired(workload, variant), "p999Ms"));
  }

  /**
   * A variant's median over rounds of its first-second P99 after ready, over the median of its warm
   * P99; NaN where either is missing.
   */
  static double freshInstanceRatio(JsonNode workload, String variant) {
    JsonNode found = variantOf(workload, variant);
    return (found == null)
        ? Double.NaN
        : over(
            Report.medianOfRounds(found, "firstP99Ms"), Report.medianOfRounds(found, "warmP99Ms"));
  }

  /** The ratio with whether it met its limit: "x1.05, met", "x1.31, NOT met", or "n/a". */
  static String verdict(double ratio, double limit) {
    if (Double.isNaN(ratio)) {
      return "n/a";
    }
    return "x" + Report.fmt(ratio, 2) + ((ratio <= limit) ? ", met" : ", NOT met");
  }

  private static double over(JsonNode value, JsonNode base) {
    if (!value.isNumber() || !base.isNumber() || base.asDouble() <= 0) {
      return Double.NaN;
    }
    return value.asDouble() / base.asDouble();
  }

  // ---- headline and targets

  /** Stock beside tuned on both workloads, per client line; empty where neither ran. */
  static String headline(List<JsonNode> lines) {
    StringBuilder rows = new StringBuilder();
    for (JsonNode line : lines) {
      String client = line.path("client").path("spanner").asText();
      JsonNode aging = Report.workload(line, AGING);
      if (aging != null) {
        List<String[]> cells = new ArrayList<>();
        cells.add(both(aging, "P99 / P99.9 / max (ms)", WarmUpReport::tail));
        cells.add(
            both(
                aging,
                "P99.9 over the same load's with no retirement (target: tuned at most "
                    + AGING_LIMIT
                    + "x)",
                (v) ->
                    verdictOrRatio(agingRatio(aging, v.path("variant").asText()), AGING_LIMIT, v)));
        cells.add(both(aging, "reads that waited for a connection", WarmUpReport::readsWaited));
        cells.add(both(aging, "failed queries", (v) -> field(v, "errors").asText("n/a")));
        cells.add(both(aging, "priming queries (share of calls)", WarmUpReport::priming));
        cells.add(
            both(aging, "connections set up", (v) -> field(v, "connectionsSetUp").asText("n/a")));
        headlineRows(rows, client, AGING, cells);
      }
      JsonNode fresh = Report.workload(line, FRESH_INSTANCE);
      if (fresh != null) {
        List<String[]> cells = new ArrayList<>();
        cells.add(
            both(
                fresh,
                "time to ready, median of rounds (ms)",
                (v) -> Report.fmt(Report.medianOfRounds(v, "readyMs"), 0)));
        cells.add(
            both(
                fresh,
                "first-second P99 after ready / warm P99, medians of rounds (ms)",
                (v) ->
                    Report.fmt(Report.medianOfRounds(v, "firstP99Ms"), 2)
                        + " / "
                        + Report.fmt(Report.medianOfRounds(v, "warmP99Ms"), 2)));
        cells.add(
            both(
                fresh,
                "first second over warm (target: tuned at most " + FRESH_INSTANCE_LIMIT + "x)",
                (v) ->
                    verdictOrRatio(
                        freshInstanceRatio(fresh, v.path("variant").asText()),
                        FRESH_INSTANCE_LIMIT,
                        v)));
        cells.add(both(fresh, "reads that waited for a connection", WarmUpReport::readsWaited));
        cells.add(both(fresh, "failed queries", (v) -> field(v, "errors").asText("n/a")));
        headlineRows(rows, client, FRESH_INSTANCE, cells);
      }
    }
    if (rows.length() == 0) {
      return "";
    }
    return "\n## Headline: warm connections\n\n"
        + "Where connections cost "
        + setUp(lines)
        + " to set up: the frontend retiring them ("
        + AGING
        + "), and a new instance from the moment it reports ready ("
        + FRESH_INSTANCE
        + "). The target is tuned's; stock's figure is beside it.\n\n"
        + "| client line | workload | measure | stock | tuned |\n|---|---|---|---|---|\n"
        + rows;
  }

  /** The set-up time of the first line's warm-connection workload, for the headline's sentence. */
  private static String setUp(List<JsonNode> lines) {
    for (JsonNode line : lines) {
      for (String name : List.of(AGING, FRESH_INSTANCE)) {
        JsonNode workload = Report.workload(line, name);
        if (workload != null) {
          return Report.fmt(workload.path("connections").path("setUpMs").asDouble(), 0) + " ms";
        }
      }
    }
    return "time";
  }

  /**
   * For the variant the target is on, the verdict; for the others, the ratio alone: the target is
   * tuned's.
   */
  private static String verdictOrRatio(double ratio, double limit, JsonNode variant) {
    return variant.path("variant").asText().equals(Variant.TUNED.label())
        ? verdict(ratio, limit)
        : (Double.isNaN(ratio) ? "n/a" : "x" + Report.fmt(ratio, 2));
  }

  private static String[] both(JsonNode workload, String measure, Function<JsonNode, String> cell) {
    JsonNode stock = Report.variant(workload, Variant.STOCK.label());
    JsonNode tuned = Report.variant(workload, Variant.TUNED.label());
    return new String[] {
      measure,
      (stock == null) ? "n/a" : cell.apply(stock),
      (tuned == null) ? "n/a" : cell.apply(tuned)
    };
  }

  private static void headlineRows(
      StringBuilder rows, String client, String workload, List<String[]> cells) {
    for (String[] cell : cells) {
      rows.append("| ")
          .append(client)
          .append(" | ")
          .append(workload)
          .append(" | ")
          .append(String.join(" | ", cell))
          .append(" |\n");
    }
  }

  /** The workloads' rows in the report's targets, per client line. */
  static void targets(StringBuilder md, List<JsonNode> lines) {
    Report.target(
        md,
        lines,
        "aging: tuned P99.9 at most "
            + AGING_LIMIT
            + "x its P99.9 with no retirement, same run (tuned's P99.9s; stock's ratio)",
        List.of(AGING),
        (line) -> {
          JsonNode aging = Report.workload(line, AGING);
          return verdict(agingRatio(aging, "tuned"), AGING_LIMIT)
              + " ("
              + Report.fmt(field(variantOf(aging, "tuned"), "p999Ms"), 2)
              + " / "
              + Report.fmt(field(unretired(aging, "tuned"), "p999Ms"), 2)
              + " ms; stock x"
              + Report.fmt(agingRatio(aging, "stock"), 2)
              + ")";
        });
    Report.target(
        md,
        lines,
        "aging: reads that waited for a connection, tuned (stock)",
        List.of(AGING),
        (line) -> {
          JsonNode aging = Report.workload(line, AGING);
          return readsWaited(variantOf(aging, "tuned"))
              + " ("
              + readsWaited(variantOf(aging, "stock"))
              + ")";
        });
    Report.target(
        md,
        lines,
        "fresh instance: tuned first-second P99 after ready at most "
            + FRESH_INSTANCE_LIMIT
            + "x a warm instance's, medians of rounds (tuned's P99s; stock's ratio)",
        List.of(FRESH_INSTANCE),
        (line) -> {
          JsonNode fresh = Report.workload(line, FRESH_INSTANCE);
          JsonNode tuned = variantOf(fresh, "tuned");
          return verdict(freshInstanceRatio(fresh, "tuned"), FRESH_INSTANCE_LIMIT)
              + " ("
              + Report.fmt(medianOf(tuned, "firstP99Ms"), 2)
              + " / "
              + Report.fmt(medianOf(tuned, "warmP99Ms"), 2)
              + " ms; stock x"
              + Report.fmt(freshInstanceRatio(fresh, "stock"), 2)
              + ")";
        });
    Report.target(
        md,
        lines,
        "fresh instance: time to ready, median ms, and reads that waited for a connection, tuned"
            + " (stock)",
        List.of(FRESH_INSTANCE),
        (line) -> {
          JsonNode fresh = Report.workload(line, FRESH_INSTANCE);
          JsonNode tuned = variantOf(fresh, "tuned");
          JsonNode stock = variantOf(fresh, "stock");
          return Report.fmt(medianOf(tuned, "readyMs"), 0)
              + " ms, "
              + readsWaited(tuned)
              + " ("
              + Report.fmt(medianOf(stock, "readyMs"), 0)
              + " ms, "
              + readsWaited(stock)
              + ")";
        });
  }

  // ---- sections

  /** The scale table's note for a warm-connection workload; empty for the others. */
  static String note(JsonNode workload) {
    JsonNode connections = workload.path("connections");
    if (connections.isMissingNode()) {
      return "";
    }
    String setUp = Report.fmt(connections.path("setUpMs").asDouble(), 0) + " ms to set up each";
    if (connections.path("maxAgeS").asDouble() > 0) {
      return ", connections retired every "
          + VariantTally.trim(connections.path("maxAgeS").asDouble())
          + " s (grace "
          + VariantTally.trim(connections.path("graceS").asDouble())
          + " s), "
          + setUp
          + "; beside as many windows with none retired";
    }
    return ", a new instance per window from ready, " + setUp;
  }

  /** The workload's own table after its general one; nothing for the other workloads. */
  static void section(StringBuilder md, JsonNode workload) {
    if (workload.has("noRetirement")) {
      agingSection(md, workload);
    } else if (workload.has("instance")) {
      freshInstanceSection(md, workload);
    }
  }

  private static void agingSection(StringBuilder md, JsonNode workload) {
    List<JsonNode> columns = new ArrayList<>();
    List<String> names = new ArrayList<>();
    for (String label : List.of(Variant.STOCK.label(), Variant.TUNED.label())) {
      JsonNode aged = Report.variant(workload, label);
      if (aged != null) {
        columns.add(aged);
        names.add(label);
      }
    }
    int aged = columns.size();
    for (String label : List.of(Variant.STOCK.label(), Variant.TUNED.label())) {
      JsonNode unretired = unretired(workload, label);
      if (unretired != null) {
        columns.add(unretired);
        names.add(label + ", no retirement");
      }
    }
    if (columns.isEmpty()) {
      return;
    }
    md.append("\nRetired every ")
        .append(VariantTally.trim(workload.path("connections").path("maxAgeS").asDouble()))
        .append(" s, beside the same load on a frontend that retires none (same run, windows")
        .append(" interleaved). Reads that waited: the application's point selects that waited")
        .append(" for their connection's set-up, as the frontend counted them; priming queries")
        .append(" (SELECT 1) are counted apart.\n\n| metric | ")
        .append(String.join(" | ", names))
        .append(" |\n|---")
        .append("|---".repeat(columns.size()))
        .append("|\n");
    row(md, "P99 (ms)", columns, (v) -> Report.fmt(v.path("p99Ms"), 2));
    row(md, "P99.9 (ms)", columns, (v) -> Report.fmt(v.path("p999Ms"), 2));
    row(md, "max (ms)", columns, (v) -> Report.fmt(v.path("maxMs"), 2));
    md.append("| P99.9 over the same variant's with no retirement");
    for (int i = 0; i < columns.size(); i++) {
      md.append(" | ")
          .append(
              (i < aged)
                  ? ratioText(agingRatio(workload, columns.get(i).path("variant").asText()))
                  : "");
    }
    md.append(" |\n");
    row(md, "reads that waited for a connection", columns, WarmUpReport::readsWaited);
    row(md, "failed queries", columns, (v) -> v.path("errors").asText("n/a"));
    row(
        md,
        "priming queries (share of the calls the frontend saw)",
        columns,
        WarmUpReport::priming);
    row(
        md,
        "priming queries that waited for a connection",
        columns,
        (v) -> v.path("primingThatWaitedForSetUp").asText("n/a"));
    row(md, "connections set up", columns, (v) -> v.path("connectionsSetUp").asText("n/a"));
    row(
        md,
        "GOAWAY received (for resets)",
        columns,
        (v) ->
            v.path("goAways").asText("n/a")
                + " ("
                + v.path("goAwaysForResets").asText("n/a")
                + ")");
    row(md, "P99 per round (ms)", columns, (v) -> Report.perRound(v, "p99Ms", 1));
    row(
        md,
        "reads that waited per round",
        columns,
        (v) -> Report.perRound(v, "readsThatWaitedForSetUp", 0));
    row(md, "CPU steal per round (%; ! over 5 %)", columns, Report::stealPerRound);
  }

  private static void freshInstanceSection(StringBuilder md, JsonNode workload) {
    List<JsonNode> columns = new ArrayList<>();
    workload.path("variants").forEach(columns::add);
    if (columns.isEmpty()) {
      return;
    }
    JsonNode instance = workload.path("instance");
    md.append("\nA new client per round, on a frontend where each new connection costs ")
        .append(Report.fmt(workload.path("connections").path("setUpMs").asDouble(), 0))
        .append(" ms to set up. Ready, from the start of the client's build: stock once its")
        .append(" client and database client are built, tuned once its warm-up returns (at most ")
        .append(VariantTally.trim(instance.path("warmUpTimeoutS").asDouble()))
        .append(" s). The load starts at once; the first ")
        .append(VariantTally.trim(instance.path("firstS").asDouble()))
        .append(" s after ready is set against as long a stretch from ")
        .append(VariantTally.trim(instance.path("warmFromS").asDouble()))
        .append(" s (whole burst periods later: the same phase of the load). P99s of a stretch are")
        .append(" read from the window's series (two significant digits).\n\n| metric");
    columns.forEach((v) -> md.append(" | ").append(v.path("variant").asText()));
    md.append(" |\n|---").append("|---".repeat(columns.size())).append("|\n");
    row(
        md,
        "time to ready, median of rounds (ms)",
        columns,
        (v) -> Report.fmt(Report.medianOfRounds(v, "readyMs"), 0));
    row(md, "time to ready per round (ms)", columns, (v) -> Report.perRound(v, "readyMs", 0));
    row(
        md,
        "first-second P99 after ready, median of rounds (ms)",
        columns,
        (v) -> Report.fmt(Report.medianOfRounds(v, "firstP99Ms"), 2));
    row(
        md,
        "warm P99, median of rounds (ms)",
        columns,
        (v) -> Report.fmt(Report.medianOfRounds(v, "warmP99Ms"), 2));
    row(
        md,
        "first second over warm (target: tuned at most " + FRESH_INSTANCE_LIMIT + "x)",
        columns,
        (v) ->
            verdictOrRatio(
                freshInstanceRatio(workload, v.path("variant").asText()), FRESH_INSTANCE_LIMIT, v));
    row(md, "first-second P99 per round (ms)", columns, (v) -> Report.perRound(v, "firstP99Ms", 1));
    row(md, "warm P99 per round (ms)", columns, (v) -> Report.perRound(v, "warmP99Ms", 1));
    row(
        md,
        "queries in the first second, per round",
        columns,
        (v) -> Report.perRound(v, "firstOps", 0));
    row(md, "reads that waited for a connection", columns, WarmUpReport::readsWaited);
    row(
        md,
        "reads that waited per round",
        columns,
        (v) -> Report.perRound(v, "readsThatWaitedForSetUp", 0));
    row(md, "failed queries per round", columns, (v) -> Report.perRound(v, "errors", 0));
    row(
        md,
        "priming queries (share of the calls the frontend saw)",
        columns,
        WarmUpReport::priming);
    row(md, "connections set up", columns, (v) -> v.path("connectionsSetUp").asText("n/a"));
    row(md, "CPU steal per round (%; ! over 5 %)", columns, Report::stealPerRound);
  }

  /** One sentence per workload under its chart in the HTML: the target and what was measured. */
  static String html(JsonNode workload) {
    if (workload.has("noRetirement")) {
      return "<p>Tuned P99.9 over its P99.9 with no connection retired (target at most "
          + AGING_LIMIT
          + "x): "
          + verdict(agingRatio(workload, "tuned"), AGING_LIMIT)
          + "; stock "
          + ratioText(agingRatio(workload, "stock"))
          + ". Reads that waited for a connection: stock "
          + readsWaited(variantOf(workload, "stock"))
          + ", tuned "
          + readsWaited(variantOf(workload, "tuned"))
          + ". Priming queries, tuned: "
          + priming(variantOf(workload, "tuned"))
          + ".</p>\n";
    }
    if (workload.has("instance")) {
      return "<p>First-second P99 after ready over warm P99, medians of rounds (target: tuned at"
          + " most "
          + FRESH_INSTANCE_LIMIT
          + "x): "
          + verdict(freshInstanceRatio(workload, "tuned"), FRESH_INSTANCE_LIMIT)
          + "; stock "
          + ratioText(freshInstanceRatio(workload, "stock"))
          + ". Time to ready, median: stock "
          + Report.fmt(medianOf(variantOf(workload, "stock"), "readyMs"), 0)
          + " ms, tuned "
          + Report.fmt(medianOf(variantOf(workload, "tuned"), "readyMs"), 0)
          + " ms. Reads that waited for a connection: stock "
          + readsWaited(variantOf(workload, "stock"))
          + ", tuned "
          + readsWaited(variantOf(workload, "tuned"))
          + ".</p>\n";
    }
    return "";
  }

  // ---- cells

  private static String tail(JsonNode variant) {
    return Report.fmt(variant.path("p99Ms"), 1)
        + " / "
        + Report.fmt(variant.path("p999Ms"), 1)
        + " / "
        + Report.fmt(variant.path("maxMs"), 1);
  }

  private static String readsWaited(JsonNode variant) {
    return field(variant, "readsThatWaitedForSetUp").asText("n/a");
  }

  private static String priming(JsonNode variant) {
    JsonNode share = field(variant, "primingShareOfCalls");
    return field(variant, "primingCalls").asText("n/a")
        + (share.isNumber()
            ? String.format(Locale.ROOT, " (%.2f %%)", share.asDouble() * 100)
            : "");
  }

  private static String ratioText(double ratio) {
    return Double.isNaN(ratio) ? "n/a" : "x" + Report.fmt(ratio, 2);
  }

  private static void row(
      StringBuilder md, String name, List<JsonNode> columns, Function<JsonNode, String> cell) {
    md.append("| ").append(name);
    columns.forEach((v) -> md.append(" | ").append(cell.apply(v)));
    md.append(" |\n");
  }

  private static JsonNode variantOf(JsonNode workload, String label) {
    return (workload == null) ? null : Report.variant(workload, label);
  }

  /** The variant's figures on the frontend that retired no connection; {@code null} if none. */
  private static JsonNode unretired(JsonNode workload, String label) {
    return (workload == null || !workload.has("noRetirement"))
        ? null
        : Report.variant(workload.path("noRetirement"), label);
  }

  private static JsonNode field(JsonNode variant, String key) {
    return (variant == null) ? MissingNode.getInstance() : variant.path(key);
  }

  private static JsonNode medianOf(JsonNode variant, String key) {
    return (variant == null) ? MissingNode.getInstance() : Report.medianOfRounds(variant, key);
  }
}
