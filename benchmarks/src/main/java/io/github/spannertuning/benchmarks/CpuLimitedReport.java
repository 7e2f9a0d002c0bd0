package io.github.spannertuning.benchmarks;

import static io.github.spannertuning.benchmarks.Report.fmt;
import static io.github.spannertuning.benchmarks.Report.pair;
import static io.github.spannertuning.benchmarks.Report.pct;
import static io.github.spannertuning.benchmarks.Report.ratio;
import static io.github.spannertuning.benchmarks.Report.variant;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;

/** The report's part on the CPU-limited client ({@link CpuLimitedRun}): markdown and HTML. */
final class CpuLimitedReport {

  private CpuLimitedReport() {}

  static String model(JsonNode limited) {
    int cpus = limited.path("clientCpus").asInt(1);
    String vcpu = cpus + " vCPU";
    return "What the CPU-limited client models: an application container with a CPU limit of "
        + vcpu
        + " (Cloud Run's default is 1 vCPU; GKE pods commonly have limits of 1 or 2 cores),"
        + " in which the Spanner client has that CPU to itself. The client JVM is pinned to "
        + cpus
        + " core(s) with taskset and started with -XX:ActiveProcessorCount="
        + cpus
        + ", so it sizes its thread pools and GC as a JVM in such a container does; the simulated"
        + " frontend runs in its own JVM on the other core(s). The cores each process ran on are"
        + " read back from /proc. What it does not model: a container's limit is a CFS quota"
        + " (CPU time per 100 ms period, spent on any of the host's cores and then throttled until"
        + " the next period), not a pinned core, so a real container can run a short burst on"
        + " several cores and then stall for the rest of the period, which pinning never does;"
        + " no noisy neighbours share the core; the application does no work of its own; and the"
        + " frontend is simulated on loopback (no network, no TLS), on a core of its own whose"
        + " limit can be what saturates first (see the frontend CPU busy figures).";
  }

  /** Whether the frontend had a reset limit on any line (the report's frontend model says so). */
  private static boolean resetLimited(List<JsonNode> lines) {
    return lines.stream()
        .anyMatch(
            (line) -> !"off".equals(line.path("frontend").path("maxRstFramesPerWindow").asText()));
  }

