package io.github.spannertuning.autoconfigure;

import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Spanner;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.client.SpannerTuningState.WarmUp;
import io.github.spannertuning.pool.ChannelWarmer;
import io.github.spannertuning.warmup.ReadWarmUp;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Holds the application's readiness until the channels of every tuned Spanner client are warm:
 * connected and primed ({@code spanner.tuning.warm-up.*}).
 *
 * <p>An {@link ApplicationRunner}, the last of them: Spring Boot reports the application ready
 * (readiness state {@code ACCEPTING_TRAFFIC}, {@code /actuator/health/readiness} 200) only after
 * every runner has run. Meanwhile the application has started and its web server answers, so the
 * readiness probe says {@code OUT_OF_SERVICE} rather than nothing, and no extra health group has to
 * be configured. The warm-up itself started when each client was built; this only waits for it, at
 * most {@code spanner.tuning.warm-up.timeout} in all, and then lets the application be ready
 * anyway, with one warning per client that names what is not warm (fail open). Last, so that an
 * application's own runners go first: one that creates its database (as the sample does on a fresh
 * emulator) gives the clients the session they prime with, rather than the warm-up waiting out its
 * timeout for a database that does not exist yet.
 */
class SpannerTuningWarmUp implements ApplicationRunner, Ordered {

  private static final Log logger = LogFactory.getLog(SpannerTuningWarmUp.class);

  private final SpannerTuningRegistry registry;

  private final Duration timeout;

  private final BeanFactory beans;

  private final Environment environment;

  SpannerTuningWarmUp(
      SpannerTuningRegistry registry,
      Duration timeout,
      BeanFactory beans,
      Environment environment) {
    this.registry = registry;
    this.timeout = timeout;
    this.beans = beans;
    this.environment = environment;
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }

  @Override
  public void run(ApplicationArguments args) throws InterruptedException {
    long deadline = System.nanoTime() + this.timeout.toNanos();
    Map<String, SpannerTuningState> clients = this.registry.clients();
    clients.forEach(this::openDatabase);
    Map<String, SpannerTuningState> all = new LinkedHashMap<>();
    clients.forEach((name, state) -> all.put("Spanner client '" + name + "'", state));
    this.registry
        .jdbcClients()
        .forEach(
            (name, client) ->
                all.put("the JDBC driver's client of DataSource '" + name + "'", client.state()));
    for (Map.Entry<String, SpannerTuningState> client : all.entrySet()) {
      Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
      WarmUp warmUp = client.getValue().warmUp(left);
      if (!warmUp.watched()) {
        continue;
      }
      if (warmUp.warm()) {
        logger.info(
            "%s: %d channels connected and primed in %d ms%s"
                .formatted(
                    client.getKey(),
                    warmUp.channels(),
                    warmUp.took().toMillis(),
                    readPath(warmUp.reads())));
      } else {
        logger.warn(notWarm(client.getKey(), warmUp, this.timeout));
      }
    }
  }

  /**
   * The priming query needs a session, which a client creates when the application first asks it
   * for a database client. spring-cloud-gcp's client is asked for its database ({@code
   * spring.cloud.gcp.spanner.instance-id} and {@code .database}) here if the application has not
   * yet, as its first read would: the client keeps one database client per database.
   */
  private void openDatabase(String name, SpannerTuningState state) {
    ChannelWarmer warmer = state.warmer();
    String instance = this.environment.getProperty("spring.cloud.gcp.spanner.instance-id");
    String database = this.environment.getProperty("spring.cloud.gcp.spanner.database");
    if (warmer == null
        || warmer.hasSession()
        || instance == null
        || database == null
        || !SPRING_CLOUD_GCP_CLIENT.equals(name)
        || !this.beans.containsBean(name)) {
      return;
    }
    Spanner spanner = this.beans.getBean(name, Spanner.class);
    spanner.getDatabaseClient(
        DatabaseId.of(spanner.getOptions().getProjectId(), instance, database));
  }

  /** What the warm-up's reads did, for the log line; empty where none were sent. */
  static String readPath(ReadWarmUp.Result reads) {
    if (reads.sent() == 0) {
      return "";
    }
    return "; read path warmed with %d of %d reads in %d ms%s"
        .formatted(
            reads.answered(),
            reads.sent(),
            reads.took().toMillis(),
            (reads.failed() > 0)
                ? " (%d failed or ran out of time: spanner.tuning.warm-up.timeout)"
                    .formatted(reads.failed())
                : "");
  }

  /** The bean name of spring-cloud-gcp's {@code Spanner} client. */
  static final String SPRING_CLOUD_GCP_CLIENT = "spanner";

  static String notWarm(String client, WarmUp warmUp, Duration timeout) {
    String why =
        warmUp.sessionKnown()
            ? "their connections are not up or did not answer the priming query"
            : "the client has no session to prime them with (it has not been asked for a database"
                + " client, or could not create a session), so they are connected at most";
    return "%s: %d of %d channels not warm after %s (spanner.tuning.warm-up.timeout):"
            .formatted(
                client, warmUp.channels() - warmUp.warmChannels(), warmUp.channels(), timeout)
        + " "
        + why
        + "; the application reports ready anyway, and a read sent to one of them before it is"
        + " warm waits for its connection";
  }
}
