package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.testing.ProjectFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The property tables of the README and of docs/configuration.md list exactly the keys of the
 * configuration metadata that Boot's processor generated from {@link SpannerTuningProperties} and
 * {@link SpannerTuningEndpointProperties}: a property added to a class and not to the docs, or
 * dropped from it and left in them, fails here.
 */
class SpannerTuningPropertiesDocumentationTests {

  /**
   * A table row whose first cell is a {@code spanner.tuning.*} or {@code
   * management.endpoint.spannertuning.*} key in backquotes.
   */
  private static final Pattern TABLE_ROW =
      Pattern.compile(
          "^\\|\\s*`((?:spanner\\.tuning|management\\.endpoint\\.spannertuning)\\.[a-z0-9.-]+)`\\s*\\|",
          Pattern.MULTILINE);

  @ParameterizedTest
  @ValueSource(strings = {"README.md", "docs/configuration.md"})
  void propertyTableListsEveryKeyOfTheMetadata(String document) throws IOException {
    Path file = ProjectFiles.root().resolve(document);
    Set<String> documented = new TreeSet<>();
    Matcher row = TABLE_ROW.matcher(Files.readString(file));
    while (row.find()) {
      documented.add(row.group(1));
    }
    Set<String> keys = new TreeSet<>(ConfigurationMetadata.spannerTuningKeys().keySet());
    keys.addAll(ConfigurationMetadata.endpointKeys().keySet());
    assertThat(documented)
        .as("spanner.tuning.* and the endpoint's keys in the property tables of " + document)
        .containsExactlyElementsOf(keys);
  }
}