  /**
   * The headline: capacity, P99 at a share of it, and the reference workloads on the limited
   * client.
   */
  static String headline(List<JsonNode> lines) {
    List<JsonNode> limited = new ArrayList<>();
    lines.forEach((line) -> limited.add(line.path("cpuLimited")));
    JsonNode first = limited.stream().filter(CpuLimitedReport::ran).findFirst().orElse(null);
    if (first == null) {
      return limited.stream().anyMatch((l) -> l.has("skipped"))
          ? "\n## Headline: CPU-limited client\n\nSkipped: "
              + limited.stream()
                  .filter((l) -> l.has("skipped"))
                  .findFirst()
                  .get()
                  .path("skipped")
                  .asText()
              + "\n"
          : "";
    }
    int cpus = first.path("clientCpus").asInt();
    double slo = first.path("capacity").path("sloMs").asDouble(20);
    Set<String> names = new LinkedHashSet<>();
    limited.forEach((l) -> l.path("workloads").forEach((w) -> names.add(w.path("name").asText())));
    StringBuilder md = new StringBuilder();
    md.append("\n## Headline: the client on ")
        .append(cpus)
        .append(" vCPU\n\n")
        .append(model(first))
        .append("\n\n")
        .append(
            "Capacity: the highest rate of steady point selects (open loop) at which P99 stays at"
                + " or under ")
        .append(fmt(slo, 0))
        .append(
            " ms with no failed query. By P99: the same with"
                + " failed queries not counted; the other loads here are scaled to stock's capacity by"
                + " P99")
        .append(
            resetLimited(lines)
                ? ", since stock's resets make the frontend send GOAWAY at any rate, failing the"
                    + " queries in flight.\n\n"
                : ".\n\n")
        .append("| client line | capacity at P99 <= ")
        .append(fmt(slo, 0))
        .append(" ms, no failed query: stock -> tuned | by P99: stock -> tuned | P99 (ms) at ")
        .append(
            pct(first.path("capacity").path("atShare").path("shareOfStockCapacity").asDouble(0.75)))
        .append(" of stock's capacity by P99: stock -> tuned");
    names.forEach(
        (name) ->
            md.append(" | ")
                .append(name)
                .append(" on ")
                .append(cpus)
                .append(" vCPU: P90, P99 (ms) stock -> tuned"));
    md.append(" |\n|---|---|---|---").append("|---".repeat(names.size())).append("|\n");
    for (JsonNode line : lines) {
      JsonNode l = line.path("cpuLimited");
      if (!ran(l)) {
        continue;
      }
      md.append("| ")
          .append(line.path("client").path("spanner").asText())
          .append(" | ")
          .append(capacityCell(l, "stock"))
          .append(" -> ")
          .append(capacityCell(l, "tuned"))
          .append(capacityRatio(l, "capacityRate"))
          .append(" | ")
          .append(p99CapacityCell(l, "stock"))
          .append(" -> ")
          .append(p99CapacityCell(l, "tuned"))
          .append(capacityRatio(l, "p99CapacityRate"));
      JsonNode atShare = l.path("capacity").path("atShare");
      md.append(" | ");
      if (atShare.isMissingNode()) {
        md.append("n/a");
      } else {
        md.append(fmt(atShare.path("baseRate").asDouble(), 0))
            .append("/s: ")
            .append(pair(vpath(atShare, "stock", "p99Ms"), vpath(atShare, "tuned", "p99Ms"), 2));
      }
      for (String name : names) {
        JsonNode w = Report.workload(l, name);
        md.append(" | ");
        if (w == null) {
          md.append("n/a");
          continue;
        }
        md.append(fmt(w.path("baseRate").asDouble(), 0))
            .append("/s base: ")
            .append(pair(vpath(w, "stock", "p90Ms"), vpath(w, "tuned", "p90Ms"), 1))
            .append("; ")
            .append(pair(vpath(w, "stock", "p99Ms"), vpath(w, "tuned", "p99Ms"), 1))
            .append(failed(w));
      }
      md.append(" |\n");
    }
    return md.toString();
  }

