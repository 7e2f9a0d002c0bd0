package io.github.spannertuning.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Grafana dashboard the project ships, {@code docs/grafana/spanner-tuning.json}, as a test
 * reads it: its panels' queries and its variables, with Grafana's variables expanded as Grafana
 * would before it sends a query to Prometheus. Tests run the queries of the shipped file, not
 * copies.
 */
public final class GrafanaDashboard {

  /** The dashboard's path in the repository. */
  public static final String PATH = "docs/grafana/spanner-tuning.json";

  /** {@code $name} or {@code ${name}}: a dashboard variable or one of Grafana's own. */
  private static final Pattern VARIABLE =
      Pattern.compile("\\$\\{([A-Za-z0-9_]+)}|\\$([A-Za-z0-9_]+)");

  /** A query variable's {@code label_values(selector, label)}. */
  private static final Pattern LABEL_VALUES =
      Pattern.compile("^label_values\\((.+),\\s*([A-Za-z_][A-Za-z0-9_]*)\\)$");

  private final JsonNode json;

  /** One query of a panel, as written in the file. */
  public record Target(String refId, String expr, boolean instant) {

    /** The query as Grafana sends it, with {@code variables} expanded: see {@link #expand}. */
    public String expand(Map<String, String> variables) {
      return GrafanaDashboard.expand(this.expr, variables);
    }
  }

  /** A panel that queries Prometheus; rows are not panels here. */
  public record Panel(int id, String type, String title, List<Target> targets) {

    public Target target(String refId) {
      return this.targets.stream()
          .filter((t) -> t.refId().equals(refId))
          .findFirst()
          .orElseThrow(
              () -> new IllegalArgumentException("no target " + refId + " in panel " + this.title));
    }
  }

  /** A dashboard variable; {@code query} is Grafana's, such as {@code label_values(...)}. */
  public record Variable(String name, String type, String query) {

    /**
     * A {@code label_values(selector, label)} query as PromQL that gives the same values, one
     * series per value: {@code group by (label) (selector)}.
     */
    public String promql() {
      Matcher labelValues = LABEL_VALUES.matcher(this.query.trim());
      if (!labelValues.matches()) {
        throw new IllegalStateException(
            "variable " + this.name + " is not a label_values query: " + this.query);
      }
      return "group by (" + labelValues.group(2) + ") (" + labelValues.group(1) + ")";
    }
  }

  private GrafanaDashboard(JsonNode json) {
    this.json = json;
  }

  /** Reads the shipped dashboard. */
  public static GrafanaDashboard load() throws IOException {
    return load(ProjectFiles.root().resolve(PATH));
  }

  public static GrafanaDashboard load(Path file) throws IOException {
    return new GrafanaDashboard(new ObjectMapper().readTree(file.toFile()));
  }

  /** The file as JSON. */
  public JsonNode json() {
    return this.json;
  }

  /** Every panel that queries, in the file's order, those inside collapsed rows included. */
  public List<Panel> panels() {
    List<Panel> panels = new ArrayList<>();
    for (JsonNode panel : this.json.path("panels")) {
      if (panel.path("type").asText().equals("row")) {
        panel.path("panels").forEach((nested) -> panels.add(panel(nested)));
      } else {
        panels.add(panel(panel));
      }
    }
    return panels;
  }

  /** The panel of that title. */
  public Panel panel(String title) {
    return panels().stream()
        .filter((p) -> p.title().equals(title))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("no panel titled " + title));
  }

  /** The dashboard's variables, in order. */
  public List<Variable> variables() {
    List<Variable> variables = new ArrayList<>();
    for (JsonNode variable : this.json.path("templating").path("list")) {
      JsonNode query = variable.path("query");
      variables.add(
          new Variable(
              variable.path("name").asText(),
              variable.path("type").asText(),
              query.isObject() ? query.path("query").asText() : query.asText()));
    }
    return variables;
  }

  /**
   * The variables a test sets for a query over the whole fleet, as the dashboard opens with {@code
   * All} selected: {@code client} and {@code instance} match everything; {@code $__range} is the
   * time range; {@code $__rate_interval} is what Grafana makes of a Prometheus data source whose
   * scrape interval is set: four scrape intervals, at least.
   */
  public static Map<String, String> allOf(Duration range, Duration scrapeInterval) {
    Map<String, String> variables = new LinkedHashMap<>();
    variables.put("client", ".*");
    variables.put("instance", ".*");
    variables.put("__range", promDuration(range));
    variables.put("__rate_interval", promDuration(scrapeInterval.multipliedBy(4)));
    return variables;
  }

  /**
   * Replaces each {@code $name} and {@code ${name}} with its value.
   *
   * @throws IllegalArgumentException for a variable {@code variables} lacks: the query would reach
   *     Prometheus with a {@code $} in it
   */
  public static String expand(String expr, Map<String, String> variables) {
    Matcher variable = VARIABLE.matcher(expr);
    StringBuilder expanded = new StringBuilder();
    while (variable.find()) {
      String name = (variable.group(1) != null) ? variable.group(1) : variable.group(2);
      String value = variables.get(name);
      if (value == null) {
        throw new IllegalArgumentException("no value for $" + name + " in " + expr);
      }
      variable.appendReplacement(expanded, Matcher.quoteReplacement(value));
    }
    variable.appendTail(expanded);
    return expanded.toString();
  }

  /** The names of the variables a query uses, Grafana's own ({@code __range}) included. */
  public static List<String> variablesIn(String expr) {
    List<String> names = new ArrayList<>();
    Matcher variable = VARIABLE.matcher(expr);
    while (variable.find()) {
      names.add((variable.group(1) != null) ? variable.group(1) : variable.group(2));
    }
    return names;
  }

  /** A duration as PromQL writes it: whole seconds, or milliseconds. */
  public static String promDuration(Duration duration) {
    long millis = duration.toMillis();
    return (millis % 1000 == 0) ? (millis / 1000) + "s" : millis + "ms";
  }

  private static Panel panel(JsonNode panel) {
    List<Target> targets = new ArrayList<>();
    for (JsonNode target : panel.path("targets")) {
      targets.add(
          new Target(
              target.path("refId").asText(),
              target.path("expr").asText(),
              target.path("instant").asBoolean(false)));
    }
    return new Panel(
        panel.path("id").asInt(),
        panel.path("type").asText(),
        panel.path("title").asText(),
        targets);
  }
}
