package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Key;
import com.google.cloud.spanner.KeyRange;
import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.Mutation;
import com.google.cloud.spanner.ReadOnlyTransaction;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.Struct;
import com.google.cloud.spring.data.spanner.core.SpannerTemplate;
import com.google.cloud.spring.data.spanner.core.mapping.Column;
import com.google.cloud.spring.data.spanner.core.mapping.PrimaryKey;
import com.google.cloud.spring.data.spanner.core.mapping.Table;
import io.github.spannertuning.observation.SpannerCallObservations;
import io.github.spannertuning.testing.SpannerEmulator;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The same small workload against the official Cloud Spanner emulator through a plain client and
 * through a tuned one (all features on), each on its own database: writes in read/write
 * transactions (DML and mutations), single-use reads and queries (full scans, and point selects
 * that read one row and close), a multi-use read-only transaction, and Spring Data's {@link
 * SpannerTemplate}. The results must be identical and equal to what was written.
 *
 * <p>Skipped where the emulator binary is not installed (see {@link SpannerEmulator}). The emulator
 * serves some 100-200 queries a second, so the workload is kept to about 150 operations a client.
 */
@Tag("shares-machine")
class EmulatorIntegrationIT {

  private static final String PROJECT = "test-project";

  private static final String INSTANCE = "tuning-test";

  private static final String TABLE = "Singers";

  private static final List<String> COLUMNS =
      List.of("SingerId", "FirstName", "LastName", "Score", "Active");

  private static final String DDL =
      "CREATE TABLE Singers ("
          + " SingerId INT64 NOT NULL,"
          + " FirstName STRING(64),"
          + " LastName STRING(64),"
          + " Score FLOAT64,"
          + " Active BOOL"
          + ") PRIMARY KEY (SingerId)";

  private static final String SELECT = "SELECT SingerId, FirstName, LastName, Score, Active";

  /** Rows written by each client: 1-25 with DML, 26-50 with mutations. */
  private static final int ROWS = 50;

  private static final int BATCH = 5;

  private static SpannerEmulator emulator;

  @BeforeAll
  static void startEmulator() throws Exception {
    if (SpannerEmulator.find().isEmpty()) {
      return; // each test is skipped, with the reason, in requireEmulator
    }
    emulator = SpannerEmulator.start();
    try (Spanner admin = options().build().getService()) {
      SpannerEmulator.createInstance(admin, PROJECT, INSTANCE);
      for (String database : List.of("tuning-off", "tuning-on")) {
        admin
            .getDatabaseAdminClient()
            .createDatabase(INSTANCE, database, List.of(DDL))
            .get(60, TimeUnit.SECONDS);
      }
    }
  }

  @BeforeEach
  void requireEmulator() {
    assumeTrue(emulator != null, SpannerEmulator.notFoundMessage());
  }

  @AfterAll
  static void stopEmulator() throws Exception {
    if (emulator != null) {
      emulator.close();
    }
  }

  @Test
  void tunedClientReadsAndWritesExactlyWhatAPlainClientDoes() {
    Results off;
    try (Spanner spanner = options().build().getService()) {
      off = runWorkload(spanner.getDatabaseClient(DatabaseId.of(PROJECT, INSTANCE, "tuning-off")));
    }
    SpannerOptions.Builder builder = options();
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    ObservationRegistry observations = ObservationRegistry.create();
    observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
    SpannerTuningState state =
        SpannerTuning.newBuilder()
            .observations(new SpannerCallObservations(observations, meters))
            .build()
            .applyTo(builder);
    Results on;
    try (Spanner spanner = builder.build().getService()) {
      on = runWorkload(spanner.getDatabaseClient(DatabaseId.of(PROJECT, INSTANCE, "tuning-on")));
    }

    assertThat(state.isActive(Feature.STREAM_END_GUARD)).as("stream-end guard on").isTrue();
    // The emulator sends no server-timing: every response it answered is counted missing.
    double attempts =
        meters.find("spanner.client.attempt").timers().stream().mapToLong(Timer::count).sum();
    assertThat(attempts).as("attempts the tuned client observed").isPositive();
    assertThat(meters.find("spanner.client.server.duration").timers()).isEmpty();
    assertThat(
            meters.find("spanner.client.server.duration.missing").counters().stream()
                .mapToDouble(Counter::count)
                .sum())
        .isEqualTo(attempts);
    Results expected = expected();
    assertThat(off).as("plain client").isEqualTo(expected);
    assertThat(on).as("tuned client (%s)", state).isEqualTo(off);
  }

  private static SpannerOptions.Builder options() {
    return SpannerOptions.newBuilder().setProjectId(PROJECT).setEmulatorHost(emulator.hostPort());
  }

