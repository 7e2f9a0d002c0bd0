package io.github.spannertuning.sample;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.stereotype.Component;

/** Sends a burst of single-use point selects and prints what spanner-tuning did with them. */
@Component
class BurstRunner implements ApplicationRunner {

  private static final Log logger = LogFactory.getLog(BurstRunner.class);

  private final Supplier<DatabaseClient> databaseClient;

  private final SpannerTuningRegistry tuning;

  BurstRunner(Supplier<DatabaseClient> databaseClient, SpannerTuningRegistry tuning) {
    this.databaseClient = databaseClient;
    this.tuning = tuning;
  }

  @Override
  public void run(ApplicationArguments args) throws Exception {
    DatabaseClient client = this.databaseClient.get();
    int threads = 16;
    int perThread = 25;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<String>> results = new ArrayList<>();
      for (int i = 0; i < threads * perThread; i++) {
        long id = 1 + (i % 3);
        results.add(pool.submit(() -> singerName(client, id)));
      }
      for (Future<String> result : results) {
        result.get(30, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdown();
    }
    this.tuning
        .clients()
        .forEach(
            (name, state) -> {
              logger.info("Spanner client '" + name + "' on " + state.versions());
              state.features().forEach((feature, value) ->
                  logger.info("  " + feature.id() + ": " + value));
              logger.info(
                  "  " + (threads * perThread) + " point selects: single-use routed="
                      + state.singleUseRoutedCount()
                      + ", redundant cancels skipped="
                      + state.streamEndGuardSkippedCount());
            });
  }

  private static String singerName(DatabaseClient client, long id) {
    Statement statement =
        Statement.newBuilder(EmbeddedSpannerBackend.SINGER_BY_ID).bind("id").to(id).build();
    try (ResultSet resultSet = client.singleUse().executeQuery(statement)) {
      return resultSet.next() ? resultSet.getString("name") : null;
    }
  }
}
