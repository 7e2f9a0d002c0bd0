package io.github.spannertuning.testing;

import com.google.protobuf.AbstractMessage;
import com.google.protobuf.ByteString;
import com.google.protobuf.Duration;
import com.google.protobuf.Empty;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.rpc.Code;
import com.google.rpc.RetryInfo;
import com.google.spanner.v1.BatchCreateSessionsRequest;
import com.google.spanner.v1.BatchCreateSessionsResponse;
import com.google.spanner.v1.BeginTransactionRequest;
import com.google.spanner.v1.CommitRequest;
import com.google.spanner.v1.CommitResponse;
import com.google.spanner.v1.CreateSessionRequest;
import com.google.spanner.v1.DeleteSessionRequest;
import com.google.spanner.v1.ExecuteBatchDmlRequest;
import com.google.spanner.v1.ExecuteBatchDmlResponse;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.GetSessionRequest;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.Partition;
import com.google.spanner.v1.PartitionQueryRequest;
import com.google.spanner.v1.PartitionReadRequest;
import com.google.spanner.v1.PartitionResponse;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.ResultSetStats;
import com.google.spanner.v1.RollbackRequest;
import com.google.spanner.v1.Session;
import com.google.spanner.v1.SpannerGrpc;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Transaction;
import com.google.spanner.v1.TransactionSelector;
import com.google.spanner.v1.TypeCode;
import io.github.spannertuning.testing.StatementResult.Key;
import io.github.spannertuning.testing.StatementResult.ReadKey;
import io.github.spannertuning.testing.StatementResult.SqlKey;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The Spanner data API as the tests need it: NOT Cloud Spanner, but a {@code
 * google.spanner.v1.Spanner} service built on the generated protos and gRPC alone, that answers
 * what the Spanner client, Google's JDBC driver with Hibernate and Spring Data Spanner send, on
 * every client line the project tests.
 *
 * <p>What it simulates:
 *
 * <ul>
 *   <li>sessions, pooled and multiplexed: created, listed by name, deleted; a call on an unknown
 *       session fails with the NOT_FOUND the client replaces sessions on;
 *   <li>queries and reads answered from {@linkplain #putStatementResult registered results},
 *       matched by SQL text and parameter values (reads by table and columns): no SQL engine, no
 *       data, no schema; anything else fails with INVALID_ARGUMENT naming the statement;
 *   <li>streams of one row per {@code PartialResultSet} with resume tokens, resumed after their
 *       token;
 *   <li>DML with exact update counts, alone or batched ({@code ExecuteBatchDml} stops at the first
 *       statement that fails, as Spanner does);
 *   <li>transactions begun explicitly or inline (the new id in the first response's metadata),
 *       committed and rolled back, as ids only: no locks, no isolation, no commit stats;
 *   <li>the client's dialect detection, answered GOOGLE_STANDARD_SQL;
 *   <li>faults and pace per method ({@link SimulatedExecutionTime}): delays, errors at a call's
 *       start or mid-stream, and ABORTED commits the client retries ({@link
 *       #createAbortedException}); a stall of the whole service after a number of rows ({@link
 *       #freezeAfterReturningNumRows}).
 * </ul>
 *
 * <p>Every wait is scheduled: no thread is held while a call waits. Partitioned queries and reads
 * are answered with two partitions, each served as the whole statement; partitioned DML, batch
 * writes and precommit tokens are not simulated. {@link MockSpannerServer} serves it over TCP and
 * adds what a Spanner frontend does around it: {@code last} on a stream's final message, lagging
 * trailers, service time, stream and reset limits.
 */
public final class MockSpannerService extends SpannerGrpc.SpannerImplBase {

  /** The dialect detection of google-cloud-spanner 6.125 and earlier. */
  private static final String DIALECT_QUERY =
      "select option_value from information_schema.database_options"
          + " where option_name='database_dialect'";

  /** The dialect and default isolation level detection of google-cloud-spanner 6.126 and later. */
  private static final String DATABASE_OPTIONS_QUERY =
      "select option_name, option_value from information_schema.database_options"
          + " where option_name in ('database_dialect', 'default_transaction_isolation')";

  /** Spanner returns at most this many sessions per BatchCreateSessions; the client asks again. */
  private static final int MAX_SESSIONS_PER_BATCH = 100;

  private static final SimulatedExecutionTime NONE = SimulatedExecutionTime.none();

  private final ScheduledExecutorService scheduler;

  private final Freeze freeze;

  private final Sessions sessions = new Sessions();

  private final Map<Key, StatementResult> results = new ConcurrentHashMap<>();

  private final Queue<AbstractMessage> requests = new ConcurrentLinkedQueue<>();

  private volatile SimulatedExecutionTime executeStreamingSqlExecutionTime = NONE;

  private volatile SimulatedExecutionTime commitExecutionTime = NONE;

  /**
   * A service whose delays, and whatever a freeze held back, run on {@code scheduler}.
   *
   * @param scheduler runs the delayed answers; the caller shuts it down
   */
  public MockSpannerService(ScheduledExecutorService scheduler) {
    this.scheduler = scheduler;
    this.freeze = new Freeze(scheduler);
    ResultSetMetadata dialect = ResultSets.metadata("option_value", TypeCode.STRING);
    put(
        new SqlKey(DIALECT_QUERY, Struct.getDefaultInstance()),
        ResultSet.newBuilder().setMetadata(dialect).addRows(row("GOOGLE_STANDARD_SQL")).build());
    ResultSetMetadata options =
        ResultSets.metadata("option_name", TypeCode.STRING, "option_value", TypeCode.STRING);
    put(
        new SqlKey(DATABASE_OPTIONS_QUERY, Struct.getDefaultInstance()),
        ResultSet.newBuilder()
            .setMetadata(options)
            .addRows(row("database_dialect", "GOOGLE_STANDARD_SQL"))
            .build());
  }

  /** Answers a statement or read with this result from now on, replacing an earlier one. */
  public void putStatementResult(StatementResult result) {
    this.results.put(result.key(), result);
  }

  /** The pace and faults of {@code ExecuteStreamingSql} calls from now on. */
  public void setExecuteStreamingSqlExecutionTime(SimulatedExecutionTime time) {
    this.executeStreamingSqlExecutionTime = time;
  }

  /** The pace and faults of {@code Commit} calls from now on. */
  public void setCommitExecutionTime(SimulatedExecutionTime time) {
    this.commitExecutionTime = time;
  }

  /**
   * Once this many more rows have been streamed, stops: no stream sends more and no call is
   * answered until {@link #unfreeze()}.
   */
  public void freezeAfterReturningNumRows(int rows) {
    this.freeze.freezeAfterRows(rows);
  }

  /** Ends a freeze: held streams and calls go on. */
  public void unfreeze() {
    this.freeze.unfreeze();
  }

  /**
   * The error Spanner ends a call of an aborted transaction with: ABORTED, with the {@code
   * RetryInfo} that tells the client to retry the transaction.
   */
  public StatusRuntimeException createAbortedException(ByteString transactionId) {
    RetryInfo retry =
        RetryInfo.newBuilder()
            .setRetryDelay(Duration.newBuilder().setNanos((int) TimeUnit.MILLISECONDS.toNanos(1)))
            .build();
    Metadata trailers = new Metadata();
    trailers.put(ProtoUtils.keyForProto(retry), retry);
    return Status.ABORTED
        .withDescription("Transaction " + transactionId.toStringUtf8() + " was aborted")
        .asRuntimeException(trailers);
  }

  /** Every request received since the last {@link #clearRequests()}, oldest first. */
  public List<AbstractMessage> getRequests() {
    return new ArrayList<>(this.requests);
  }

  public void clearRequests() {
    this.requests.clear();
  }

  @Override
  public void createSession(CreateSessionRequest request, StreamObserver<Session> observer) {
    unary(
        request,
        NONE,
        observer,
        () -> this.sessions.create(request.getDatabase(), request.getSession()));
  }

  @Override
  public void batchCreateSessions(
      BatchCreateSessionsRequest request, StreamObserver<BatchCreateSessionsResponse> observer) {
    unary(
        request,
        NONE,
        observer,
        () -> {
          BatchCreateSessionsResponse.Builder response = BatchCreateSessionsResponse.newBuilder();
          for (int i = 0; i < Math.min(request.getSessionCount(), MAX_SESSIONS_PER_BATCH); i++) {
            response.addSession(
                this.sessions.create(request.getDatabase(), request.getSessionTemplate()));
          }
          return response.build();
        });
  }

  @Override
  public void getSession(GetSessionRequest request, StreamObserver<Session> observer) {
    unary(request, NONE, observer, () -> this.sessions.get(request.getName()));
  }

  @Override
  public void deleteSession(DeleteSessionRequest request, StreamObserver<Empty> observer) {
    answerEmpty(request, observer, () -> this.sessions.delete(request.getName()));
  }

  @Override
  public void beginTransaction(
      BeginTransactionRequest request, StreamObserver<Transaction> observer) {
    unary(
        request,
        NONE,
        observer,
        () -> this.sessions.begin(this.sessions.get(request.getSession()), request.getOptions()));
  }

  @Override
  public void commit(CommitRequest request, StreamObserver<CommitResponse> observer) {
    unary(
        request,
        this.commitExecutionTime,
        observer,
        () -> {
          this.sessions.get(request.getSession());
          return CommitResponse.newBuilder().setCommitTimestamp(Sessions.now()).build();
        });
  }

  @Override
  public void rollback(RollbackRequest request, StreamObserver<Empty> observer) {
    answerEmpty(request, observer, () -> this.sessions.get(request.getSession()));
  }

  /**
   * Two partitions of any query: each token names its partition, and a query with either token is
   * answered with the statement's whole result, which is enough to tell partitioned queries from
   * others.
   */
  @Override
  public void partitionQuery(
      PartitionQueryRequest request, StreamObserver<PartitionResponse> observer) {
    unary(request, NONE, observer, () -> partitions(request.getSession()));
  }

  @Override
  public void partitionRead(
      PartitionReadRequest request, StreamObserver<PartitionResponse> observer) {
    unary(request, NONE, observer, () -> partitions(request.getSession()));
  }

  private PartitionResponse partitions(String session) {
    this.sessions.get(session);
    return PartitionResponse.newBuilder()
        .addPartitions(Partition.newBuilder().setPartitionToken(ByteString.copyFromUtf8("p0")))
        .addPartitions(Partition.newBuilder().setPartitionToken(ByteString.copyFromUtf8("p1")))
        .build();
  }

  @Override
  public void executeSql(ExecuteSqlRequest request, StreamObserver<ResultSet> observer) {
    unary(
        request,
        NONE,
        observer,
        () -> {
          Found found = find(request.getSession(), sqlKey(request), request.getTransaction());
          StatementResult result = found.result();
          return switch (result.kind()) {
            case QUERY ->
                result.resultSet().toBuilder()
                    .setMetadata(metadata(result.resultSet().getMetadata(), found.transaction()))
                    .build();
            case UPDATE ->
                ResultSet.newBuilder()
                    .setMetadata(updateMetadata(found.transaction()))
                    .setStats(exactCount(result.updateCount()))
                    .build();
            case EXCEPTION -> throw result.exception();
          };
        });
  }

  @Override
  public void executeStreamingSql(
      ExecuteSqlRequest request, StreamObserver<PartialResultSet> observer) {
    SimulatedExecutionTime time = this.executeStreamingSqlExecutionTime;
    streaming(
        request,
        time,
        observer,
        (stream) -> {
          int firstRow = ResultStream.firstRow(request.getResumeToken());
          Found found = find(request.getSession(), sqlKey(request), request.getTransaction());
          StatementResult result = found.result();
          switch (result.kind()) {
            case QUERY ->
                stream.send(
                    result.resultSet(),
                    metadata(result.resultSet().getMetadata(), found.transaction()),
                    firstRow,
                    time,
                    this.freeze);
            case UPDATE ->
                stream.sendOnly(
                    PartialResultSet.newBuilder()
                        .setMetadata(updateMetadata(found.transaction()))
                        .setStats(exactCount(result.updateCount()))
                        .build());
            case EXCEPTION -> throw result.exception();
          }
        });
  }

  @Override
  public void executeBatchDml(
      ExecuteBatchDmlRequest request, StreamObserver<ExecuteBatchDmlResponse> observer) {
    unary(
        request,
        NONE,
        observer,
        () -> {
          Session session = this.sessions.get(request.getSession());
          Transaction transaction = this.sessions.ofResult(session, request.getTransaction());
          ExecuteBatchDmlResponse.Builder response = ExecuteBatchDmlResponse.newBuilder();
          for (ExecuteBatchDmlRequest.Statement statement : request.getStatementsList()) {
            try {
              StatementResult result =
                  result(new SqlKey(statement.getSql(), statement.getParams()));
              if (result.kind() == StatementResult.Kind.EXCEPTION) {
                throw result.exception();
              }
              ResultSet.Builder counted =
                  ResultSet.newBuilder().setStats(exactCount(result.updateCount()));
              if (response.getResultSetsCount() == 0) {
                counted.setMetadata(updateMetadata(transaction));
              }
              response.addResultSets(counted);
            } catch (StatusRuntimeException failed) {
              return response.setStatus(status(failed.getStatus())).build();
            }
          }
          return response
              .setStatus(com.google.rpc.Status.newBuilder().setCode(Code.OK_VALUE))
              .build();
        });
  }

  @Override
  public void read(ReadRequest request, StreamObserver<ResultSet> observer) {
    unary(
        request,
        NONE,
        observer,
        () -> {
          Found found = find(request.getSession(), readKey(request), request.getTransaction());
          ResultSet rows = found.result().resultSet();
          return rows.toBuilder()
              .setMetadata(metadata(rows.getMetadata(), found.transaction()))
              .build();
        });
  }

  @Override
  public void streamingRead(ReadRequest request, StreamObserver<PartialResultSet> observer) {
    streaming(
        request,
        NONE,
        observer,
        (stream) -> {
          int firstRow = ResultStream.firstRow(request.getResumeToken());
          Found found = find(request.getSession(), readKey(request), request.getTransaction());
          ResultSet rows = found.result().resultSet();
          stream.send(
              rows, metadata(rows.getMetadata(), found.transaction()), firstRow, NONE, this.freeze);
        });
  }

  private void put(Key key, ResultSet rows) {
    this.results.put(key, StatementResult.rows(key, rows));
  }

  private StatementResult result(Key key) {
    StatementResult result = this.results.get(key);
    if (result == null) {
      throw Status.INVALID_ARGUMENT
          .withDescription(
              "The test server has no result for "
                  + key
                  + ": register one with MockSpannerService.putStatementResult")
          .asRuntimeException();
    }
    return result;
  }

  /** The result registered for a request, and the transaction it runs in. */
  private record Found(StatementResult result, Transaction transaction) {}

  /**
   * Looks up, in this order, the request's session (NOT_FOUND if unknown), its registered result
   * (INVALID_ARGUMENT if none), and the transaction it runs in, begun here if it asks for one.
   */
  private Found find(String session, Key key, TransactionSelector selector) {
    Session known = this.sessions.get(session);
    StatementResult result = result(key);
    return new Found(result, this.sessions.ofResult(known, selector));
  }

  private static SqlKey sqlKey(ExecuteSqlRequest request) {
    return new SqlKey(request.getSql(), request.getParams());
  }

  private static ReadKey readKey(ReadRequest request) {
    return new ReadKey(request.getTable(), List.copyOf(request.getColumnsList()));
  }

  private static ResultSetMetadata metadata(ResultSetMetadata metadata, Transaction transaction) {
    return (transaction != null)
        ? metadata.toBuilder().setTransaction(transaction).build()
        : metadata;
  }

  /** A DML result's metadata: no columns, and the transaction if the statement began one. */
  private static ResultSetMetadata updateMetadata(Transaction transaction) {
    return metadata(
        ResultSetMetadata.newBuilder().setRowType(StructType.getDefaultInstance()).build(),
        transaction);
  }

  private static ResultSetStats exactCount(long count) {
    return ResultSetStats.newBuilder().setRowCountExact(count).build();
  }

  private static com.google.rpc.Status status(Status status) {
    return com.google.rpc.Status.newBuilder()
        .setCode(status.getCode().value())
        .setMessage(String.valueOf(status.getDescription()))
        .build();
  }

  private static ListValue row(String... values) {
    ListValue.Builder row = ListValue.newBuilder();
    for (String value : values) {
      row.addValues(Value.newBuilder().setStringValue(value));
    }
    return row.build();
  }

  /** Answers a unary call: {@link #serve} it, then one response or an error. */
  private <T> void unary(
      AbstractMessage request,
      SimulatedExecutionTime time,
      StreamObserver<T> observer,
      Supplier<T> answer) {
    serve(
        request,
        time,
        () -> {
          T response = answer.get();
          observer.onNext(response);
          observer.onCompleted();
        },
        observer::onError);
  }

  /** Answers a call whose response is empty, after {@code action}: a session's end, a rollback. */
  private void answerEmpty(
      AbstractMessage request, StreamObserver<Empty> observer, Runnable action) {
    unary(
        request,
        NONE,
        observer,
        () -> {
          action.run();
          return Empty.getDefaultInstance();
        });
  }

  /** Answers a streaming call: {@link #serve} it, then stream a result or an error. */
  private void streaming(
      AbstractMessage request,
      SimulatedExecutionTime time,
      StreamObserver<PartialResultSet> observer,
      Consumer<ResultStream> answer) {
    ResultStream stream = new ResultStream(observer);
    serve(request, time, () -> answer.accept(stream), stream::fail);
  }

  /**
   * Records the call, then answers it after its execution time and any freeze: raises the call's
   * simulated exception, if any, then runs {@code answer}; an error goes to {@code fail}.
   */
  private void serve(
      AbstractMessage request,
      SimulatedExecutionTime time,
      Runnable answer,
      Consumer<StatusRuntimeException> fail) {
    this.requests.add(request);
    Runnable answered =
        () -> {
          try {
            raiseCallException(time);
            answer.run();
          } catch (RuntimeException ex) {
            fail.accept(asStatus(ex));
          }
        };
    Runnable unfrozen = () -> this.freeze.whenUnfrozen(answered);
    long delay = time.delayNanos();
    if (delay > 0) {
      this.scheduler.schedule(unfrozen, delay, TimeUnit.NANOSECONDS);
    } else {
      unfrozen.run();
    }
  }

  private static void raiseCallException(SimulatedExecutionTime time) {
    StatusRuntimeException error = time.takeCallException();
    if (error != null) {
      throw error;
    }
  }

  /**
   * The error a call ends with: a simulated one as it is, a fault of this server as INTERNAL, which
   * a call answered from the scheduler would otherwise never report.
   */
  private static StatusRuntimeException asStatus(RuntimeException ex) {
    return (ex instanceof StatusRuntimeException status)
        ? status
        : Status.INTERNAL.withDescription("test server: " + ex).withCause(ex).asRuntimeException();
  }
}