  /** Per client line: where each process ran, the sweep, the share point, the workloads. */
  static void section(StringBuilder md, JsonNode results) {
    JsonNode l = results.path("cpuLimited");
    if (l.has("skipped")) {
      md.append("\n### CPU-limited client: skipped\n\n")
          .append(l.path("skipped").asText())
          .append('\n');
      return;
    }
    if (!ran(l)) {
      return;
    }
    int cpus = l.path("clientCpus").asInt();
    String on = " (client on " + cpus + " vCPU)";
    md.append("\n### Where each process ran")
        .append(on)
        .append("\n\n")
        .append(cores(l))
        .append('\n');
    JsonNode capacity = l.path("capacity");
    if (!capacity.isMissingNode()) {
      JsonNode points = capacity.path("points");
      JsonNode firstPoint = points.path(0);
      md.append("\n### Capacity sweep")
          .append(on)
          .append(": steady point select, ")
          .append(capacity.path("threads").asText())
          .append(" threads, ")
          .append(firstPoint.path("rounds").asText())
          .append(" x ")
          .append(seconds(firstPoint.path("windowS").asDouble()))
          .append(" s per rate and variant\n\n")
          .append("Capacity at P99 <= ")
          .append(fmt(capacity.path("sloMs").asDouble(), 0))
          .append(" ms with no failed query: stock ")
          .append(capacityCell(l, "stock"))
          .append(", tuned ")
          .append(capacityCell(l, "tuned"))
          .append(capacityRatio(l, "capacityRate"))
          .append("; by P99 alone: stock ")
          .append(p99CapacityCell(l, "stock"))
          .append(", tuned ")
          .append(p99CapacityCell(l, "tuned"))
          .append(capacityRatio(l, "p99CapacityRate"))
          .append(
              ". A variant stops at the first rate where its P99 passes the SLO or it falls"
                  + " behind (more than ")
          .append(fmt(capacity.path("backlogS").asDouble(), 1))
          .append(
              " s of arrivals waiting for a thread, the rest of the window not sent). The first"
                  + " rate is run once, unrecorded, before the sweep, and the variants' order is"
                  + " reversed each round.\n\n")
          .append(
              "| rate | P50 / P90 / P99 stock (ms) | P50 / P90 / P99 tuned (ms) | P99 tuned / stock"
                  + " | failed (not sent) stock / tuned | client CPU busy stock / tuned"
                  + " | frontend CPU busy stock / tuned | P99 per round stock; tuned (ms) |\n")
          .append("|---|---|---|---|---|---|---|---|\n");
      for (JsonNode point : points) {
        JsonNode stock = variant(point, "stock");
        JsonNode tuned = variant(point, "tuned");
        md.append("| ")
            .append(fmt(point.path("rate").asDouble(), 0))
            .append("/s | ")
            .append(percentiles(stock))
            .append(" | ")
            .append(percentiles(tuned))
            .append(" | ")
            .append(
                (stock == null || tuned == null)
                    ? ""
                    : ratio(stock.path("p99Ms"), tuned.path("p99Ms")))
            .append(" | ")
            .append(
                both(
                    stock,
                    tuned,
                    (v) ->
                        v.path("errors").asText()
                            + (v.path("unsent").asLong() > 0
                                ? " (" + v.path("unsent").asText() + ")"
                                : "")))
            .append(" | ")
            .append(both(stock, tuned, (v) -> pct(v.path("clientCpuBusy").asDouble())))
            .append(" | ")
            .append(both(stock, tuned, (v) -> pct(v.path("serverCpuBusy").asDouble())))
            .append(" | ")
            .append((stock == null) ? "-" : Report.perRound(stock, "p99Ms", 1))
            .append("; ")
            .append((tuned == null) ? "-" : Report.perRound(tuned, "p99Ms", 1))
            .append(" |\n");
      }
      JsonNode atShare = capacity.path("atShare");
      if (!atShare.isMissingNode()) {
        md.append("\n### Steady at ")
            .append(pct(atShare.path("shareOfStockCapacity").asDouble()))
            .append(" of stock's capacity by P99")
            .append(on)
            .append(" (")
            .append(fmt(atShare.path("baseRate").asDouble(), 0))
            .append("/s, ")
            .append(atShare.path("threads").asText())
            .append(" threads, ")
            .append(atShare.path("rounds").asText())
            .append(" x ")
            .append(seconds(atShare.path("windowS").asDouble()))
            .append(" s)\n\n");
        Report.table(md, atShare);
      }
    }
    if (l.path("workloads").isEmpty()) {
      return;
    }
    md.append("\n### Reference workloads").append(on).append(" beside the unlimited client\n\n");
    if (l.path("baseShareOfStockCapacity").isNumber()) {
      md.append("On the CPU-limited client each workload's base rate is ")
          .append(pct(l.path("baseShareOfStockCapacity").asDouble()))
          .append(" of stock's capacity by P99 there, bursts at the reference multipliers.\n\n");
    }
    md.append(
            "| workload | client | base rate | P50 (ms) stock -> tuned | P90 | P99 | failed stock / tuned"
                + " | client CPU ms / 1000 queries stock -> tuned | client CPU busy stock / tuned"
                + " | P99 per round (ms) stock; tuned |\n")
        .append("|---|---|---|---|---|---|---|---|---|---|\n");
    for (JsonNode w : l.path("workloads")) {
      String name = w.path("name").asText();
      JsonNode unlimited = Report.workload(results, name);
      if (unlimited != null) {
        comparisonRow(md, name, "unlimited", unlimited);
      }
      comparisonRow(md, name, cpus + " vCPU", w);
    }
    for (JsonNode w : l.path("workloads")) {
      md.append("\n### ")
          .append(w.path("description").asText())
          .append(on)
          .append(" (")
          .append(fmt(w.path("baseRate").asDouble(), 0))
          .append("/s, ")
          .append(Report.bursts(w))
          .append(", ")
          .append(w.path("threads").asText())
          .append(" threads, ")
          .append(w.path("rounds").asText())
          .append(" x ")
          .append(seconds(w.path("windowS").asDouble()))
          .append(" s)\n\n");
      Report.table(md, w);
    }
  }

