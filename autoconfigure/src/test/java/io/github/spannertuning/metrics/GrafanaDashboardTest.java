package io.github.spannertuning.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.spannertuning.testing.GrafanaDashboard;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The shipped dashboard's shape, checked field by field: no JSON Schema of Grafana's dashboard is
 * published as a package or Maven artifact that this build can use. The checks follow the required
 * fields and types of the classic dashboard model in Grafana's own schema ({@code @grafana/schema},
 * {@code Dashboard}, {@code Panel}, {@code RowPanel}, {@code GridPos}, {@code VariableModel}), and
 * what file provisioning needs besides: a title, a stable uid, no fixed id, and data sources
 * reached through a variable, since provisioning does not fill in an export's {@code __inputs}.
 * Each check is shown to catch a broken copy.
 */
class GrafanaDashboardTest {

  private static final Set<String> PANEL_TYPES = Set.of("timeseries", "stat", "state-timeline");

  private static final Set<String> GRAFANA_VARIABLES =
      Set.of("__range", "__rate_interval", "__interval");

  private static final Pattern UID = Pattern.compile("[A-Za-z0-9_-]{1,40}");

  private static final String DATASOURCE_UID = "${datasource}";

  @Test
  void theShippedDashboardHasEveryFieldGrafanaNeeds() throws Exception {
    GrafanaDashboard dashboard = GrafanaDashboard.load();
    assertThat(problems(dashboard.json())).isEmpty();
    assertThat(dashboard.panels()).hasSizeGreaterThanOrEqualTo(10);
  }

  @Test
  void eachCheckCatchesABrokenCopy() throws Exception {
    assertThat(broken((d) -> d.remove("schemaVersion"))).contains("schemaVersion: not an integer");
    assertThat(broken((d) -> d.put("uid", "spanner tuning")))
        .contains("uid: not 1 to 40 letters, digits, - or _");
    assertThat(broken((d) -> d.put("id", 12))).contains("id: not null");
    assertThat(broken((d) -> d.putArray("__inputs"))).contains("__inputs: provisioning ignores it");
    assertThat(broken((d) -> panel(d, 1).remove("gridPos")))
        .contains("panel 2 gridPos.x: not an integer");
    assertThat(broken((d) -> ((ObjectNode) panel(d, 1).get("gridPos")).put("x", 20)))
        .contains("panel 2 gridPos: wider than the 24 columns");
    assertThat(broken((d) -> panel(d, 2).put("id", 2))).contains("panel 2 id: 2 twice");
    assertThat(broken((d) -> ((ObjectNode) panel(d, 2).get("gridPos")).put("y", 1).put("x", 0)))
        .contains("panel 3 gridPos: overlaps panel 2");
    assertThat(broken((d) -> panel(d, 1).put("type", "graph")))
        .contains("panel 2 type: graph, not one of " + PANEL_TYPES);
    assertThat(broken((d) -> ((ObjectNode) panel(d, 1).get("datasource")).put("uid", "prom-1")))
        .contains("panel 2 datasource: not the $datasource variable's");
    assertThat(broken((d) -> target(d, 1, 0).put("expr", "rate(x[$window])")))
        .contains("panel 2 target A: $window is no variable of the dashboard");
    assertThat(broken((d) -> target(d, 1, 0).remove("refId"))).contains("panel 2 target: no refId");
    assertThat(broken((d) -> target(d, 1, 0).put("instant", true)))
        .contains("panel 2 target A: a timeseries panel's query must be a range query");
    assertThat(broken((d) -> ((ArrayNode) d.at("/templating/list")).remove(0)))
        .contains("templating: no datasource variable of type datasource for prometheus");
  }

  private static List<String> broken(Consumer<ObjectNode> breaking) throws Exception {
    ObjectNode copy = GrafanaDashboard.load().json().deepCopy();
    breaking.accept(copy);
    return problems(copy);
  }

  private static ObjectNode panel(ObjectNode dashboard, int index) {
    return (ObjectNode) dashboard.get("panels").get(index);
  }

  private static ObjectNode target(ObjectNode dashboard, int panel, int index) {
    return (ObjectNode) panel(dashboard, panel).get("targets").get(index);
  }

  /** What Grafana would reject or provisioning would miss; empty when nothing. */
  static List<String> problems(JsonNode dashboard) {
    List<String> problems = new ArrayList<>();
    if (!dashboard.path("schemaVersion").isInt()) {
      problems.add("schemaVersion: not an integer");
    } else if (dashboard.get("schemaVersion").asInt() < 36) {
      problems.add("schemaVersion: below 36, where data sources are referred to by uid");
    }
    if (dashboard.path("title").asText().isBlank()) {
      problems.add("title: missing");
    }
    if (!UID.matcher(dashboard.path("uid").asText()).matches()) {
      problems.add("uid: not 1 to 40 letters, digits, - or _");
    }
    if (!dashboard.path("id").isNull()) {
      problems.add("id: not null");
    }
    if (dashboard.has("__inputs")) {
      problems.add("__inputs: provisioning ignores it");
    }
    if (!dashboard.at("/time/from").isTextual() || !dashboard.at("/time/to").isTextual()) {
      problems.add("time: no from and to");
    }
    for (JsonNode annotation : dashboard.at("/annotations/list")) {
      for (String field : List.of("name", "iconColor")) {
        if (!annotation.path(field).isTextual()) {
          problems.add("annotation: no " + field);
        }
      }
      if (!annotation.path("enable").isBoolean() || !annotation.path("datasource").isObject()) {
        problems.add("annotation: no enable or datasource");
      }
    }
    Set<String> variables = new HashSet<>(GRAFANA_VARIABLES);
    checkVariables(dashboard, variables, problems);
    if (!dashboard.path("panels").isArray()) {
      problems.add("panels: not an array");
      return problems;
    }
    Set<Integer> ids = new HashSet<>();
    Set<String> titles = new HashSet<>();
    List<int[]> cells = new ArrayList<>();
    List<String> cellNames = new ArrayList<>();
    for (JsonNode panel : dashboard.get("panels")) {
      String name = "panel " + panel.path("id").asText("?");
      if (!panel.path("id").isInt()) {
        problems.add(name + " id: not an integer");
      } else if (!ids.add(panel.get("id").asInt())) {
        problems.add(name + " id: " + panel.get("id").asInt() + " twice");
      }
      checkGridPos(panel, name, cells, cellNames, problems);
      if (panel.path("type").asText().equals("row")) {
        if (!panel.path("collapsed").isBoolean() || !panel.path("panels").isArray()) {
          problems.add(name + ": a row needs collapsed and panels");
        }
        continue;
      }
      checkPanel(panel, name, variables, titles, problems);
    }
    return problems;
  }

