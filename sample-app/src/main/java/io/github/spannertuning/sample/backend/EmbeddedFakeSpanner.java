package io.github.spannertuning.sample.backend;

import com.google.protobuf.ByteString;
import com.google.protobuf.Empty;
import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Timestamp;
import com.google.protobuf.Value;
import com.google.spanner.v1.BatchCreateSessionsRequest;
import com.google.spanner.v1.BatchCreateSessionsResponse;
import com.google.spanner.v1.BeginTransactionRequest;
import com.google.spanner.v1.CommitRequest;
import com.google.spanner.v1.CommitResponse;
import com.google.spanner.v1.CreateSessionRequest;
import com.google.spanner.v1.DeleteSessionRequest;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.GetSessionRequest;
import com.google.spanner.v1.KeyRange;
import com.google.spanner.v1.KeySet;
import com.google.spanner.v1.Mutation;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.RollbackRequest;
import com.google.spanner.v1.Session;
import com.google.spanner.v1.SpannerGrpc;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Transaction;
import com.google.spanner.v1.TransactionSelector;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;
import io.github.spannertuning.sample.backend.FakeSchema.Column;
import io.github.spannertuning.sample.backend.FakeSchema.TableDef;
import io.github.spannertuning.sample.music.MusicQueries;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * NOT Cloud Spanner: an in-process imitation of the Spanner data API that answers exactly what this
 * sample sends, so the sample runs on a machine with nothing but Java. It is served over real gRPC
 * on a loopback port, so the client, its channel pool and spanner-tuning are the real thing; the
 * backend is not.
 *
 * <p>What it does: sessions (multiplexed and pooled), reads by key, key range or whole table, the
 * sample's three SQL statements (answered by hand-written Java, not a SQL engine; any other
 * statement is refused with UNIMPLEMENTED), read/write transactions (explicit or inline begin,
 * commit of insert, update, insert-or-update, replace and delete mutations, applied atomically
 * under one lock; no locking between transactions, no aborts). Each read or query is answered after
 * a simulated service time ({@code sample.embedded.*}, default 2 to 5 ms), with {@code last=true}
 * and a resume token on the final message, as production Spanner does. No admin API: the schema
 * comes from the sample's DDL file.
 */