  private static void comparisonRow(StringBuilder md, String name, String client, JsonNode w) {
    JsonNode stock = variant(w, "stock");
    JsonNode tuned = variant(w, "tuned");
    if (stock == null || tuned == null) {
      return;
    }
    md.append("| ")
        .append(name)
        .append(" | ")
        .append(client)
        .append(" | ")
        .append(fmt(w.path("baseRate").asDouble(), 0))
        .append("/s");
    for (String key : new String[] {"p50Ms", "p90Ms", "p99Ms"}) {
      md.append(" | ").append(pair(stock.path(key), tuned.path(key), 2));
    }
    md.append(" | ")
        .append(stock.path("errors").asText())
        .append(" / ")
        .append(tuned.path("errors").asText())
        .append(" | ")
        .append(pair(stock.path("cpuMsPer1000"), tuned.path("cpuMsPer1000"), 0))
        .append(" | ")
        .append(pct(stock.path("clientCpuBusy").asDouble()))
        .append(" / ")
        .append(pct(tuned.path("clientCpuBusy").asDouble()))
        .append(" | ")
        .append(Report.perRound(stock, "p99Ms", 1))
        .append("; ")
        .append(Report.perRound(tuned, "p99Ms", 1))
        .append(" |\n");
  }

  static String cores(JsonNode l) {
    JsonNode cores = l.path("cores");
    return "Client JVM: taskset -c "
        + l.path("clientCores").asText()
        + ", options "
        + String.join(" ", texts(l.path("clientJvmOptions")))
        + "; /proc says Cpus_allowed_list "
        + cores.path("client").path("cpusAllowed").asText()
        + ", the JVM sees "
        + cores.path("client").path("availableProcessors").asText()
        + " processor(s), threads last ran on core (thread samples at each window's end): "
        + samples(cores.path("client").path("threadSamplesByLastCore"))
        + ". Frontend JVM: taskset -c "
        + l.path("frontendCores").asText()
        + "; /proc says Cpus_allowed_list "
        + cores.path("frontend").path("cpusAllowed").asText()
        + ", threads last ran on core: "
        + samples(cores.path("frontend").path("threadSamplesByLastCore"))
        + ". CPU busy is each process's CPU time over wall time and the cores it may use.";
  }

  private static List<String> texts(JsonNode array) {
    List<String> texts = new ArrayList<>();
    array.forEach((item) -> texts.add(item.asText()));
    return texts;
  }

  private static String samples(JsonNode byCore) {
    List<String> parts = new ArrayList<>();
    byCore
        .fields()
        .forEachRemaining((e) -> parts.add(e.getKey() + " (" + e.getValue().asText() + ")"));
    return parts.isEmpty() ? "n/a" : String.join(", ", parts);
  }

  private static String seconds(double seconds) {
    return fmt(seconds, (seconds == Math.rint(seconds)) ? 0 : 1);
  }

  private static boolean ran(JsonNode l) {
    return l.isObject() && !l.has("skipped");
  }

  private static JsonNode vpath(JsonNode workload, String label, String key) {
    JsonNode v = variant(workload, label);
    return (v == null) ? MissingNode.getInstance() : v.path(key);
  }

  private static String capacityCell(JsonNode l, String label) {
    JsonNode capacity = l.path("capacity");
    if (capacity.isMissingNode()) {
      return "n/a";
    }
    return rateCell(
        capacity,
        capacity.path("capacityRate").path(label),
        capacity.path("firstFailureAt").path(label));
  }

