package io.github.spannertuning.sample.backend;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.SpannerOptions;
import io.grpc.ManagedChannelBuilder;

/** The Spanner backend the sample runs on, chosen at start-up by {@link BackendSelector}. */
public final class SampleBackend implements AutoCloseable {

  /** The kinds of backend. */
  public enum Kind {
    EMULATOR_STARTED,
    EMULATOR_HOST,
    CLOUD_SPANNER,
    EMBEDDED_FAKE
  }

  private final Kind kind;

  private final String description;

  private final String emulatorHost;

  private final EmulatorProcess emulator;

  private final EmbeddedFakeSpanner fake;

  private SampleBackend(
      Kind kind,
      String description,
      String emulatorHost,
      EmulatorProcess emulator,
      EmbeddedFakeSpanner fake) {
    this.kind = kind;
    this.description = description;
    this.emulatorHost = emulatorHost;
    this.emulator = emulator;
    this.fake = fake;
  }

  static SampleBackend startedEmulator(EmulatorProcess emulator, String binary) {
    return new SampleBackend(
        Kind.EMULATOR_STARTED,
        "the Cloud Spanner emulator ("
            + binary
            + ", started by the sample on "
            + emulator.hostPort()
            + ")",
        emulator.hostPort(),
        emulator,
        null);
  }

  static SampleBackend emulatorAt(String hostPort) {
    return new SampleBackend(
        Kind.EMULATOR_HOST,
        "the Cloud Spanner emulator at " + hostPort + " (SPANNER_EMULATOR_HOST)",
        hostPort,
        null,
        null);
  }

  static SampleBackend cloudSpanner() {
    return new SampleBackend(
        Kind.CLOUD_SPANNER,
        "Cloud Spanner (spring.cloud.gcp.spanner.*, application credentials)",
        null,
        null,
        null);
  }

  static SampleBackend embeddedFake(EmbeddedFakeSpanner fake) {
    return new SampleBackend(
        Kind.EMBEDDED_FAKE,
        "the embedded FAKE Spanner on 127.0.0.1:"
            + fake.port()
            + " (not Spanner: an in-process imitation that answers only this sample's requests)",
        null,
        null,
        fake);
  }

  public Kind kind() {
    return this.kind;
  }

  /** One phrase for the start-up line and the page. */
  public String description() {
    return this.description;
  }

  /** Whether the sample creates the instance and the database itself (an emulator starts empty). */
  public boolean isEmulator() {
    return this.emulatorHost != null;
  }

  public boolean needsCredentials() {
    return this.kind == Kind.CLOUD_SPANNER;
  }

  /** The embedded fake, when that is the backend. */
  public EmbeddedFakeSpanner fake() {
    return this.fake;
  }

  /**
   * Points the client at this backend; Cloud Spanner needs nothing beyond spring-cloud-gcp's
   * settings.
   */
  void configure(SpannerOptions.Builder builder) {
    if (this.emulatorHost != null) {
      builder.setEmulatorHost(this.emulatorHost);
    } else if (this.fake != null) {
      // The client reads SPANNER_EMULATOR_HOST itself; the fake must win over it.
      builder
          .setEmulatorHost(null)
          .setHost("http://127.0.0.1:" + this.fake.port())
          .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
          .setCredentials(NoCredentials.getInstance());
    }
    if (this.kind != Kind.CLOUD_SPANNER) {
      // Nothing to export to: no Cloud Monitoring behind a local backend.
      builder.setBuiltInMetricsEnabled(false);
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (this.emulator != null) {
      this.emulator.close();
    }
    if (this.fake != null) {
      this.fake.close();
    }
  }
}