  private static void checkVariables(
      JsonNode dashboard, Set<String> variables, List<String> problems) {
    boolean datasource = false;
    for (JsonNode variable : dashboard.at("/templating/list")) {
      String name = variable.path("name").asText();
      String type = variable.path("type").asText();
      if (name.isBlank() || type.isBlank()) {
        problems.add("templating: a variable with no name or type");
        continue;
      }
      variables.add(name);
      if (name.equals("datasource")
          && type.equals("datasource")
          && variable.path("query").asText().equals("prometheus")) {
        datasource = true;
      }
      if (type.equals("query") && !isDatasourceVariable(variable.path("datasource"))) {
        problems.add("variable " + name + " datasource: not the $datasource variable's");
      }
    }
    if (!datasource) {
      problems.add("templating: no datasource variable of type datasource for prometheus");
    }
  }

  private static void checkGridPos(
      JsonNode panel, String name, List<int[]> cells, List<String> names, List<String> problems) {
    JsonNode grid = panel.path("gridPos");
    int[] cell = new int[4];
    String[] fields = {"x", "y", "w", "h"};
    for (int i = 0; i < fields.length; i++) {
      if (!grid.path(fields[i]).isInt()) {
        problems.add(name + " gridPos." + fields[i] + ": not an integer");
        return;
      }
      cell[i] = grid.get(fields[i]).asInt();
    }
    if (cell[0] < 0 || cell[1] < 0 || cell[2] < 1 || cell[3] < 1) {
      problems.add(name + " gridPos: negative or empty");
    }
    if (cell[0] + cell[2] > 24) {
      problems.add(name + " gridPos: wider than the 24 columns");
    }
    for (int other = 0; other < cells.size(); other++) {
      int[] o = cells.get(other);
      boolean apart =
          cell[0] + cell[2] <= o[0]
              || o[0] + o[2] <= cell[0]
              || cell[1] + cell[3] <= o[1]
              || o[1] + o[3] <= cell[1];
      if (!apart) {
        problems.add(name + " gridPos: overlaps " + names.get(other));
      }
    }
    cells.add(cell);
    names.add(name);
  }

  private static void checkPanel(
      JsonNode panel,
      String name,
      Set<String> variables,
      Set<String> titles,
      List<String> problems) {
    String type = panel.path("type").asText();
    if (!PANEL_TYPES.contains(type)) {
      problems.add(name + " type: " + type + ", not one of " + PANEL_TYPES);
    }
    String title = panel.path("title").asText();
    if (title.isBlank() || !titles.add(title)) {
      problems.add(name + " title: missing or used twice");
    }
    if (!isDatasourceVariable(panel.path("datasource"))) {
      problems.add(name + " datasource: not the $datasource variable's");
    }
    if (!panel.path("fieldConfig").path("defaults").isObject()
        || !panel.path("fieldConfig").path("overrides").isArray()) {
      problems.add(name + " fieldConfig: no defaults and overrides");
    }
    if (!panel.path("targets").isArray() || panel.path("targets").isEmpty()) {
      problems.add(name + " targets: none");
      return;
    }
    Set<String> refIds = new HashSet<>();
    for (JsonNode target : panel.get("targets")) {
      String refId = target.path("refId").asText();
      if (refId.isBlank()) {
        problems.add(name + " target: no refId");
        continue;
      }
      String targetName = name + " target " + refId;
      if (!refIds.add(refId)) {
        problems.add(targetName + ": refId twice");
      }
      if (!isDatasourceVariable(target.path("datasource"))) {
        problems.add(targetName + " datasource: not the $datasource variable's");
      }
      String expr = target.path("expr").asText();
      if (expr.isBlank()) {
        problems.add(targetName + ": no expr");
      }
      for (String used : GrafanaDashboard.variablesIn(expr)) {
        if (!variables.contains(used)) {
          problems.add(targetName + ": $" + used + " is no variable of the dashboard");
        }
      }
      boolean instant = target.path("instant").asBoolean(false);
      if (type.equals("stat") && !instant) {
        problems.add(targetName + ": a stat panel's query must be instant");
      }
      if (!type.equals("stat") && instant) {
        problems.add(targetName + ": a " + type + " panel's query must be a range query");
      }
    }
  }

  private static boolean isDatasourceVariable(JsonNode datasource) {
    return datasource.path("type").asText().equals("prometheus")
        && datasource.path("uid").asText().equals(DATASOURCE_UID);
  }
}
