package io.github.spannertuning.sample.backend;

import com.google.spanner.v1.TypeCode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The tables of the sample's DDL as the embedded fake needs them: names, column types, primary
 * keys. Understands the DDL this sample ships ({@code CREATE TABLE ... PRIMARY KEY (...)}, scalar
 * columns); indexes and interleaving are accepted and not modelled.
 */
final class FakeSchema {

  private static final Pattern TABLE =
      Pattern.compile(
          "CREATE\\s+TABLE\\s+(\\w+)\\s*\\((.*?)\\)\\s*PRIMARY\\s+KEY\\s*\\(([^)]*)\\)",
          Pattern.CASE_INSENSITIVE | Pattern.DOTALL);

  private static final Pattern COLUMN =
      Pattern.compile("^\\s*(\\w+)\\s+(\\w+)", Pattern.CASE_INSENSITIVE);

  private FakeSchema() {}

  record Column(String name, TypeCode type) {}

  record TableDef(String name, List<Column> columns, List<String> keyColumns) {

    int indexOf(String column) {
      for (int i = 0; i < this.columns.size(); i++) {
        if (this.columns.get(i).name().equalsIgnoreCase(column)) {
          return i;
        }
      }
      return -1;
    }
  }

  static Map<String, TableDef> parse(List<String> ddlStatements) {
    Map<String, TableDef> tables = new LinkedHashMap<>();
    for (String statement : ddlStatements) {
      Matcher table = TABLE.matcher(statement);
      if (!table.find()) {
        continue;
      }
      List<Column> columns = new ArrayList<>();
      for (String line : table.group(2).split(",")) {
        Matcher column = COLUMN.matcher(line);
        if (column.find()) {
          columns.add(new Column(column.group(1), typeOf(column.group(2), table.group(1))));
        }
      }
      List<String> keys =
          Arrays.stream(table.group(3).split(","))
              .map(String::trim)
              .filter((k) -> !k.isEmpty())
              .toList();
      tables.put(table.group(1).toLowerCase(), new TableDef(table.group(1), columns, keys));
    }
    return tables;
  }

  private static TypeCode typeOf(String ddlType, String table) {
    return switch (ddlType.toUpperCase()) {
      case "INT64" -> TypeCode.INT64;
      case "STRING" -> TypeCode.STRING;
      case "BOOL" -> TypeCode.BOOL;
      case "FLOAT64" -> TypeCode.FLOAT64;
      case "TIMESTAMP" -> TypeCode.TIMESTAMP;
      case "DATE" -> TypeCode.DATE;
      default ->
          throw new IllegalArgumentException(
              "The embedded fake does not model column type " + ddlType + " (table " + table + ")");
    };
  }
}