public final class EmbeddedFakeSpanner extends SpannerGrpc.SpannerImplBase
    implements AutoCloseable {

  private static final ByteString RESUME_TOKEN = ByteString.copyFromUtf8("fake-resume-token");

  private final Map<String, TableDef> schema;

  private final Map<String, NavigableMap<List<Value>, List<Value>>> tables =
      new ConcurrentHashMap<>();

  private final Object lock = new Object();

  private final Map<String, Session> sessions = new ConcurrentHashMap<>();

  private final Map<String, SqlHandler> statements;

  private final Duration minServiceTime;

  private final Duration maxServiceTime;

  private final ScheduledExecutorService responder =
      Executors.newSingleThreadScheduledExecutor(
          (runnable) -> {
            Thread thread = new Thread(runnable, "embedded-fake-spanner-responder");
            thread.setDaemon(true);
            return thread;
          });

  private final AtomicLong dataCalls = new AtomicLong();

  private Server server;

  EmbeddedFakeSpanner(List<String> ddl, Duration minServiceTime, Duration maxServiceTime) {
    this.schema = FakeSchema.parse(ddl);
    this.minServiceTime = minServiceTime;
    this.maxServiceTime = maxServiceTime;
    this.schema.forEach((name, table) -> this.tables.put(name, new TreeMap<>(keyOrder(table))));
    this.statements =
        Map.of(
            normalize(MusicQueries.HEALTH_CHECK), this::selectOne,
            normalize(MusicQueries.SEARCH_SINGERS), this::searchSingers,
            normalize(MusicQueries.ALBUMS_OF_SINGER), this::albumsOfSinger);
  }

  /** Starts serving on a free loopback port. */
  EmbeddedFakeSpanner start() throws IOException {
    this.server =
        NettyServerBuilder.forAddress(
                new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 0, 1}), 0))
            .addService(ServerInterceptors.intercept(this, new ServerTimingHeader()))
            .build()
            .start();
    return this;
  }

  /**
   * Puts the frontend's time on each response, as Cloud Spanner's frontend does: a {@code
   * server-timing} header {@code gfet4t7; dur=<ms>} from the call's arrival to its response
   * headers. The starter's {@code spanner.client.server.duration} reads it.
   */
  private static final class ServerTimingHeader implements ServerInterceptor {

    private static final Metadata.Key<String> SERVER_TIMING =
        Metadata.Key.of("server-timing", Metadata.ASCII_STRING_MARSHALLER);

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
        ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      long arrived = System.nanoTime();
      return next.startCall(
          new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void sendHeaders(Metadata responseHeaders) {
              double millis = (System.nanoTime() - arrived) / 1e6;
              responseHeaders.put(
                  SERVER_TIMING, String.format(Locale.ROOT, "gfet4t7; dur=%.3f", millis));
              super.sendHeaders(responseHeaders);
            }
          },
          headers);
    }
  }

  int port() {
    return this.server.getPort();
  }

  /** Data-plane calls received (every {@code google.spanner.v1.Spanner} method). */
  public long dataCalls() {
    return this.dataCalls.get();
  }

  @Override
  public void close() throws InterruptedException {
    this.server.shutdownNow();
    this.server.awaitTermination(5, TimeUnit.SECONDS);
    this.responder.shutdownNow();
  }

  // Sessions

  @Override
  public void createSession(CreateSessionRequest request, StreamObserver<Session> response) {
    this.dataCalls.incrementAndGet();
    respond(response, newSession(request.getDatabase(), request.getSession().getMultiplexed()));
  }

  @Override
  public void batchCreateSessions(
      BatchCreateSessionsRequest request, StreamObserver<BatchCreateSessionsResponse> response) {
    this.dataCalls.incrementAndGet();
    BatchCreateSessionsResponse.Builder sessions = BatchCreateSessionsResponse.newBuilder();
    for (int i = 0; i < request.getSessionCount(); i++) {
      sessions.addSession(newSession(request.getDatabase(), false));
    }
    respond(response, sessions.build());
  }

  @Override
  public void getSession(GetSessionRequest request, StreamObserver<Session> response) {
    this.dataCalls.incrementAndGet();
    Session session = this.sessions.get(request.getName());
    if (session == null) {
      response.onError(
          Status.NOT_FOUND
              .withDescription("Session not found: " + request.getName())
              .asRuntimeException());
      return;
    }
    respond(response, session);
  }

  @Override
  public void deleteSession(DeleteSessionRequest request, StreamObserver<Empty> response) {
    this.dataCalls.incrementAndGet();
    this.sessions.remove(request.getName());
    respond(response, Empty.getDefaultInstance());
  }

  private Session newSession(String database, boolean multiplexed) {
    Session session =
        Session.newBuilder()
            .setName(database + "/sessions/" + UUID.randomUUID())
            .setMultiplexed(multiplexed)
            .setCreateTime(now())
            .build();
    this.sessions.put(session.getName(), session);
    return session;
  }

  // Transactions

  @Override
  public void beginTransaction(
      BeginTransactionRequest request, StreamObserver<Transaction> response) {
    this.dataCalls.incrementAndGet();
    respond(response, newTransaction());
  }

  @Override
  public void commit(CommitRequest request, StreamObserver<CommitResponse> response) {
    this.dataCalls.incrementAndGet();
    try {
      synchronized (this.lock) {
        List<Runnable> changes = new ArrayList<>();
        for (Mutation mutation : request.getMutationsList()) {
          changes.addAll(plan(mutation));
        }
        changes.forEach(Runnable::run);
      }
    } catch (StatusRuntimeException ex) {
      response.onError(ex);
      return;
    } catch (IllegalArgumentException ex) {
      response.onError(
          Status.INVALID_ARGUMENT.withDescription(ex.getMessage()).asRuntimeException());
      return;
    }
    respond(response, CommitResponse.newBuilder().setCommitTimestamp(now()).build());
  }

  @Override
  public void rollback(RollbackRequest request, StreamObserver<Empty> response) {
    this.dataCalls.incrementAndGet();
    respond(response, Empty.getDefaultInstance());
  }

  private static Transaction newTransaction() {
    return Transaction.newBuilder()
        .setId(ByteString.copyFromUtf8(UUID.randomUUID().toString()))
        .setReadTimestamp(now())
        .build();
  }

  /** Checks a mutation against the current rows and returns its changes, to apply all or none. */
  private List<Runnable> plan(Mutation mutation) {
    List<Runnable> changes = new ArrayList<>();
    switch (mutation.getOperationCase()) {
      case INSERT, UPDATE, INSERT_OR_UPDATE, REPLACE -> {
        Mutation.Write write =
            switch (mutation.getOperationCase()) {
              case INSERT -> mutation.getInsert();
              case UPDATE -> mutation.getUpdate();
              case INSERT_OR_UPDATE -> mutation.getInsertOrUpdate();
              default -> mutation.getReplace();
            };
        TableDef table = table(write.getTable());
        NavigableMap<List<Value>, List<Value>> rows = this.tables.get(table.name().toLowerCase());
        int[] positions =
            write.getColumnsList().stream().mapToInt((c) -> column(table, c)).toArray();
        for (ListValue values : write.getValuesList()) {
          List<Value> given = values.getValuesList();
          List<Value> key = new ArrayList<>();
          for (String keyColumn : table.keyColumns()) {
            int at = write.getColumnsList().indexOf(keyColumn);
            if (at < 0) {
              throw new IllegalArgumentException(
                  "Mutation on " + table.name() + " lacks key column " + keyColumn);
            }
            key.add(given.get(at));
          }
          List<Value> existing = rows.get(key);
          switch (mutation.getOperationCase()) {
            case INSERT -> {
              if (existing != null) {
                throw Status.ALREADY_EXISTS
                    .withDescription("Row " + key + " in " + table.name() + " already exists")
                    .asRuntimeException();
              }
            }
            case UPDATE -> {
              if (existing == null) {
                throw Status.NOT_FOUND
                    .withDescription("Row " + key + " in " + table.name() + " not found")
                    .asRuntimeException();
              }
            }
            default -> {}
          }
          List<Value> row = new ArrayList<>();
          boolean keepOthers =
              mutation.getOperationCase() != Mutation.OperationCase.REPLACE && existing != null;
          for (int i = 0; i < table.columns().size(); i++) {
            row.add(keepOthers ? existing.get(i) : nullValue());
          }
          for (int i = 0; i < positions.length; i++) {
            row.set(positions[i], given.get(i));
          }
          changes.add(() -> rows.put(key, row));
        }
      }
      case DELETE -> {
        TableDef table = table(mutation.getDelete().getTable());
        NavigableMap<List<Value>, List<Value>> rows = this.tables.get(table.name().toLowerCase());
        List<List<Value>> keys =
            new ArrayList<>(select(table, rows, mutation.getDelete().getKeySet()).keySet());
        changes.add(() -> keys.forEach(rows::remove));
      }
      default ->
          throw new IllegalArgumentException(
              "The embedded fake does not apply " + mutation.getOperationCase());
    }
    return changes;
  }

  // Reads

  @Override
  public void read(ReadRequest request, StreamObserver<ResultSet> response) {
    this.dataCalls.incrementAndGet();
    Answer answer;
    try {
      answer = readAnswer(request);
    } catch (IllegalArgumentException ex) {
      response.onError(
          Status.INVALID_ARGUMENT.withDescription(ex.getMessage()).asRuntimeException());
      return;
    }
    later(response, List.of(answer.asResultSet(request.getTransaction())));
  }

  @Override
  public void streamingRead(ReadRequest request, StreamObserver<PartialResultSet> response) {
    this.dataCalls.incrementAndGet();
    Answer answer;
    try {
      answer = readAnswer(request);
    } catch (IllegalArgumentException ex) {
      response.onError(
          Status.INVALID_ARGUMENT.withDescription(ex.getMessage()).asRuntimeException());
      return;
    }
    later(response, List.of(answer.asPartialResultSet(request.getTransaction())));
  }

  private Answer readAnswer(ReadRequest request) {
    if (!request.getIndex().isEmpty()) {
      throw new IllegalArgumentException("The embedded fake does not read through indexes");
    }
    TableDef table = table(request.getTable());
    int[] positions = request.getColumnsList().stream().mapToInt((c) -> column(table, c)).toArray();
    List<List<Value>> rows = new ArrayList<>();
    synchronized (this.lock) {
      for (List<Value> row :
          select(table, this.tables.get(table.name().toLowerCase()), request.getKeySet())
              .values()) {
        List<Value> projected = new ArrayList<>();
        for (int position : positions) {
          projected.add(row.get(position));
        }
        rows.add(projected);
        if (request.getLimit() > 0 && rows.size() == request.getLimit()) {
          break;
        }
      }
    }
    List<Column> columns = new ArrayList<>();
    for (int position : positions) {
      columns.add(table.columns().get(position));
    }
    return new Answer(columns, rows);
  }

  private NavigableMap<List<Value>, List<Value>> select(
      TableDef table, NavigableMap<List<Value>, List<Value>> rows, KeySet keySet) {
    if (keySet.getAll()) {
      return rows;
    }
    NavigableMap<List<Value>, List<Value>> selected = new TreeMap<>(rows.comparator());
    for (ListValue key : keySet.getKeysList()) {
      List<Value> row = rows.get(key.getValuesList());
      if (row != null) {
        selected.put(key.getValuesList(), row);
      }
    }
    Comparator<List<Value>> prefix = prefixOrder(table);
    for (KeyRange range : keySet.getRangesList()) {
      for (Map.Entry<List<Value>, List<Value>> entry : rows.entrySet()) {
        if (inRange(prefix, entry.getKey(), range)) {
          selected.put(entry.getKey(), entry.getValue());
        }
      }
    }
    return selected;
  }

  private static boolean inRange(Comparator<List<Value>> prefix, List<Value> key, KeyRange range) {
    boolean afterStart =
        switch (range.getStartKeyTypeCase()) {
          case START_CLOSED -> prefix.compare(key, range.getStartClosed().getValuesList()) >= 0;
          case START_OPEN -> prefix.compare(key, range.getStartOpen().getValuesList()) > 0;
          default -> true;
        };
    boolean beforeEnd =
        switch (range.getEndKeyTypeCase()) {
          case END_CLOSED -> prefix.compare(key, range.getEndClosed().getValuesList()) <= 0;
          case END_OPEN -> prefix.compare(key, range.getEndOpen().getValuesList()) < 0;
          default -> true;
        };
    return afterStart && beforeEnd;
  }

  // Queries

  @Override
  public void executeSql(ExecuteSqlRequest request, StreamObserver<ResultSet> response) {
    this.dataCalls.incrementAndGet();
    Answer answer = queryAnswer(request, response);
    if (answer != null) {
      later(response, List.of(answer.asResultSet(request.getTransaction())));
    }
  }

  @Override
  public void executeStreamingSql(
      ExecuteSqlRequest request, StreamObserver<PartialResultSet> response) {
    this.dataCalls.incrementAndGet();
    Answer answer = queryAnswer(request, response);
    if (answer != null) {
      later(response, List.of(answer.asPartialResultSet(request.getTransaction())));
    }
  }

  private Answer queryAnswer(ExecuteSqlRequest request, StreamObserver<?> response) {
    SqlHandler handler = this.statements.get(normalize(request.getSql()));
    if (handler == null) {
      response.onError(
          Status.UNIMPLEMENTED
              .withDescription(
                  "The embedded fake Spanner answers only this sample's statements, not: "
                      + request.getSql())
              .asRuntimeException());
      return null;
    }
    synchronized (this.lock) {
      return handler.answer(request.getParams());
    }
  }

  private interface SqlHandler {
    Answer answer(Struct params);
  }

  private Answer selectOne(Struct params) {
    return new Answer(
        List.of(new Column("", TypeCode.INT64)),
        List.of(List.of(Value.newBuilder().setStringValue("1").build())));
  }

  private Answer searchSingers(Struct params) {
    String prefix = params.getFieldsOrThrow("prefix").getStringValue();
    TableDef singers = this.schema.get("singers");
    int first = singers.indexOf("FirstName");
    int last = singers.indexOf("LastName");
    int id = singers.indexOf("SingerId");
    Comparator<List<Value>> order =
        Comparator.<List<Value>, String>comparing((row) -> row.get(last).getStringValue())
            .thenComparing((row) -> row.get(first).getStringValue())
            .thenComparingLong((row) -> Long.parseLong(row.get(id).getStringValue()));
    List<List<Value>> rows =
        this.tables.get("singers").values().stream()
            .filter((row) -> row.get(last).getStringValue().startsWith(prefix))
            .sorted(order)
            .limit(20)
            .map((row) -> project(singers, row, "SingerId", "FirstName", "LastName", "Country"))
            .toList();
    return new Answer(columns(singers, "SingerId", "FirstName", "LastName", "Country"), rows);
  }

  private Answer albumsOfSinger(Struct params) {
    Value singerId = params.getFieldsOrThrow("singerId");
    TableDef albums = this.schema.get("albums");
    String[] names = {"SingerId", "AlbumId", "Title", "ReleaseYear", "CopiesSold"};
    List<List<Value>> rows =
        this.tables.get("albums").entrySet().stream()
            .filter(
                (entry) -> entry.getKey().get(0).getStringValue().equals(singerId.getStringValue()))
            .map((entry) -> project(albums, entry.getValue(), names))
            .toList();
    return new Answer(columns(albums, names), rows);
  }

  private static List<Value> project(TableDef table, List<Value> row, String... names) {
    List<Value> projected = new ArrayList<>();
    for (String name : names) {
      projected.add(row.get(table.indexOf(name)));
    }
    return projected;
  }

  private static List<Column> columns(TableDef table, String... names) {
    List<Column> columns = new ArrayList<>();
    for (String name : names) {
      columns.add(table.columns().get(table.indexOf(name)));
    }
    return columns;
  }

  // Plumbing

  private record Answer(List<Column> columns, List<List<Value>> rows) {

    ResultSetMetadata metadata(TransactionSelector selector) {
      StructType.Builder rowType = StructType.newBuilder();
      for (Column column : this.columns) {
        rowType.addFields(
            StructType.Field.newBuilder()
                .setName(column.name())
                .setType(Type.newBuilder().setCode(column.type())));
      }
      ResultSetMetadata.Builder metadata = ResultSetMetadata.newBuilder().setRowType(rowType);
      if (selector.hasBegin()) {
        metadata.setTransaction(newTransaction());
      }
      return metadata.build();
    }

    ResultSet asResultSet(TransactionSelector selector) {
      ResultSet.Builder result = ResultSet.newBuilder().setMetadata(metadata(selector));
      this.rows.forEach((row) -> result.addRows(ListValue.newBuilder().addAllValues(row)));
      return result.build();
    }

    PartialResultSet asPartialResultSet(TransactionSelector selector) {
      PartialResultSet.Builder result =
          PartialResultSet.newBuilder()
              .setMetadata(metadata(selector))
              .setResumeToken(RESUME_TOKEN)
              .setLast(true);
      this.rows.forEach(result::addAllValues);
      return result.build();
    }
  }

  private static <T> void respond(StreamObserver<T> response, T value) {
    response.onNext(value);
    response.onCompleted();
  }

  /** Answers after the simulated service time, holding no thread meanwhile. */
  private <T> void later(StreamObserver<T> response, List<T> messages) {
    long nanos =
        ThreadLocalRandom.current()
            .nextLong(this.minServiceTime.toNanos(), this.maxServiceTime.toNanos() + 1);
    this.responder.schedule(
        () -> {
          try {
            messages.forEach(response::onNext);
            response.onCompleted();
          } catch (RuntimeException ex) {
            // the client cancelled meanwhile; nothing to answer
          }
        },
        nanos,
        TimeUnit.NANOSECONDS);
  }

  private TableDef table(String name) {
    TableDef table = this.schema.get(name.toLowerCase());
    if (table == null) {
      throw new IllegalArgumentException("Table not found: " + name);
    }
    return table;
  }

  private static int column(TableDef table, String name) {
    int position = table.indexOf(name);
    if (position < 0) {
      throw new IllegalArgumentException("Column not found: " + table.name() + "." + name);
    }
    return position;
  }

  private static Comparator<List<Value>> keyOrder(TableDef table) {
    Comparator<List<Value>> prefix = prefixOrder(table);
    return (a, b) -> {
      int compared = prefix.compare(a, b);
      return compared != 0 ? compared : Integer.compare(a.size(), b.size());
    };
  }

  /** Compares keys on the components both have, so that a key prefix bounds a key range. */
  private static Comparator<List<Value>> prefixOrder(TableDef table) {
    List<TypeCode> types =
        table.keyColumns().stream()
            .map((k) -> table.columns().get(table.indexOf(k)).type())
            .toList();
    return (a, b) -> {
      for (int i = 0; i < Math.min(a.size(), b.size()); i++) {
        int compared = compare(types.get(i), a.get(i), b.get(i));
        if (compared != 0) {
          return compared;
        }
      }
      return 0;
    };
  }

  private static int compare(TypeCode type, Value a, Value b) {
    boolean aNull = a.hasNullValue();
    boolean bNull = b.hasNullValue();
    if (aNull || bNull) {
      return Boolean.compare(!aNull, !bNull);
    }
    return switch (type) {
      case INT64 ->
          Long.compare(Long.parseLong(a.getStringValue()), Long.parseLong(b.getStringValue()));
      case FLOAT64 -> Double.compare(a.getNumberValue(), b.getNumberValue());
      case BOOL -> Boolean.compare(a.getBoolValue(), b.getBoolValue());
      default -> a.getStringValue().compareTo(b.getStringValue());
    };
  }

  private static Value nullValue() {
    return Value.newBuilder().setNullValue(NullValue.NULL_VALUE).build();
  }

  private static Timestamp now() {
    Instant now = Instant.now();
    return Timestamp.newBuilder().setSeconds(now.getEpochSecond()).setNanos(now.getNano()).build();
  }

  private static String normalize(String sql) {
    return sql.trim().replaceAll("\\s+", " ");
  }
}