  private static String p99CapacityCell(JsonNode l, String label) {
    JsonNode capacity = l.path("capacity");
    if (capacity.isMissingNode()) {
      return "n/a";
    }
    return rateCell(
        capacity,
        capacity.path("p99CapacityRate").path(label),
        capacity.path("fellBehindAt").path(label));
  }

  private static String rateCell(JsonNode capacity, JsonNode rate, JsonNode stoppedAt) {
    if (rate.asDouble() == 0) {
      return "below " + fmt(capacity.path("rates").path(0).asDouble(), 0) + "/s";
    }
    return (stoppedAt.isMissingNode() ? "at least " : "") + fmt(rate.asDouble(), 0) + "/s";
  }

  private static String capacityRatio(JsonNode l, String key) {
    JsonNode rates = l.path("capacity").path(key);
    double stock = rates.path("stock").asDouble();
    double tuned = rates.path("tuned").asDouble();
    return (stock > 0 && tuned > 0) ? " (x" + fmt(tuned / stock, 2) + ")" : "";
  }

  private static String failed(JsonNode w) {
    JsonNode stock = variant(w, "stock");
    JsonNode tuned = variant(w, "tuned");
    long s = (stock == null) ? 0 : stock.path("errors").asLong();
    long t = (tuned == null) ? 0 : tuned.path("errors").asLong();
    return (s + t == 0) ? "" : "; failed " + s + " / " + t;
  }

  private static String percentiles(JsonNode v) {
    return (v == null)
        ? ""
        : fmt(v.path("p50Ms"), 2)
            + " / "
            + fmt(v.path("p90Ms"), 2)
            + " / "
            + fmt(v.path("p99Ms"), 2)
            + (!v.path("p99WithinSlo").asBoolean(true)
                ? " (over)"
                : v.path("withinSlo").asBoolean(true) ? "" : " (failed)");
  }

  private static String both(JsonNode stock, JsonNode tuned, Function<JsonNode, String> cell) {
    return ((stock == null) ? "-" : cell.apply(stock))
        + " / "
        + ((tuned == null) ? "-" : cell.apply(tuned));
  }

  // ---- html

  static void html(StringBuilder html, JsonNode results) {
    JsonNode l = results.path("cpuLimited");
    if (l.has("skipped")) {
      html.append("<h3>CPU-limited client: skipped</h3>\n<p>")
          .append(l.path("skipped").asText())
          .append("</p>\n");
      return;
    }
    if (!ran(l)) {
      return;
    }
    int cpus = l.path("clientCpus").asInt();
    html.append("<h3>The client on ")
        .append(cpus)
        .append(" vCPU</h3>\n<p>")
        .append(model(l))
        .append("</p>\n<p>")
        .append(cores(l))
        .append("</p>\n");
    if (!l.path("capacity").isMissingNode()) {
      html.append("<h4>Capacity sweep: P99 against the rate of steady point selects</h4>\n")
          .append("<p>Capacity with no failed query, stock: ")
          .append(capacityCell(l, "stock"))
          .append("; tuned: ")
          .append(capacityCell(l, "tuned"))
          .append(capacityRatio(l, "capacityRate"))
          .append(". By P99 alone, stock: ")
          .append(p99CapacityCell(l, "stock"))
          .append("; tuned: ")
          .append(p99CapacityCell(l, "tuned"))
          .append(capacityRatio(l, "p99CapacityRate"))
          .append(". Dashed: the SLO; a hollow point is a rate the variant failed.</p>\n")
          .append(legend(l.path("capacity").path("points").path(0)))
          .append(sweepChart(l.path("capacity")));
    }
    for (JsonNode w : l.path("workloads")) {
      html.append("<h4>")
          .append(w.path("description").asText())
          .append(", client on ")
          .append(cpus)
          .append(" vCPU (")
          .append(fmt(w.path("baseRate").asDouble(), 0))
          .append("/s base)</h4>\n")
          .append(legend(w))
          .append(Report.latencyChart(w))
          .append(Report.loadChart(w))
          .append('\n');
    }
  }

