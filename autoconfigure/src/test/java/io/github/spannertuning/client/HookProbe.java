package io.github.spannertuning.client;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import io.grpc.ManagedChannelBuilder;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An application in a class loader of its own ({@link MissingHookTest}): it builds a tuned client
 * of the test server, runs queries, and reports what it saw in plain JDK types.
 */
public final class HookProbe {

  private HookProbe() {}

  /**
   * @param port the test server's port
   * @param ownRpcFactory whether the application sets its own {@code SpannerRpcFactory}
   * @param grpcGcp whether the application leaves the grpc-gcp extension on
   * @param tuned whether spanner-tuning is applied
   * @return each feature's state when tuned, then {@code rows}: rows the queries returned, or
   *     {@code error}: what the client threw
   */
  public static Map<String, String> run(
      int port, boolean ownRpcFactory, boolean grpcGcp, boolean tuned) {
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("test-project")
            .setHost("http://127.0.0.1:" + port)
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .setNumChannels(4);
    if (!grpcGcp) {
      builder.disableGrpcGcpExtension();
    }
    if (ownRpcFactory) {
      builder.setServiceRpcFactory((options) -> new GapicSpannerRpc((SpannerOptions) options));
    }
    SpannerTuningState state = tuned ? SpannerTuning.defaults().applyTo(builder) : null;
    Map<String, String> seen = new LinkedHashMap<>();
    if (state != null) {
      state
          .features()
          .forEach((feature, featureState) -> seen.put(feature.id(), featureState.toString()));
    }
    int rows = 0;
    try (Spanner spanner = builder.build().getService()) {
      DatabaseClient client = spanner.getDatabaseClient(DatabaseId.of("test-project", "i", "d"));
      for (int i = 0; i < 20; i++) {
        try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
          while (rs.next()) {
            rows++;
          }
        }
      }
    } catch (RuntimeException | LinkageError ex) {
      seen.put("error", ex.toString());
      return seen;
    }
    seen.put("rows", Integer.toString(rows));
    return seen;
  }

  static final String POINT_SELECT = "SELECT id, name FROM Singers WHERE id = 1";
}
