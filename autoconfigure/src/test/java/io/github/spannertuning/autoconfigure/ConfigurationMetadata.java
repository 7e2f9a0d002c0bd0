package io.github.spannertuning.autoconfigure;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiPredicate;

/**
 * The keys of the configuration metadata that Boot's configuration processor generated from this
 * module's properties classes when it was compiled, with their types: what an IDE shows users, and
 * the yardstick for the failure analyzer and the docs.
 */
final class ConfigurationMetadata {

  private ConfigurationMetadata() {}

  /** Key to type (such as {@code java.lang.Boolean}), sorted by key. */
  static Map<String, String> spannerTuningKeys() {
    return keys((name, source) -> name.startsWith("spanner.tuning."));
  }

  /**
   * The endpoint's own keys, from {@link SpannerTuningEndpointProperties}, with their types: not
   * the keys Boot adds for every endpoint ({@code access}, {@code cache.time-to-live}).
   */
  static Map<String, String> endpointKeys() {
    return keys((name, source) -> source.equals(SpannerTuningEndpointProperties.class.getName()));
  }

  private static Map<String, String> keys(BiPredicate<String, String> nameAndSource) {
    Path file = classesDirectory().resolve("META-INF/spring-configuration-metadata.json");
    if (!Files.isRegularFile(file)) {
      throw new IllegalStateException(
          file + " is missing: the configuration processor did not run on this module");
    }
    try {
      JsonNode metadata = new ObjectMapper().readTree(file.toFile());
      Map<String, String> keys = new TreeMap<>();
      for (JsonNode property : metadata.get("properties")) {
        String name = property.get("name").asText();
        if (nameAndSource.test(name, property.path("sourceType").asText())) {
          keys.put(name, property.get("type").asText());
        }
      }
      return keys;
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }

  /** The directory the properties class was compiled to (not a jar of Boot's own metadata). */
  private static Path classesDirectory() {
    try {
      return Path.of(
          SpannerTuningProperties.class
              .getProtectionDomain()
              .getCodeSource()
              .getLocation()
              .toURI());
    } catch (URISyntaxException ex) {
      throw new IllegalStateException(ex);
    }
  }
}