  private static String legend(JsonNode workload) {
    StringBuilder html = new StringBuilder("<div class=\"legend\">");
    int index = 0;
    for (JsonNode variant : workload.path("variants")) {
      html.append("<span style=\"color:")
          .append(Report.COLORS[index++ % Report.COLORS.length])
          .append("\">&#9632; ")
          .append(variant.path("variant").asText())
          .append("</span>");
    }
    return html.append("</div>\n").toString();
  }

  /** P99 (log scale) against rate, one line per variant, the SLO dashed. */
  static String sweepChart(JsonNode capacity) {
    int width = 760;
    int height = 280;
    int left = 50;
    int bottom = 30;
    List<String> labels = new ArrayList<>();
    double maxRate = 1;
    double maxMs = capacity.path("sloMs").asDouble(20) * 2;
    for (JsonNode point : capacity.path("points")) {
      maxRate = Math.max(maxRate, point.path("rate").asDouble());
      for (JsonNode v : point.path("variants")) {
        if (!labels.contains(v.path("variant").asText())) {
          labels.add(v.path("variant").asText());
        }
        maxMs = Math.max(maxMs, v.path("p99Ms").asDouble(0));
      }
    }
    double top = Math.log10(maxMs * 1.2);
    double plotWidth = width - left - 20;
    double plotHeight = height - bottom - 10;
    double rateSpan = maxRate * 1.05;
    Function<Double, Double> x = (rate) -> left + rate / rateSpan * plotWidth;
    Function<Double, Double> y =
        (ms) -> 10 + (top - Math.log10(Math.max(1, ms))) / top * plotHeight;
    StringBuilder svg = new StringBuilder();
    svg.append("<svg width=\"")
        .append(width)
        .append("\" height=\"")
        .append(height)
        .append("\" xmlns=\"http://www.w3.org/2000/svg\" font-size=\"10\">");
    Report.logGrid(svg, y, top, left, width - 20);
    double slo = y.apply(capacity.path("sloMs").asDouble());
    svg.append(
        String.format(
            Locale.ROOT,
            "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-dasharray=\"5,4\"/>"
                + "<text x=\"%d\" y=\"%.1f\" fill=\"#c00\">SLO %s ms</text>",
            left,
            width - 20,
            slo,
            slo,
            width - 80,
            slo - 3,
            fmt(capacity.path("sloMs").asDouble(), 0)));
    for (JsonNode point : capacity.path("points")) {
      double rate = point.path("rate").asDouble();
      svg.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\">%s</text>",
              x.apply(rate) - 10,
              height - 12,
              fmt(rate, 0)));
    }
    svg.append(
        String.format(
            Locale.ROOT, "<text x=\"%d\" y=\"%d\">arrivals/s</text>", width - 70, height - 1));
    for (int i = 0; i < labels.size(); i++) {
      String color = Report.COLORS[i % Report.COLORS.length];
      StringBuilder line = new StringBuilder();
      StringBuilder marks = new StringBuilder();
      for (JsonNode point : capacity.path("points")) {
        JsonNode v = variant(point, labels.get(i));
        if (v == null || !v.path("p99Ms").isNumber()) {
          continue;
        }
        double xx = x.apply(point.path("rate").asDouble());
        double yy = y.apply(v.path("p99Ms").asDouble());
        line.append(String.format(Locale.ROOT, "%.1f,%.1f ", xx, yy));
        marks.append(
            String.format(
                Locale.ROOT,
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" stroke=\"%s\" fill=\"%s\"/>",
                xx,
                yy,
                color,
                v.path("withinSlo").asBoolean() ? color : "#fff"));
      }
      svg.append("<polyline fill=\"none\" stroke=\"")
          .append(color)
          .append("\" stroke-width=\"1.5\" points=\"")
          .append(line)
          .append("\"/>")
          .append(marks);
    }
    return svg.append("</svg>\n").toString();
  }
}