  /** Writes the rows, changes some, and reads everything back every way the test covers. */
  private static Results runWorkload(DatabaseClient client) {
    List<Long> writes = new ArrayList<>();

    // DML in read/write transactions: rows 1-25, five to a transaction; the last batch as one
    // batch update.
    for (int first = 1; first <= ROWS / 2; first += BATCH) {
      int from = first;
      boolean batch = from + BATCH > ROWS / 2;
      writes.add(
          client
              .readWriteTransaction()
              .run(
                  (tx) -> {
                    List<Statement> inserts = new ArrayList<>();
                    for (int id = from; id < from + BATCH; id++) {
                      inserts.add(insert(singer(id)));
                    }
                    if (batch) {
                      return Arrays.stream(tx.batchUpdate(inserts)).sum();
                    }
                    long count = 0;
                    for (Statement insert : inserts) {
                      count += tx.executeUpdate(insert);
                    }
                    return count;
                  }));
    }

    // Mutations: rows 26-50, buffered in read/write transactions, the last batch as a write.
    for (int first = ROWS / 2 + 1; first <= ROWS; first += BATCH) {
      List<Mutation> mutations = new ArrayList<>();
      for (int id = first; id < first + BATCH; id++) {
        mutations.add(mutation(singer(id)));
      }
      if (first + BATCH > ROWS) {
        client.write(mutations);
      } else {
        client
            .readWriteTransaction()
            .run(
                (tx) -> {
                  tx.buffer(mutations);
                  return null;
                });
      }
      writes.add((long) mutations.size());
    }

    // Read-modify-write: a query and a DML update, and a row read and a mutation, in one
    // transaction.
    writes.add(
        client
            .readWriteTransaction()
            .run(
                (tx) -> {
                  double sum = 0;
                  try (ResultSet rs =
                      tx.executeQuery(
                          Statement.of(
                              "SELECT Score FROM Singers WHERE SingerId BETWEEN 1 AND 5"))) {
                    while (rs.next()) {
                      sum += rs.getDouble(0);
                    }
                  }
                  assertThat(sum).isEqualTo(22.5);
                  long updated =
                      tx.executeUpdate(
                          Statement.of(
                              "UPDATE Singers SET Score = Score + 100"
                                  + " WHERE SingerId BETWEEN 1 AND 5"));
                  Struct row = tx.readRow(TABLE, Key.of(ROWS), COLUMNS);
                  tx.buffer(
                      Mutation.newUpdateBuilder(TABLE)
                          .set("SingerId")
                          .to(ROWS)
                          .set("LastName")
                          .to(row.getString("LastName") + "-renamed")
                          .build());
                  return updated;
                }));

    // Single-use: a full scan, point selects that read one row and close, the read API and
    // readRow. The emulator sends no resume tokens, so the client reads each of these small
    // streams to its end before it returns the first row and has nothing to cancel on close: the
    // stream-end guard is not exercised here (see StreamEndGuardTest), only shown to be harmless.
    List<Singer> scan = query(client, Statement.of(SELECT + " FROM Singers ORDER BY SingerId"));
    List<Singer> points = new ArrayList<>();
    for (long id = 1; id <= ROWS; id++) {
      try (ResultSet rs =
          client
              .singleUse()
              .executeQuery(
                  Statement.newBuilder(SELECT + " FROM Singers WHERE SingerId = @id")
                      .bind("id")
                      .to(id)
                      .build())) {
        assertThat(rs.next()).isTrue();
        points.add(Singer.of(rs.getCurrentRowAsStruct()));
      }
    }
    List<Singer> read = new ArrayList<>();
    try (ResultSet rs = client.singleUse().read(TABLE, KeySet.all(), COLUMNS)) {
      while (rs.next()) {
        read.add(Singer.of(rs.getCurrentRowAsStruct()));
      }
    }
    Singer readRow = Singer.of(client.singleUse().readRow(TABLE, Key.of(7), COLUMNS));

    // A multi-use read-only transaction.
    long count;
    List<Singer> active;
    Singer roPoint;
    List<Singer> roRange = new ArrayList<>();
    try (ReadOnlyTransaction tx = client.readOnlyTransaction()) {
      try (ResultSet rs = tx.executeQuery(Statement.of("SELECT COUNT(*) FROM Singers"))) {
        assertThat(rs.next()).isTrue();
        count = rs.getLong(0);
      }
      active = query(tx::executeQuery, activeStatement());
      try (ResultSet rs =
          tx.executeQuery(Statement.of(SELECT + " FROM Singers WHERE SingerId = 42"))) {
        assertThat(rs.next()).isTrue();
        roPoint = Singer.of(rs.getCurrentRowAsStruct());
      }
      try (ResultSet rs =
          tx.read(TABLE, KeySet.range(KeyRange.closedOpen(Key.of(20), Key.of(30))), COLUMNS)) {
        while (rs.next()) {
          roRange.add(Singer.of(rs.getCurrentRowAsStruct()));
        }
      }
    }

    // Spring Data.
    SpannerTemplate template = SpannerTemplates.of(client);
    List<Singer> springAll =
        template.readAll(SingerEntity.class).stream()
            .map(SingerEntity::toSinger)
            .sorted(Comparator.comparingLong(Singer::id))
            .toList();
    List<Singer> springActive =
        template.query(SingerEntity.class, activeStatement(), null).stream()
            .map(SingerEntity::toSinger)
            .toList();
    long springCount = template.count(SingerEntity.class);
    boolean exists = template.existsById(SingerEntity.class, Key.of(3));
    boolean missing = template.existsById(SingerEntity.class, Key.of(ROWS + 1));

    return new Results(
        writes,
        scan,
        points,
        read,
        readRow,
        count,
        active,
        roPoint,
        roRange,
        springAll,
        springActive,
        springCount,
        exists,
        missing);
  }

