package io.github.spannertuning.client;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.testing.MockSpannerServer;
import org.junit.jupiter.api.Test;

class SmokeTest {
  @Test
  void smoke() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.start()) {
      SpannerOptions.Builder b = server.clientOptions(8);
      SpannerTuningState state = SpannerTuning.defaults().applyTo(b);
      System.out.println("STATE " + state + " " + state.versions());
      try (Spanner spanner = b.build().getService()) {
        DatabaseClient client = spanner.getDatabaseClient(DatabaseId.of("test-project", "i", "d"));
        for (int i = 0; i < 100; i++) {
          try (ResultSet rs = client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
            rs.next();
          }
        }
        System.out.println("STATE " + state + " routed=" + state.singleUseRoutedCount() + " skipped=" + state.streamEndGuardSkippedCount());
        System.out.println("PER CONN " + MockSpannerServer.perConnection(server.calls("ExecuteStreamingSql"), server.connections()) + " cancels=" + server.cancels());
      }
    }
  }
}
