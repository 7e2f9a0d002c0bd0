package io.github.spannertuning.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Dialect;
import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.protobuf.ByteString;
import com.google.rpc.Code;
import com.google.rpc.ResourceInfo;
import com.google.spanner.v1.CreateSessionRequest;
import com.google.spanner.v1.DeleteSessionRequest;
import com.google.spanner.v1.ExecuteBatchDmlRequest;
import com.google.spanner.v1.ExecuteBatchDmlResponse;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.GetSessionRequest;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.Session;
import com.google.spanner.v1.SpannerGrpc;
import com.google.spanner.v1.TransactionOptions;
import com.google.spanner.v1.TransactionSelector;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link MockSpannerService} on a bare gRPC server (without {@link MockSpannerServer}'s frontend
 * behaviour), through a raw stub: what it answers, message by message, where the client's own tests
 * would only see the end result.
 */
class MockSpannerServiceTest {

  private static final String DATABASE = "projects/p/instances/i/databases/d";

  private static final String THREE_ROWS = "SELECT id FROM Three";

  private static final String UPDATE = "UPDATE T SET v = 1 WHERE id = @id";

  private static final String FAILING_UPDATE = "UPDATE T SET nope = 1";

  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();

  private final MockSpannerService mock = new MockSpannerService(this.scheduler);

  private Server server;

  private ManagedChannel channel;

  private SpannerGrpc.SpannerBlockingStub stub;

  private String session;

