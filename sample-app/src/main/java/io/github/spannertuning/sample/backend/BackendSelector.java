package io.github.spannertuning.sample.backend;

import io.github.spannertuning.sample.backend.SampleProperties.Backend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.core.env.Environment;

/**
 * Chooses the sample's backend. {@code auto}: an emulator the user runs ({@code
 * SPANNER_EMULATOR_HOST}), else the official emulator started by the sample, else the embedded
 * fake, saying so in one line. Cloud Spanner is never picked automatically: the sample writes seed
 * rows, so it must be asked for ({@code sample.backend=spanner}).
 */
final class BackendSelector {

  static final String EMULATOR_HOST_ENV = "SPANNER_EMULATOR_HOST";

  static final String EMULATOR_BINARY_ENV = "SPANNER_EMULATOR_BINARY";

  private static final Log logger = LogFactory.getLog(BackendSelector.class);

  private final SampleProperties properties;

  private final Environment environment;

  private final List<String> ddl;

  BackendSelector(SampleProperties properties, Environment environment, List<String> ddl) {
    this.properties = properties;
    this.environment = environment;
    this.ddl = ddl;
  }

  SampleBackend select() throws IOException, InterruptedException {
    Backend backend = this.properties.backend();
    String emulatorHost = this.environment.getProperty(EMULATOR_HOST_ENV);
    boolean hostSet = emulatorHost != null && !emulatorHost.isBlank();
    switch (backend) {
      case EMULATOR_HOST:
        if (!hostSet) {
          throw new NoSpannerBackendException(
              "sample.backend=emulator-host, but " + EMULATOR_HOST_ENV + " is not set");
        }
        return SampleBackend.emulatorAt(emulatorHost.trim());
      case SPANNER:
        return SampleBackend.cloudSpanner();
      case EMBEDDED:
        return embeddedFake();
      case EMULATOR:
        return startEmulator(
            findEmulator()
                .orElseThrow(
                    () ->
                        new NoSpannerBackendException(
                            "sample.backend=emulator, but " + notFound())));
      default:
        if (hostSet) {
          return SampleBackend.emulatorAt(emulatorHost.trim());
        }
        Optional<Path> binary = findEmulator();
        if (binary.isPresent()) {
          return startEmulator(binary.get());
        }
        logger.warn(
            "No Spanner backend found ("
                + notFound()
                + "; "
                + EMULATOR_HOST_ENV
                + " not set; Cloud Spanner not chosen with sample.backend=spanner): running on the"
                + " embedded FAKE Spanner, an in-process imitation that is not Spanner");
        return embeddedFake();
    }
  }

  private Optional<Path> findEmulator() {
    Path explicit = this.properties.emulator().binary();
    if (explicit != null) {
      if (!Files.isExecutable(explicit)) {
        throw new NoSpannerBackendException(
            "sample.emulator.binary=" + explicit + " is not an executable file");
      }
      return Optional.of(explicit);
    }
    String fromEnv = this.environment.getProperty(EMULATOR_BINARY_ENV);
    if (fromEnv != null && !fromEnv.isBlank()) {
      Path path = Path.of(fromEnv.trim());
      if (!Files.isExecutable(path)) {
        throw new NoSpannerBackendException(
            EMULATOR_BINARY_ENV + "=" + fromEnv + " is not an executable file");
      }
      return Optional.of(path);
    }
    return this.properties.emulator().locations().stream().filter(Files::isExecutable).findFirst();
  }

  private String notFound() {
    return "no Cloud Spanner emulator at "
        + String.join(
            ", ", this.properties.emulator().locations().stream().map(Path::toString).toList());
  }

  private SampleBackend startEmulator(Path binary) throws IOException, InterruptedException {
    return SampleBackend.startedEmulator(EmulatorProcess.start(binary), binary.toString());
  }

  private SampleBackend embeddedFake() throws IOException {
    SampleProperties.Embedded embedded = this.properties.embedded();
    return SampleBackend.embeddedFake(
        new EmbeddedFakeSpanner(this.ddl, embedded.minServiceTime(), embedded.maxServiceTime())
            .start());
  }
}
