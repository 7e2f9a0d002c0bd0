package io.github.spannertuning.trace;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.testing.ProjectFiles;
import io.opentelemetry.api.common.AttributeKey;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Traces section of docs/metrics-and-endpoint.md names exactly the attributes and values the
 * runtime sets.
 */
class TracesDocumentationTests {

  /** A table row whose first cell is a name or value in backquotes. */
  private static final Pattern TABLE_ROW =
      Pattern.compile("^\\|\\s*`([^`]+)`\\s*\\|", Pattern.MULTILINE);

  @Test
  void theTracesSectionListsEveryAttributeAndValue() throws Exception {
    String page = Files.readString(ProjectFiles.root().resolve("docs/metrics-and-endpoint.md"));
    int start = page.indexOf("\n## Traces\n");
    assertThat(start).as("the Traces section").isNotNegative();
    int end = page.indexOf("\n## ", start + 1);
    String section = page.substring(start, (end < 0) ? page.length() : end);
    Set<String> documented = new TreeSet<>();
    Matcher row = TABLE_ROW.matcher(section);
    while (row.find()) {
      documented.add(row.group(1));
    }
    Set<String> set = new TreeSet<>();
    for (Field field : Traces.class.getDeclaredFields()) {
      if (!Modifier.isStatic(field.getModifiers())) {
        continue;
      }
      field.setAccessible(true);
      Object value = field.get(null);
      if (value instanceof AttributeKey<?> key) {
        set.add(key.getKey());
      } else if (value instanceof String name && !name.contains(".")) {
        set.add(name);
      }
    }
    assertThat(documented).containsExactlyElementsOf(set);
  }
}
