package io.github.spannertuning.sample.music;

import com.google.cloud.spanner.DatabaseAdminClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.InstanceConfigId;
import com.google.cloud.spanner.InstanceId;
import com.google.cloud.spanner.InstanceInfo;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import io.github.spannertuning.sample.backend.SampleBackend;
import io.github.spannertuning.sample.backend.SampleBackendConfiguration.SchemaDdl;
import io.github.spannertuning.sample.backend.SampleProperties;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;

/**
 * Makes the database ready before the sample serves: on an emulator the instance, database and
 * schema (it starts empty); on Cloud Spanner the database and schema when missing (the instance
 * must exist); on the embedded fake nothing (it read the DDL file itself). Then seeds the rows
 * unless singer 1 exists.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
class DatabaseSetup implements ApplicationRunner {

  private static final Log logger = LogFactory.getLog(DatabaseSetup.class);

  private static final int ALBUMS_PER_SINGER = 3;

  private static final int ROWS_PER_COMMIT = 500;

  private static final String[] FIRST_NAMES = {
    "Ada", "Ben", "Chloe", "Dara", "Elif", "Femi", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Luca",
    "Maya", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tove", "Umar", "Vera", "Wim", "Yara"
  };

  private static final String[] LAST_NAMES = {
    "Adler", "Berg", "Castro", "Dahl", "Eriksen", "Fischer", "Garcia", "Hansen", "Ito", "Jensen",
    "Kovac", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov", "Quist", "Rossi", "Silva",
        "Tanaka",
    "Ueda", "Varga", "Weber", "Yilmaz", "Zhou"
  };

  private static final String[] COUNTRIES = {"DE", "FR", "JP", "NG", "NO", "PT", "SE", "US"};

  private static final String[] WORDS = {
    "Blue",
    "Night",
    "River",
    "Glass",
    "Summer",
    "Echo",
    "Paper",
    "Northern",
    "Silent",
    "Golden",
    "Lights",
    "Songs",
    "Roads",
    "Hours",
    "Tides",
    "Letters"
  };

  private final SampleBackend backend;

  private final Spanner spanner;

  private final Supplier<DatabaseId> databaseId;

  private final SchemaDdl ddl;

  private final SampleProperties properties;

  private final SingerRepository singers;

  private final AlbumRepository albums;

  DatabaseSetup(
      SampleBackend backend,
      Spanner spanner,
      Supplier<DatabaseId> databaseId,
      SchemaDdl ddl,
      SampleProperties properties,
      SingerRepository singers,
      AlbumRepository albums) {
    this.backend = backend;
    this.spanner = spanner;
    this.databaseId = databaseId;
    this.ddl = ddl;
    this.properties = properties;
    this.singers = singers;
    this.albums = albums;
  }

  @Override
  public void run(ApplicationArguments args) throws Exception {
    DatabaseId database = this.databaseId.get();
    if (this.backend.isEmulator()) {
      createInstance(database.getInstanceId());
    }
    if (this.backend.kind() != SampleBackend.Kind.EMBEDDED_FAKE) {
      createDatabase(database);
    }
    if (!this.singers.existsById(1L)) {
      seed();
    }
  }

  private void createInstance(InstanceId instance) throws InterruptedException, ExecutionException {
    try {
      this.spanner
          .getInstanceAdminClient()
          .createInstance(
              InstanceInfo.newBuilder(instance)
                  .setInstanceConfigId(
                      InstanceConfigId.of(instance.getProject(), "emulator-config"))
                  .setDisplayName("spanner-tuning sample")
                  .setNodeCount(1)
                  .build())
          .get();
    } catch (ExecutionException ex) {
      if (!alreadyExists(ex)) {
        throw ex;
      }
    }
  }

  private void createDatabase(DatabaseId database) throws InterruptedException, ExecutionException {
    DatabaseAdminClient admin = this.spanner.getDatabaseAdminClient();
    String instance = database.getInstanceId().getInstance();
    try {
      admin.createDatabase(instance, database.getDatabase(), this.ddl.statements()).get();
      logger.info("Created database " + database + " with the schema of db/schema.sql");
    } catch (ExecutionException ex) {
      if (!alreadyExists(ex)) {
        throw ex;
      }
      boolean hasSchema =
          admin.getDatabaseDdl(instance, database.getDatabase()).stream()
              .anyMatch((statement) -> statement.contains("CREATE TABLE Singers"));
      if (!hasSchema) {
        admin
            .updateDatabaseDdl(instance, database.getDatabase(), this.ddl.statements(), null)
            .get();
        logger.info("Added the schema of db/schema.sql to " + database);
      }
    }
  }

  private static boolean alreadyExists(ExecutionException ex) {
    return ex.getCause() instanceof SpannerException spanner
        && spanner.getErrorCode() == ErrorCode.ALREADY_EXISTS;
  }

  private void seed() {
    long started = System.nanoTime();
    Random random = new Random(42);
    int count = this.properties.seedSingers();
    List<Singer> singerRows = new ArrayList<>();
    List<Album> albumRows = new ArrayList<>();
    for (long id = 1; id <= count; id++) {
      singerRows.add(
          new Singer(
              id,
              FIRST_NAMES[random.nextInt(FIRST_NAMES.length)],
              LAST_NAMES[random.nextInt(LAST_NAMES.length)],
              COUNTRIES[random.nextInt(COUNTRIES.length)]));
      for (long album = 1; album <= ALBUMS_PER_SINGER; album++) {
        albumRows.add(
            new Album(
                id,
                album,
                WORDS[random.nextInt(WORDS.length)] + " " + WORDS[random.nextInt(WORDS.length)],
                1970 + random.nextInt(55),
                random.nextInt(100_000)));
      }
    }
    for (int from = 0; from < singerRows.size(); from += ROWS_PER_COMMIT) {
      this.singers.saveAll(
          singerRows.subList(from, Math.min(from + ROWS_PER_COMMIT, singerRows.size())));
    }
    for (int from = 0; from < albumRows.size(); from += ROWS_PER_COMMIT) {
      this.albums.saveAll(
          albumRows.subList(from, Math.min(from + ROWS_PER_COMMIT, albumRows.size())));
    }
    logger.info(
        "Seeded "
            + singerRows.size()
            + " singers and "
            + albumRows.size()
            + " albums in "
            + (System.nanoTime() - started) / 1_000_000
            + " ms");
  }
}
