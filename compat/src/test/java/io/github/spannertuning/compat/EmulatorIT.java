package io.github.spannertuning.compat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.InstanceConfigId;
import com.google.cloud.spanner.InstanceId;
import com.google.cloud.spanner.InstanceInfo;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.gson.JsonObject;
import io.github.spannertuning.testing.SpannerEmulator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The official Cloud Spanner emulator through spring-cloud-gcp's emulator auto-configuration, which
 * builds the {@code SpannerOptions} bean on every line (Boot 4 included); the application builds
 * the {@code Spanner} bean from it. Skipped, saying why, where the emulator binary is missing.
 */
@SpringBootTest(
    classes = CompatApplication.class,
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {
      "compat.spanner.mode=emulator-options",
      "spring.cloud.gcp.spanner.emulator.enabled=true"
    })
class EmulatorIT {

  private static final String DDL =
      "CREATE TABLE Singers (id INT64 NOT NULL, name STRING(64)) PRIMARY KEY (id)";

  // As in the application's application.properties.
  private static final String PROJECT = "compat-project";

  private static final String INSTANCE = "compat-instance";

  private static final String DATABASE = "compat-database";

  // Started on first use, not when the class is initialized: Spring's test AOT processing
  // initializes it in a JVM that runs none of its tests, so no @AfterAll.
  private static SpannerEmulator emulator;

  private static boolean emulatorLookedFor;

  @DynamicPropertySource
  static void emulatorHost(DynamicPropertyRegistry registry) {
    // Read when the client is built. Without an emulator the context still starts (nothing
    // connects); each test is then skipped.
    registry.add(
        "spring.cloud.gcp.spanner.emulator-host",
        () -> (emulator() != null) ? emulator().hostPort() : "127.0.0.1:9");
  }

  @Value("${local.server.port}")
  int port;

  @Autowired CompatDatabase database;

  DatabaseClient client;

  @BeforeEach
  void client() {
    this.client = this.database.client();
  }

  /**
   * The application's client closes before its emulator: a 6.89 client deletes its pooled sessions
   * when it closes, and against a closed emulator it would wait out those calls when the context
   * closes at the JVM's exit (30 s, after which Surefire kills the test JVM). Closing it again then
   * does nothing.
   */
  @AfterAll
  static synchronized void stopEmulator(@Autowired ObjectProvider<Spanner> spanner)
      throws InterruptedException {
    spanner.ifAvailable(Spanner::close);
    if (emulator != null) {
      emulator.close();
    }
  }

  @Test
  void tunedClientReadsAndWritesOnTheEmulator() throws Exception {
    assumeTrue(emulator() != null, SpannerEmulator.notFoundMessage());
    int rows = 20;
    Long inserted =
        this.client
            .readWriteTransaction()
            .run(
                (tx) -> {
                  long count = 0;
                  for (int id = 1; id <= rows; id++) {
                    count +=
                        tx.executeUpdate(
                            Statement.newBuilder(
                                    "INSERT INTO Singers (id, name) VALUES (@id, @name)")
                                .bind("id")
                                .to(id)
                                .bind("name")
                                .to("singer-" + id)
                                .build());
                  }
                  return count;
                });
    assertThat(inserted).isEqualTo(rows);
    for (int id = 1; id <= rows; id++) {
      try (ResultSet rs =
          this.client
              .singleUse()
              .executeQuery(
                  Statement.newBuilder("SELECT id, name FROM Singers WHERE id = @id")
                      .bind("id")
                      .to(id)
                      .build())) {
        assertThat(rs.next()).isTrue();
        assertThat(rs.getString("name")).isEqualTo("singer-" + id);
        assertThat(rs.next()).isFalse();
      }
    }
    try (ResultSet rs =
        this.client.singleUse().executeQuery(Statement.of("SELECT COUNT(*) FROM Singers"))) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getLong(0)).isEqualTo(rows);
    }

    JsonObject client = Endpoint.client(this.port, "spanner");
    Endpoint.assertFeaturesAsExpected(client);
    Endpoint.assertVersionsAsExpected(client);
    assertThat(Endpoint.calls(client)).isGreaterThanOrEqualTo(rows + 2);
    CompatLine.report(
        "emulator",
        "20 rows written in one read/write transaction and read back single-use, features as expected");
  }

  /**
   * The emulator, started on the first call (null where the binary is missing); stopped in
   * {@code @AfterAll}, or when the JVM exits.
   */
  private static synchronized SpannerEmulator emulator() {
    if (!emulatorLookedFor) {
      emulator = start();
      emulatorLookedFor = true;
    }
    return emulator;
  }

  /**
   * Starts the emulator and creates the application's instance and database with a plain admin
   * client, before the application's client exists: a database client that meets a missing database
   * remembers that.
   */
  private static SpannerEmulator start() {
    if (SpannerEmulator.find().isEmpty()) {
      CompatLine.report("emulator", "skipped: " + SpannerEmulator.notFoundMessage());
      return null;
    }
    SpannerEmulator started = null;
    try {
      started = SpannerEmulator.start();
      try (Spanner admin =
          SpannerOptions.newBuilder()
              .setProjectId(PROJECT)
              .setEmulatorHost(started.hostPort())
              .setCredentials(NoCredentials.getInstance())
              .build()
              .getService()) {
        admin
            .getInstanceAdminClient()
            .createInstance(
                InstanceInfo.newBuilder(InstanceId.of(PROJECT, INSTANCE))
                    .setInstanceConfigId(InstanceConfigId.of(PROJECT, "emulator-config"))
                    .setDisplayName("compat")
                    .setNodeCount(1)
                    .build())
            .get(60, TimeUnit.SECONDS);
        admin
            .getDatabaseAdminClient()
            .createDatabase(INSTANCE, DATABASE, List.of(DDL))
            .get(60, TimeUnit.SECONDS);
      }
      return started;
    } catch (Exception ex) {
      if (started != null) {
        try {
          started.close();
        } catch (InterruptedException interrupted) {
          Thread.currentThread().interrupt();
        }
      }
      throw new IllegalStateException("Cloud Spanner emulator did not start", ex);
    }
  }
}
