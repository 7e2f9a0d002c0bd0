package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.longrunning.Operation;
import com.google.protobuf.Any;
import com.google.protobuf.Empty;
import com.google.spanner.admin.database.v1.DatabaseAdminGrpc;
import com.google.spanner.admin.database.v1.GetDatabaseDdlRequest;
import com.google.spanner.admin.database.v1.GetDatabaseDdlResponse;
import com.google.spanner.admin.database.v1.UpdateDatabaseDdlMetadata;
import com.google.spanner.admin.database.v1.UpdateDatabaseDdlRequest;
import com.google.spanner.admin.instance.v1.GetInstanceRequest;
import com.google.spanner.admin.instance.v1.Instance;
import com.google.spanner.admin.instance.v1.InstanceAdminGrpc;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.testing.MockSpannerService;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A client that runs DDL and other admin calls before its queries, as an application that creates
 * its schema at start-up does. The client puts the same interceptors on its instance-admin and
 * database-admin channels as on its data pool; only the data pool's calls are counted.
 */
class AdminChannelsTest {

  private static final int CHANNELS = 4;

  private static final String QUERY = "SELECT 1";

  private static final String DDL = "CREATE TABLE T (Id INT64) PRIMARY KEY (Id)";

  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();

  private final MockSpannerService spanner = new MockSpannerService(this.scheduler);

  private final DatabaseAdmin databaseAdmin = new DatabaseAdmin();

  private final InstanceAdmin instanceAdmin = new InstanceAdmin();

  private Server server;

  @BeforeEach
  void startServer() throws Exception {
    this.spanner.putStatementResult(
        StatementResult.query(Statement.of(QUERY), ResultSets.int64Row("C", 1)));
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(this.spanner)
            .addService(this.databaseAdmin)
            .addService(this.instanceAdmin)
            .build()
            .start();
  }

  @AfterEach
  void stopServer() throws Exception {
    this.server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    this.scheduler.shutdownNow();
  }

  @Test
  void adminChannelsAreNotCountedAsDataChannels() throws Exception {
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("test-project")
            .setHost("http://127.0.0.1:" + this.server.getPort())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .setNumChannels(CHANNELS);
    SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);

    try (Spanner client = builder.build().getService()) {
      client.getInstanceAdminClient().getInstance("test-instance");
      client
          .getDatabaseAdminClient()
          .updateDatabaseDdl("test-instance", "test-db", List.of(DDL), null)
          .get(30, TimeUnit.SECONDS);
      client.getDatabaseAdminClient().getDatabaseDdl("test-instance", "test-db");
      assertThat(this.instanceAdmin.calls).hasValue(1);
      assertThat(this.databaseAdmin.calls).hasValue(2);

      DatabaseClient data =
          client.getDatabaseClient(DatabaseId.of("test-project", "test-instance", "test-db"));
      for (int i = 0; i < 40; i++) {
        try (ResultSet resultSet = data.singleUse().executeQuery(Statement.of(QUERY))) {
          while (resultSet.next()) {
            assertThat(resultSet.getLong(0)).isEqualTo(1L);
          }
        }
      }

      List<ChannelLoad.ChannelStats> channels = state.channelLoad().channels();
      long counted = channels.stream().mapToLong(ChannelLoad.ChannelStats::calls).sum();
      assertThat(channels)
          .as("channels counted after 3 admin calls, of a pool of %d", CHANNELS)
          .hasSizeLessThanOrEqualTo(CHANNELS);
      assertThat(counted)
          .as("calls counted on %d channels: data calls only", channels.size())
          .isEqualTo(this.spanner.getRequests().size());
    }
  }

  /** Answers the instance lookup with an instance of a made-up config. */
  private static final class InstanceAdmin extends InstanceAdminGrpc.InstanceAdminImplBase {

    final AtomicInteger calls = new AtomicInteger();

    @Override
    public void getInstance(GetInstanceRequest request, StreamObserver<Instance> observer) {
      this.calls.incrementAndGet();
      observer.onNext(
          Instance.newBuilder()
              .setName(request.getName())
              .setConfig("projects/test-project/instanceConfigs/test-config")
              .build());
      observer.onCompleted();
    }
  }

  /** Applies DDL at once (an operation already done) and returns it back, without a schema. */
  private static final class DatabaseAdmin extends DatabaseAdminGrpc.DatabaseAdminImplBase {

    final AtomicInteger calls = new AtomicInteger();

    @Override
    public void updateDatabaseDdl(
        UpdateDatabaseDdlRequest request, StreamObserver<Operation> observer) {
      this.calls.incrementAndGet();
      observer.onNext(
          Operation.newBuilder()
              .setName(request.getDatabase() + "/operations/ddl")
              .setDone(true)
              .setResponse(Any.pack(Empty.getDefaultInstance()))
              .setMetadata(Any.pack(UpdateDatabaseDdlMetadata.getDefaultInstance()))
              .build());
      observer.onCompleted();
    }

    @Override
    public void getDatabaseDdl(
        GetDatabaseDdlRequest request, StreamObserver<GetDatabaseDdlResponse> observer) {
      this.calls.incrementAndGet();
      observer.onNext(GetDatabaseDdlResponse.newBuilder().addStatements(DDL).build());
      observer.onCompleted();
    }
  }
}
