package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.MockSpannerServiceImpl;
import com.google.cloud.spanner.MockSpannerServiceImpl.StatementResult;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.admin.database.v1.MockDatabaseAdminImpl;
import com.google.cloud.spanner.admin.instance.v1.MockInstanceAdminImpl;
import com.google.longrunning.Operation;
import com.google.protobuf.Any;
import com.google.protobuf.Empty;
import com.google.spanner.admin.database.v1.GetDatabaseDdlResponse;
import com.google.spanner.admin.database.v1.UpdateDatabaseDdlMetadata;
import com.google.spanner.admin.instance.v1.Instance;
import io.github.spannertuning.testing.ResultSets;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.TimeUnit;
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

  private final MockSpannerServiceImpl spanner = new MockSpannerServiceImpl();

  private final MockDatabaseAdminImpl databaseAdmin = new MockDatabaseAdminImpl();

  private final MockInstanceAdminImpl instanceAdmin = new MockInstanceAdminImpl();

  private Server server;

  @BeforeEach
  void startServer() throws Exception {
    this.spanner.setAbortProbability(0.0);
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
    this.instanceAdmin.addResponse(
        Instance.newBuilder()
            .setName("projects/test-project/instances/test-instance")
            .setConfig("projects/test-project/instanceConfigs/test-config")
            .build());
    this.databaseAdmin.addResponse(
        Operation.newBuilder()
            .setName(
                "projects/test-project/instances/test-instance/databases/test-db/operations/ddl")
            .setDone(true)
            .setResponse(Any.pack(Empty.getDefaultInstance()))
            .setMetadata(Any.pack(UpdateDatabaseDdlMetadata.getDefaultInstance()))
            .build());
    this.databaseAdmin.addResponse(
        GetDatabaseDdlResponse.newBuilder()
            .addStatements("CREATE TABLE T (Id INT64) PRIMARY KEY (Id)")
            .build());

    try (Spanner client = builder.build().getService()) {
      client.getInstanceAdminClient().getInstance("test-instance");
      client
          .getDatabaseAdminClient()
          .updateDatabaseDdl(
              "test-instance",
              "test-db",
              List.of("CREATE TABLE T (Id INT64) PRIMARY KEY (Id)"),
              null)
          .get(30, TimeUnit.SECONDS);
      client.getDatabaseAdminClient().getDatabaseDdl("test-instance", "test-db");
      assertThat(this.instanceAdmin.getRequests()).hasSize(1);
      assertThat(this.databaseAdmin.getRequests()).hasSize(2);

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
}