  /** What the workload must return, from the rows it writes. */
  private static Results expected() {
    Map<Long, Singer> rows = new TreeMap<>();
    for (int id = 1; id <= ROWS; id++) {
      rows.put((long) id, singer(id));
    }
    for (long id = 1; id <= 5; id++) {
      Singer s = rows.get(id);
      rows.put(id, new Singer(id, s.firstName(), s.lastName(), s.score() + 100, s.active()));
    }
    Singer last = rows.get((long) ROWS);
    rows.put(
        (long) ROWS,
        new Singer(
            ROWS, last.firstName(), last.lastName() + "-renamed", last.score(), last.active()));
    List<Singer> all = List.copyOf(rows.values());
    List<Singer> active = all.stream().filter(Singer::active).toList();
    List<Long> writes = new ArrayList<>();
    for (int i = 0; i < ROWS / BATCH; i++) {
      writes.add((long) BATCH);
    }
    writes.add(5L);
    return new Results(
        writes,
        all,
        all,
        all,
        rows.get(7L),
        ROWS,
        active,
        rows.get(42L),
        all.subList(19, 29),
        all,
        active,
        ROWS,
        true,
        false);
  }

  private static Statement activeStatement() {
    return Statement.of(SELECT + " FROM Singers WHERE Active = true ORDER BY SingerId");
  }

  private static List<Singer> query(DatabaseClient client, Statement statement) {
    return query((s) -> client.singleUse().executeQuery(s), statement);
  }

  private static List<Singer> query(Function<Statement, ResultSet> execute, Statement statement) {
    List<Singer> rows = new ArrayList<>();
    try (ResultSet rs = execute.apply(statement)) {
      while (rs.next()) {
        rows.add(Singer.of(rs.getCurrentRowAsStruct()));
      }
    }
    return rows;
  }

  private static Singer singer(int id) {
    return new Singer(id, "First" + id, "Last" + (id % 7), id * 1.5, id % 3 != 0);
  }

  private static Statement insert(Singer singer) {
    return Statement.newBuilder(
            "INSERT INTO Singers (SingerId, FirstName, LastName, Score, Active)"
                + " VALUES (@id, @first, @last, @score, @active)")
        .bind("id")
        .to(singer.id())
        .bind("first")
        .to(singer.firstName())
        .bind("last")
        .to(singer.lastName())
        .bind("score")
        .to(singer.score())
        .bind("active")
        .to(singer.active())
        .build();
  }

  private static Mutation mutation(Singer singer) {
    return Mutation.newInsertBuilder(TABLE)
        .set("SingerId")
        .to(singer.id())
        .set("FirstName")
        .to(singer.firstName())
        .set("LastName")
        .to(singer.lastName())
        .set("Score")
        .to(singer.score())
        .set("Active")
        .to(singer.active())
        .build();
  }

  /** One row of the table. */
  record Singer(long id, String firstName, String lastName, double score, boolean active) {

    static Singer of(Struct row) {
      return new Singer(
          row.getLong("SingerId"),
          row.getString("FirstName"),
          row.getString("LastName"),
          row.getDouble("Score"),
          row.getBoolean("Active"));
    }
  }

  /** Everything the workload returned, compared as a whole. */
  record Results(
      List<Long> writes,
      List<Singer> scan,
      List<Singer> pointSelects,
      List<Singer> readApi,
      Singer readRow,
      long readOnlyCount,
      List<Singer> readOnlyActive,
      Singer readOnlyPoint,
      List<Singer> readOnlyRange,
      List<Singer> springReadAll,
      List<Singer> springQuery,
      long springCount,
      boolean springExists,
      boolean springMissing) {}

  /** The table as a Spring Data entity. */
  @Table(name = "Singers")
  public static class SingerEntity {

    @PrimaryKey
    @Column(name = "SingerId")
    public Long singerId;

    @Column(name = "FirstName")
    public String firstName;

    @Column(name = "LastName")
    public String lastName;

    @Column(name = "Score")
    public Double score;

    @Column(name = "Active")
    public Boolean active;

    public SingerEntity() {}

    Singer toSinger() {
      return new Singer(this.singerId, this.firstName, this.lastName, this.score, this.active);
    }
  }
}
