package io.github.spannertuning.sample.backend;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The sample's own settings ({@code sample.*}).
 *
 * @param backend where the sample's data lives; {@code auto} picks the first that exists: {@code
 *     SPANNER_EMULATOR_HOST}, an emulator binary to start, else the embedded fake
 * @param emulator how to find the emulator binary
 * @param embedded the embedded fake's simulated service time
 * @param seedSingers how many singers to seed (each with three albums)
 */
@ConfigurationProperties("sample")
public record SampleProperties(
    @DefaultValue("auto") Backend backend,
    @DefaultValue Emulator emulator,
    @DefaultValue Embedded embedded,
    @DefaultValue("1000") int seedSingers) {

  public SampleProperties {
    if (seedSingers < 1 || seedSingers > 100_000) {
      throw new IllegalArgumentException(
          "Set 'sample.seed-singers' to an integer from 1 to 100000 (was " + seedSingers + ")");
    }
  }

  /** The backend choices. */
  public enum Backend {
    /** The first of: SPANNER_EMULATOR_HOST, an emulator binary found, the embedded fake. */
    AUTO,
    /** Start the official emulator (fails when no binary is found). */
    EMULATOR,
    /** An emulator already running at {@code SPANNER_EMULATOR_HOST}. */
    EMULATOR_HOST,
    /** Cloud Spanner, configured by {@code spring.cloud.gcp.spanner.*} and credentials. */
    SPANNER,
    /** The embedded fake (not Spanner). */
    EMBEDDED
  }

  /**
   * Where the emulator binary is looked for.
   *
   * @param binary an explicit {@code emulator_main}; it must exist when set
   * @param searchLocations looked in after {@code SPANNER_EMULATOR_BINARY}, in order; default: the
   *     usual gcloud install locations
   */
  public record Emulator(Path binary, List<Path> searchLocations) {

    private static final String RELATIVE = "bin/cloud_spanner_emulator/emulator_main";

    /** The locations searched: the property, or where gcloud's packages and installer put it. */
    public List<Path> locations() {
      if (this.searchLocations != null) {
        return this.searchLocations;
      }
      return List.of(
          Path.of("/usr/lib/google-cloud-sdk").resolve(RELATIVE),
          Path.of("/usr/share/google-cloud-sdk").resolve(RELATIVE),
          Path.of("/opt/google-cloud-sdk").resolve(RELATIVE),
          Path.of(System.getProperty("user.home"), "google-cloud-sdk").resolve(RELATIVE));
    }
  }

  /**
   * The embedded fake answers each read or query after a random time in this range.
   *
   * @param minServiceTime shortest simulated service time
   * @param maxServiceTime longest simulated service time
   */
  public record Embedded(
      @DefaultValue("2ms") Duration minServiceTime, @DefaultValue("5ms") Duration maxServiceTime) {

    public Embedded {
      if (minServiceTime.isNegative() || maxServiceTime.compareTo(minServiceTime) < 0) {
        throw new IllegalArgumentException(
            "Set 'sample.embedded.min-service-time' to 0 or more and 'sample.embedded.max-service-time'"
                + " to at least that (were "
                + minServiceTime
                + " and "
                + maxServiceTime
                + ")");
      }
    }
  }
}