  @BeforeEach
  void start() throws Exception {
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(this.mock)
            .build()
            .start();
    MockSpannerService mock = this.mock;
    mock.putStatementResult(StatementResult.query(Statement.of(THREE_ROWS), ResultSets.numbers(3)));
    mock.putStatementResult(
        StatementResult.update(Statement.newBuilder(UPDATE).bind("id").to(7L).build(), 1L));
    mock.putStatementResult(
        StatementResult.exception(
            Statement.of(FAILING_UPDATE),
            Status.INVALID_ARGUMENT.withDescription("no column nope").asRuntimeException()));
    mock.putStatementResult(
        StatementResult.read("T", KeySet.all(), List.of("id"), ResultSets.numbers(2)));
    this.channel =
        ManagedChannelBuilder.forAddress("127.0.0.1", this.server.getPort()).usePlaintext().build();
    this.stub = SpannerGrpc.newBlockingStub(this.channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    this.session =
        this.stub
            .createSession(CreateSessionRequest.newBuilder().setDatabase(DATABASE).build())
            .getName();
  }

  @AfterEach
  void stop() throws Exception {
    this.channel.shutdownNow();
    this.server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    this.scheduler.shutdownNow();
  }

  @Test
  void streamsOneRowPerMessageWithResumeTokensAndResumesAfterAToken() {
    List<PartialResultSet> messages = stream(query(THREE_ROWS).build());
    assertThat(messages).hasSize(3);
    assertThat(messages)
        .extracting(PartialResultSet::hasMetadata)
        .containsExactly(true, false, false);
    assertThat(messages)
        .extracting((message) -> message.getResumeToken().toStringUtf8())
        .containsExactly("1", "2", "3");

    List<PartialResultSet> resumed =
        stream(query(THREE_ROWS).setResumeToken(messages.get(1).getResumeToken()).build());
    assertThat(resumed).hasSize(1);
    assertThat(resumed.get(0).hasMetadata()).isTrue();
    assertThat(resumed.get(0).getValues(0).getStringValue()).isEqualTo("2");
  }

  @Test
  void anInlineBeginReturnsTheNewTransactionInTheFirstResponse() {
    TransactionSelector begin =
        TransactionSelector.newBuilder()
            .setBegin(
                TransactionOptions.newBuilder()
                    .setReadWrite(TransactionOptions.ReadWrite.getDefaultInstance()))
            .build();
    PartialResultSet first = stream(query(THREE_ROWS).setTransaction(begin).build()).get(0);
    assertThat(first.getMetadata().getTransaction().getId()).isNotEmpty();

    ResultSet update =
        this.stub.executeSql(
            query(UPDATE).setParams(idParam(7)).setTransaction(begin).setSeqno(1).build());
    assertThat(update.getStats().getRowCountExact()).isEqualTo(1);
    assertThat(update.getMetadata().getTransaction().getId())
        .isNotEmpty()
        .isNotEqualTo(first.getMetadata().getTransaction().getId());
  }

  @Test
  void batchDmlStopsAtTheFirstStatementThatFails() {
    ExecuteBatchDmlResponse response =
        this.stub.executeBatchDml(
            ExecuteBatchDmlRequest.newBuilder()
                .setSession(this.session)
                .setTransaction(
                    TransactionSelector.newBuilder().setId(ByteString.copyFromUtf8("tx")))
                .addStatements(dml(UPDATE).setParams(idParam(7)))
                .addStatements(dml(FAILING_UPDATE))
                .addStatements(dml(UPDATE).setParams(idParam(7)))
                .build());
    assertThat(response.getResultSetsList())
        .extracting((result) -> result.getStats().getRowCountExact())
        .containsExactly(1L);
    assertThat(response.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT_VALUE);
    assertThat(response.getStatus().getMessage()).isEqualTo("no column nope");
  }

  @Test
  void anUnknownStatementFailsWithInvalidArgumentNamingIt() {
    assertThatThrownBy(() -> stream(query("SELECT nothing").build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            (ex) -> {
              assertThat(ex.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
              assertThat(ex.getStatus().getDescription()).contains("SELECT nothing");
            });
    assertThatThrownBy(
            () -> this.stub.executeSql(query(UPDATE).setParams(idParam(8)).setSeqno(1).build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            (ex) -> assertThat(ex.getStatus().getDescription()).contains(UPDATE).contains("\"8\""));
  }

  @Test
  void readsAreAnsweredByTableAndColumnsWhateverTheKeys() {
    ReadRequest read =
        ReadRequest.newBuilder()
            .setSession(this.session)
            .setTable("T")
            .addColumns("id")
            .setKeySet(
                com.google.spanner.v1.KeySet.newBuilder()
                    .addKeys(
                        com.google.protobuf.ListValue.newBuilder()
                            .addValues(com.google.protobuf.Value.newBuilder().setStringValue("1"))))
            .build();
    List<PartialResultSet> rows = new ArrayList<>();
    this.stub.streamingRead(read).forEachRemaining(rows::add);
    assertThat(rows).hasSize(2);
    assertThat(this.stub.read(read).getRowsCount()).isEqualTo(2);
    assertThatThrownBy(() -> this.stub.read(read.toBuilder().addColumns("name").build()))
        .hasMessageContaining("INVALID_ARGUMENT");
  }

  @Test
  void aCallOnAnUnknownSessionFailsWithTheSessionAsItsResource() {
    this.stub.deleteSession(DeleteSessionRequest.newBuilder().setName(this.session).build());
    assertThatThrownBy(
            () ->
                this.stub.getSession(GetSessionRequest.newBuilder().setName(this.session).build()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            (ex) -> {
              assertThat(ex.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
              ResourceInfo resource =
                  ex.getTrailers().get(ProtoUtils.keyForProto(ResourceInfo.getDefaultInstance()));
              assertThat(resource.getResourceType()).endsWith("google.spanner.v1.Session");
              assertThat(resource.getResourceName()).isEqualTo(this.session);
            });
    assertThatThrownBy(() -> stream(query(THREE_ROWS).build())).hasMessageContaining("NOT_FOUND");
  }

  @Test
  void aFreezeHoldsStreamsAndCallsUntilUnfrozen() throws Exception {
    this.mock.freezeAfterReturningNumRows(2);
    ExecutorService reader = Executors.newSingleThreadExecutor();
    try {
      List<PartialResultSet> received = new ArrayList<>();
      CompletableFuture<Void> firstTwo = new CompletableFuture<>();
      Future<?> read =
          reader.submit(
              () ->
                  this.stub
                      .executeStreamingSql(query(THREE_ROWS).build())
                      .forEachRemaining(
                          (message) -> {
                            received.add(message);
                            if (received.size() == 2) {
                              firstTwo.complete(null);
                            }
                          }));
      firstTwo.get(10, TimeUnit.SECONDS);
      Future<Session> created =
          SpannerGrpc.newFutureStub(this.channel)
              .createSession(CreateSessionRequest.newBuilder().setDatabase(DATABASE).build());
      assertThatThrownBy(() -> read.get(300, TimeUnit.MILLISECONDS))
          .isInstanceOf(TimeoutException.class);
      assertThat(received).hasSize(2);
      assertThat(created).as("a call made while frozen").isNotDone();

      this.mock.unfreeze();
      read.get(10, TimeUnit.SECONDS);
      assertThat(received).hasSize(3);
      assertThat(created.get(10, TimeUnit.SECONDS).getName()).isNotEmpty();
    } finally {
      reader.shutdownNow();
    }
  }

  @Test
  void theClientsDialectDetectionIsAnsweredGoogleStandardSql() throws Exception {
    SpannerOptions options =
        SpannerOptions.newBuilder()
            .setProjectId("p")
            .setHost("http://127.0.0.1:" + this.server.getPort())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .build();
    try (Spanner spanner = options.getService()) {
      assertThat(spanner.getDatabaseClient(DatabaseId.of("p", "i", "d")).getDialect())
          .isEqualTo(Dialect.GOOGLE_STANDARD_SQL);
    }
  }

  private List<PartialResultSet> stream(ExecuteSqlRequest request) {
    List<PartialResultSet> messages = new ArrayList<>();
    this.stub.executeStreamingSql(request).forEachRemaining(messages::add);
    return messages;
  }

  private ExecuteSqlRequest.Builder query(String sql) {
    return ExecuteSqlRequest.newBuilder().setSession(this.session).setSql(sql);
  }

  private static ExecuteBatchDmlRequest.Statement.Builder dml(String sql) {
    return ExecuteBatchDmlRequest.Statement.newBuilder().setSql(sql);
  }

  private static com.google.protobuf.Struct idParam(long id) {
    return com.google.protobuf.Struct.newBuilder()
        .putFields(
            "id", com.google.protobuf.Value.newBuilder().setStringValue(Long.toString(id)).build())
        .build();
  }
}
