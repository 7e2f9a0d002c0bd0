package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import java.io.IOException;
import java.net.SocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A fleet experiment across three application instances: each its own Spring Boot application on
 * its own port, with spring-cloud-gcp's client (a pool of {@value #CHANNELS}) tuned by the starter,
 * all against one test server. One connection of each instance's pool answers {@value #SLOW_MILLIS}
 * ms later; each instance runs closed-loop point selects from {@value #THREADS} threads. The
 * experiment is started on each by {@code POST /actuator/spannertuning/spanner/experiment} with the
 * same fleet id, within one slice.
 *
 * <ul>
 *   <li>At each boundary the three switch within 50 ms of each other, read from the switch instant
 *       each records per slice ({@code sliceStarts}); they record the same slices and agree on
 *       every slice's arm.
 *   <li>Each instance's verdict on single-use reads is {@code better}. {@value #PAIRS} pairs, the
 *       fewest with a 95 % interval: with 6 the interval is the range of the pairs' ratios, so
 *       every pair must agree. The stock arm (the client's own least-busy pick) sends the slow
 *       connection a share of reads that grows with the calls in flight: with three threads per
 *       connection, well over 1 % of them, so its P99 is the slow connection's. The tuned arm sends
 *       it one read at a time, when its estimate has decayed, under 1 % of reads. The slowdown is
 *       longer than the pauses a busy machine puts on a whole JVM, which land in a tuned slice's
 *       tail (a 20 ms slowdown needs 10 pairs in {@code ExperimentIT} for that reason), and short
 *       enough that a slow read started in the first three quarters of a window ends inside it: a
 *       call is recorded when it ends within its window.
 *   <li>Each logs its natural end.
 * </ul>
 *
 * <p>Slices are {@value #SLICE_MILLIS} ms: the clients drain for at most 500 ms, so the carry-over
 * is the latency estimates' 2 s, and a fleet's window closes 250 ms before its slice ends, which
 * leaves 1,250 ms recorded per slice. What is real: three applications, their clients, gRPC, Netty
 * and loopback TCP, one wall clock. What is simulated: Spanner, its service time, the slow
 * connections. The three share one JVM, and so one timer thread for their experiments' steps, which
 * runs their switches one after another: a fleet of separate JVMs has no such queue, but has its
 * clocks' skew instead.
 *
 * <p>{@link Fleet#ports()} gives each instance's HTTP port; {@code /actuator/prometheus} is exposed
 * on each where the Prometheus registry is on the classpath.
 *
 * <p>Tagged {@code default-line}: the fleet schedule is the starter's own code, the same on every
 * client line; on 6.113 the stock arm's sticky keys may leave the slow connection unused, so the
 * verdict would rest on the line, not on the schedule.
 */
@Tag("default-line")
@ExtendWith(OutputCaptureExtension.class)
class FleetExperimentIT {

  private static final String FLEET = "fleet-it";

  private static final int INSTANCES = 3;

  private static final int CHANNELS = 4;

  private static final int THREADS = 12;

  private static final long SLOW_MILLIS = 300;

  private static final ServiceTime SERVICE_TIME =
      ServiceTime.uniform(Duration.ofMillis(20), Duration.ofMillis(30));

  private static final long SLICE_MILLIS = 3500;

  private static final int PAIRS = 6;

  /** The most the three may differ in when they switch to a slice. */
  private static final Duration ALIGNED = Duration.ofMillis(50);

  private final ObjectMapper json = new ObjectMapper();

  @Test
  void threeInstancesSwitchTogetherAndEachFindsTheTunedArmBetter(CapturedOutput output)
      throws Exception {
    try (Fleet fleet = Fleet.start(INSTANCES)) {
      // Calls that wait on the server, not on the CPU: three closed loops of point selects answered
      // in 2 to 5 ms keep two cores busy, and a tuned slice's P99 is then the CPU's queue.
      fleet.server().setServiceTime(SERVICE_TIME);
      fleet.startLoad(THREADS);
      fleet.slowDownOneConnectionOfEach(SLOW_MILLIS);
      for (int instance = 0; instance < INSTANCES; instance++) {
        assertThat(fleet.get(instance, "/actuator/spannertuning/spanner").statusCode())
            .isEqualTo(200);
      }
      // Not in a pair's last second: every instance whose start lands in this pair records from the
      // next one.
      fleet.awayFromTheEndOf(2 * SLICE_MILLIS, 1000);
      long joined = 0;
      for (int instance = 0; instance < INSTANCES; instance++) {
        HttpResponse<String> started =
            fleet.post(
                instance,
                "/actuator/spannertuning/spanner/experiment",
                Map.of(
                    "fleet",
                    FLEET,
                    "duration",
                    (2 * PAIRS * SLICE_MILLIS) + "ms",
                    "slice",
                    SLICE_MILLIS + "ms"));
        assertThat(started.statusCode()).as(started.body()).isEqualTo(200);
        joined = this.json.readTree(started.body()).get("sliceIndex").asLong();
      }
      // The documented schedule: recording starts with the pair after the slice joined in.
      long firstRecorded = (joined % 2 == 0) ? joined + 2 : joined + 1;
      Instant end = Instant.ofEpochMilli((firstRecorded + 2 * PAIRS) * SLICE_MILLIS);
      List<JsonNode> experiments = fleet.awaitExperiments(end, Duration.ofSeconds(20));
      long failed = fleet.stopLoad();

      Map<Long, List<Instant>> switches = new TreeMap<>();
      Map<Long, String> arms = new TreeMap<>();
      List<List<Long>> recorded = new ArrayList<>();
      for (JsonNode experiment : experiments) {
        List<Long> indexes = new ArrayList<>();
        for (JsonNode start : experiment.get("sliceStarts")) {
          long index = start.get("sliceIndex").asLong();
          if (start.get("recorded").asBoolean()) {
            indexes.add(index);
            switches
                .computeIfAbsent(index, (key) -> new ArrayList<>())
                .add(Instant.parse(start.get("switchedAt").asText()));
            String arm = start.get("arm").asText();
            assertThat(arms.computeIfAbsent(index, (key) -> arm))
                .as("slice %d's arm on every instance", index)
                .isEqualTo(arm);
          }
        }
        recorded.add(indexes);
      }
      long worstSpread = 0;
      long worstLate = 0;
      StringBuilder figures = new StringBuilder();
      for (Map.Entry<Long, List<Instant>> boundary : switches.entrySet()) {
        long first =
            boundary.getValue().stream().mapToLong(Instant::toEpochMilli).min().orElseThrow();
        long last =
            boundary.getValue().stream().mapToLong(Instant::toEpochMilli).max().orElseThrow();
        long late = last - boundary.getKey() * SLICE_MILLIS;
        worstSpread = Math.max(worstSpread, last - first);
        worstLate = Math.max(worstLate, late);
        figures.append(
            String.format(
                " %d:%s spread %d ms, last %d ms late;",
                boundary.getKey(), arms.get(boundary.getKey()), last - first, late));
      }
      System.out.printf(
          "[fleet experiment] %d instances, %d pairs of %d ms slices, one connection each +%d ms:"
              + " worst spread %d ms, worst switch %d ms after its boundary;%s%n",
          INSTANCES, PAIRS, SLICE_MILLIS, SLOW_MILLIS, worstSpread, worstLate, figures);
      for (int instance = 0; instance < INSTANCES; instance++) {
        System.out.printf(
            "[fleet experiment] instance %d (port %d): %s%n",
            instance, fleet.ports().get(instance), describe(experiments.get(instance)));
      }

      assertThat(failed).as("failed point selects").isZero();
      assertThat(recorded.get(1)).as("slices recorded by instance 1").isEqualTo(recorded.get(0));
      assertThat(recorded.get(2)).as("slices recorded by instance 2").isEqualTo(recorded.get(0));
      assertThat(recorded.get(0)).hasSize(2 * PAIRS);
      for (Map.Entry<Long, List<Instant>> boundary : switches.entrySet()) {
        List<Long> millis = boundary.getValue().stream().map(Instant::toEpochMilli).toList();
        assertThat(millis).as("slice %d", boundary.getKey()).hasSize(INSTANCES);
        assertThat(
                millis.stream().mapToLong(Long::longValue).max().orElseThrow()
                    - millis.stream().mapToLong(Long::longValue).min().orElseThrow())
            .as("switches to slice %d: %s", boundary.getKey(), boundary.getValue())
            .isLessThanOrEqualTo(ALIGNED.toMillis());
      }
      for (JsonNode experiment : experiments) {
        assertThat(experiment.get("state").asText()).as(describe(experiment)).isEqualTo("done");
        assertThat(experiment.get("fleet").asText()).isEqualTo(FLEET);
        assertThat(experiment.get("pairs").asInt()).isEqualTo(PAIRS);
        assertThat(experiment.at("/results/single-use/verdict").asText())
            .as(describe(experiment))
            .isEqualTo("better");
      }
      assertThat(
              output
                  .getAll()
                  .split("spanner-tuning: experiment done on Spanner client 'spanner'", -1))
          .as("each instance logs its experiment's end")
          .hasSize(INSTANCES + 1);
    }
  }

  private static String describe(JsonNode experiment) {
    JsonNode singleUse = experiment.at("/results/single-use");
    return String.format(
        "%s, %d pairs, single-use calls tuned %s stock %s, P99 tuned %s s stock %s s, p99Ratio %s"
            + " [%s, %s], verdict %s, recorded slices %s",
        experiment.get("state").asText(),
        experiment.get("pairs").asInt(),
        singleUse.at("/calls/tuned"),
        singleUse.at("/calls/stock"),
        singleUse.at("/p99Seconds/tuned"),
        singleUse.at("/p99Seconds/stock"),
        singleUse.get("p99Ratio"),
        singleUse.get("p99RatioLow"),
        singleUse.get("p99RatioHigh"),
        singleUse.get("verdict"),
        experiment.get("sliceStarts").findValues("sliceIndex"));
  }

  /**
   * Instances of {@link EndpointTestApplication} against one test server, each on its own port with
   * the {@code spannertuning} endpoint writable.
   */
  static final class Fleet implements AutoCloseable {

    private final MockSpannerServer server;

    private final List<ConfigurableApplicationContext> instances = new ArrayList<>();

    private final HttpClient http = HttpClient.newHttpClient();

    private final ObjectMapper json = new ObjectMapper();

    private final AtomicBoolean loading = new AtomicBoolean();

    private final AtomicLong failed = new AtomicLong();

    private final List<Future<?>> workers = new ArrayList<>();

    private ExecutorService pool;

    private final ScheduledExecutorService forgetting =
        Executors.newSingleThreadScheduledExecutor();

    private Fleet(MockSpannerServer server) {
      this.server = server;
    }

    static Fleet start(int instances) throws IOException {
      Fleet fleet = new Fleet(MockSpannerServer.start());
      try {
        for (int i = 0; i < instances; i++) {
          fleet.instances.add(
              new SpringApplicationBuilder(EndpointTestApplication.class)
                  .web(WebApplicationType.SERVLET)
                  .properties(
                      "server.port=0",
                      EndpointTestApplication.SERVER_PORT + "=" + fleet.server.port(),
                      "spring.cloud.gcp.project-id=test-project",
                      "spring.cloud.gcp.spanner.instance-id=test-instance",
                      "spring.cloud.gcp.spanner.database=" + database(i),
                      "spring.cloud.gcp.secretmanager.enabled=false",
                      "spring.main.banner-mode=off",
                      "management.endpoints.web.exposure.include=spannertuning,prometheus",
                      "management.endpoint.spannertuning.access=unrestricted",
                      "spanner.tuning.stream-end-guard.drain-timeout=500ms",
                      "spring.cloud.gcp.spanner.num-rpc-channels=" + CHANNELS)
                  .run());
        }
      } catch (RuntimeException ex) {
        try {
          fleet.close();
        } catch (Exception closing) {
          ex.addSuppressed(closing);
        }
        throw ex;
      }
      return fleet;
    }

    /** Each instance's HTTP port, in order. */
    List<Integer> ports() {
      return this.instances.stream()
          .map(
              (context) -> context.getEnvironment().getProperty("local.server.port", Integer.class))
          .toList();
    }

    MockSpannerServer server() {
      return this.server;
    }

    /**
     * Slows, for each instance, the connection that carried most of its point selects in the last
     * second of load. Each instance has a pool of its own and a database of its own, which its
     * calls' sessions name, so each gets one slow connection.
     */
    void slowDownOneConnectionOfEach(long millis) throws Exception {
      this.server.reset();
      List<SocketAddress> slow = new ArrayList<>();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (slow.size() < this.instances.size()) {
        Thread.sleep(500);
        List<Call> calls = this.server.calls("ExecuteStreamingSql");
        slow.clear();
        for (int i = 0; i < this.instances.size(); i++) {
          String sessions = "/databases/" + database(i) + "/sessions/";
          calls.stream()
              .filter(
                  (call) -> ((ExecuteSqlRequest) call.request()).getSession().contains(sessions))
              .collect(Collectors.groupingBy(Call::connection, Collectors.counting()))
              .entrySet()
              .stream()
              .filter((connection) -> connection.getValue() >= 20)
              .max(Map.Entry.comparingByValue())
              .ifPresent((connection) -> slow.add(connection.getKey()));
        }
        assertThat(System.nanoTime())
            .as("every instance's queries reached the server")
            .isLessThan(deadline);
      }
      this.server.slowDown(slow, millis);
      // The server keeps every call it sees, and the test needs none of them from here on: kept,
      // they grow the heap each young collection copies, and its pauses land in tuned slices.
      this.forgetting.scheduleAtFixedRate(this.server::reset, 1, 1, TimeUnit.SECONDS);
    }

    private static String database(int instance) {
      return "fleet-db-" + instance;
    }

    /** Closed-loop point selects on every instance, from {@code threads} threads each. */
    void startLoad(int threads) {
      this.loading.set(true);
      this.pool = Executors.newFixedThreadPool(threads * this.instances.size());
      for (int i = 0; i < this.instances.size(); i++) {
        DatabaseClient client = client(i);
        for (int t = 0; t < threads; t++) {
          this.workers.add(
              this.pool.submit(
                  () -> {
                    while (this.loading.get()) {
                      try {
                        pointSelect(client);
                      } catch (RuntimeException ex) {
                        this.failed.incrementAndGet();
                      }
                    }
                  }));
        }
      }
    }

    /** Stops the load; the point selects that failed. */
    long stopLoad() throws Exception {
      this.loading.set(false);
      for (Future<?> worker : this.workers) {
        worker.get(30, TimeUnit.SECONDS);
      }
      this.workers.clear();
      return this.failed.get();
    }

    /**
     * Sleeps past the next multiple of {@code period} ms of the wall clock when it is less than
     * {@code margin} ms away.
     */
    void awayFromTheEndOf(long period, long margin) throws InterruptedException {
      long left = period - Math.floorMod(System.currentTimeMillis(), period);
      if (left < margin) {
        Thread.sleep(left + 10);
      }
    }

    /**
     * Every instance's experiment once none is running: read from {@code end} on, so that no read
     * comes near the boundaries before it, or as it stands {@code grace} after {@code end}.
     */
    List<JsonNode> awaitExperiments(Instant end, Duration grace) throws Exception {
      Thread.sleep(Math.max(0, end.toEpochMilli() - System.currentTimeMillis()));
      long deadline = System.nanoTime() + grace.toNanos();
      while (true) {
        List<JsonNode> experiments = new ArrayList<>();
        for (int i = 0; i < this.instances.size(); i++) {
          HttpResponse<String> got = get(i, "/actuator/spannertuning/spanner/experiment");
          experiments.add(this.json.readTree(got.body()));
        }
        boolean running =
            experiments.stream().anyMatch((e) -> e.get("state").asText().equals("running"));
        if (!running || System.nanoTime() > deadline) {
          return experiments;
        }
        Thread.sleep(250);
      }
    }

    HttpResponse<String> post(int instance, String path, Map<String, ?> body) throws Exception {
      return this.http.send(
          HttpRequest.newBuilder(uri(instance, path))
              .header("Content-Type", "application/json")
              .POST(HttpRequest.BodyPublishers.ofString(this.json.writeValueAsString(body)))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> get(int instance, String path) throws Exception {
      return this.http.send(
          HttpRequest.newBuilder(uri(instance, path)).GET().build(),
          HttpResponse.BodyHandlers.ofString());
    }

    private URI uri(int instance, String path) {
      return URI.create("http://127.0.0.1:" + ports().get(instance) + path);
    }

    @SuppressWarnings("unchecked")
    private DatabaseClient client(int instance) {
      return ((Supplier<DatabaseClient>)
              this.instances.get(instance).getBean("databaseClientProvider"))
          .get();
    }

    private static void pointSelect(DatabaseClient client) {
      try (ResultSet rows =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        rows.next();
      }
    }

    @Override
    public void close() throws Exception {
      this.loading.set(false);
      this.forgetting.shutdownNow();
      if (this.pool != null) {
        this.pool.shutdownNow();
      }
      for (ConfigurableApplicationContext instance : this.instances) {
        instance.close();
      }
      this.server.close();
    }
  }
}
