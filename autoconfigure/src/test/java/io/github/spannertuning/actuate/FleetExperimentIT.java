package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.cloud.spanner.DatabaseClient;
import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.testing.GrafanaDashboard;
import io.github.spannertuning.testing.Loops;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import io.github.spannertuning.testing.PrometheusServer;
import io.github.spannertuning.testing.PrometheusServer.Sample;
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
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
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
 *   <li>Prometheus (Debian's package, as in {@code GrafanaDashboardIT}) scrapes the three through
 *       {@code /actuator/prometheus}; the shipped dashboard's fleet-wide tuned / stock P99 of
 *       single-use reads, over a time range holding the whole experiment, agrees with the
 *       instances' own histograms of every call their experiments recorded ({@code
 *       spanner.tuning.experiment.latency}): the fleet's histogram is their sum, so its P99 of an
 *       arm lies between the instances' (a pooled quantile lies between its parts'), within the
 *       span of the buckets that hold theirs, wherever in its bucket Prometheus interpolates it.
 *       Not against the P99s the experiments report: each is a median over slices of a slice's P99,
 *       while a pooled P99 carries every slice's tail, so a slice slowed by other load on the
 *       machine puts the fleet's above them. Where Prometheus is not installed, this last check is
 *       skipped, saying so, once the others have passed.
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
    List<Integer> ports = new ArrayList<>();
    for (int instance = 0; instance < INSTANCES; instance++) {
      ports.add(PrometheusServer.freePort());
    }
    // Prometheus first, where installed: it finds its targets about 5 s after it starts.
    try (Scraping prometheus = Scraping.start(ports);
        Fleet fleet = Fleet.start(ports)) {
      // Calls that wait on the server, not on the CPU: three closed loops of point selects answered
      // in 2 to 5 ms keep two cores busy, and a tuned slice's P99 is then the CPU's queue.
      fleet.server().setServiceTime(SERVICE_TIME);
      fleet.startLoad(THREADS);
      fleet.slowDownOneConnectionOfEach(SLOW_MILLIS);
      for (int instance = 0; instance < INSTANCES; instance++) {
        assertThat(fleet.get(instance, "/actuator/spannertuning/spanner").statusCode())
            .isEqualTo(200);
      }
      // The dashboard's time range starts here: Prometheus scrapes every instance after this and
      // before any call is recorded, so the range holds each histogram's every recorded call.
      Instant from = Instant.now();
      prometheus.awaitScrapes(2);
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
      prometheus.awaitScrapes(2);
      Instant scraped = Instant.now();

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

      assumeTrue(prometheus.server().isPresent(), PrometheusServer.notFoundMessage());
      // The dashboard's query, over a time range from before the experiments to after their end.
      double fleetRatio = fleetP99Ratio(prometheus.server().get(), from, scraped);
      double[] tuned = p99Buckets(fleet, "tuned");
      double[] stock = p99Buckets(fleet, "stock");
      double low = tuned[0] / stock[1];
      double high = tuned[1] / stock[0];
      System.out.printf(
          "[fleet experiment] Prometheus, the dashboard's tuned / stock P99 of single-use reads"
              + " over the fleet: %.3f; the instances' own P99 buckets tuned [%.4f, %.4f] s, stock"
              + " [%.4f, %.4f] s, so a ratio in [%.3f, %.3f]%n",
          fleetRatio, tuned[0], tuned[1], stock[0], stock[1], low, high);
      assertThat(fleetRatio)
          .as("the fleet's P99 ratio against the buckets of the instances' own P99s")
          .isBetween(low, high);
    }
  }

  /**
   * The tuned over stock P99 of single-use reads from the dashboard's "Tuned / stock over the time
   * range, fleet" panel, with every client and instance selected and the time range from {@code
   * from} to {@code to}.
   */
  private static double fleetP99Ratio(PrometheusServer prometheus, Instant from, Instant to)
      throws Exception {
    String query =
        GrafanaDashboard.load()
            .panel("Tuned / stock over the time range, fleet")
            .target("B")
            .expand(
                GrafanaDashboard.allOf(
                    Duration.ofSeconds(Duration.between(from, to).toSeconds() + 1),
                    prometheus.scrapeInterval()));
    List<Sample> ratios =
        prometheus.query(query, to).stream()
            .filter((sample) -> "single-use".equals(sample.labels().get("kind")))
            .toList();
    assertThat(ratios).as(query).hasSize(1);
    return ratios.get(0).value();
  }

  /**
   * The span of the instances' P99 of single-use reads in an arm, each read from the instance's own
   * histogram of every call its experiment recorded ({@code spanner.tuning.experiment.latency}):
   * the lowest lower bound and the highest upper bound, in seconds, of the buckets those P99s fall
   * in. The fleet's histogram is the sum of the instances': its P99 lies in that span, wherever in
   * its bucket Prometheus interpolates it.
   */
  private static double[] p99Buckets(Fleet fleet, String arm) throws Exception {
    double lowest = Double.MAX_VALUE;
    double highest = 0;
    for (int instance = 0; instance < INSTANCES; instance++) {
      String scrape = fleet.get(instance, PrometheusServer.METRICS_PATH).body();
      double[] bucket = p99Bucket(scrape, arm);
      lowest = Math.min(lowest, bucket[0]);
      highest = Math.max(highest, bucket[1]);
    }
    return new double[] {lowest, highest};
  }

  /**
   * The bucket, {lower, upper} in seconds, that holds the P99 of single-use reads in an arm of one
   * instance's scrape: the first whose cumulative count reaches 99 % of the calls, as Prometheus's
   * {@code histogram_quantile} finds it.
   */
  private static double[] p99Bucket(String scrape, String arm) {
    TreeMap<Double, Double> cumulative = new TreeMap<>();
    for (String line : scrape.split("\n")) {
      if (line.startsWith("spanner_tuning_experiment_latency_seconds_bucket{")
          && line.contains("kind=\"single-use\"")
          && line.contains("arm=\"" + arm + "\"")) {
        String le = line.replaceFirst(".*le=\"([^\"]+)\".*", "$1");
        double bound = le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
        double count = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        cumulative.merge(bound, count, Double::sum);
      }
    }
    assertThat(cumulative).as("%s single-use buckets in the scrape", arm).isNotEmpty();
    double rank = 0.99 * cumulative.lastEntry().getValue();
    double lower = 0;
    for (Map.Entry<Double, Double> bucket : cumulative.entrySet()) {
      if (bucket.getValue() >= rank) {
        return new double[] {lower, bucket.getKey()};
      }
      lower = bucket.getKey();
    }
    throw new AssertionError("no bucket reaches the P99's rank: " + cumulative);
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

    private final AtomicLong failed = new AtomicLong();

    private Loops.Background load;

    private final ScheduledExecutorService forgetting =
        Executors.newSingleThreadScheduledExecutor();

    private Fleet(MockSpannerServer server) {
      this.server = server;
    }

    /** One instance listening on each of {@code ports}. */
    static Fleet start(List<Integer> ports) throws IOException {
      Fleet fleet = new Fleet(MockSpannerServer.start());
      try {
        for (int i = 0; i < ports.size(); i++) {
          fleet.instances.add(
              new SpringApplicationBuilder(EndpointTestApplication.class)
                  .web(WebApplicationType.SERVLET)
                  .properties(
                      "server.port=" + ports.get(i),
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
      List<DatabaseClient> clients = new ArrayList<>();
      for (int i = 0; i < this.instances.size(); i++) {
        clients.add(client(i));
      }
      this.load =
          Loops.inBackground(
              threads * clients.size(),
              (thread, iteration) -> {
                try {
                  MockSpannerServer.pointSelect(clients.get(thread % clients.size()));
                } catch (RuntimeException ex) {
                  this.failed.incrementAndGet();
                }
              });
    }

    /** Stops the load; the point selects that failed. */
    long stopLoad() {
      this.load.close();
      this.load = null;
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

    @Override
    public void close() throws Exception {
      this.forgetting.shutdownNow();
      try {
        if (this.load != null) {
          this.load.close();
        }
      } finally {
        for (ConfigurableApplicationContext instance : this.instances) {
          instance.close();
        }
        this.server.close();
      }
    }
  }

  /** Prometheus scraping the instances, where it is installed; nothing where it is not. */
  private record Scraping(Optional<PrometheusServer> server) implements AutoCloseable {

    private static final Duration SCRAPE_INTERVAL = Duration.ofSeconds(1);

    static Scraping start(List<Integer> ports) throws Exception {
      if (PrometheusServer.find().isEmpty()) {
        return new Scraping(Optional.empty());
      }
      return new Scraping(
          Optional.of(
              PrometheusServer.start(
                  SCRAPE_INTERVAL, ports.stream().map((port) -> "127.0.0.1:" + port).toList())));
    }

    /** Waits for {@code scrapes} scrapes of every instance, where Prometheus runs. */
    void awaitScrapes(int scrapes) throws Exception {
      if (this.server.isPresent()) {
        this.server.get().awaitScrapes(scrapes, Duration.ofSeconds(20));
      }
    }

    @Override
    public void close() throws Exception {
      if (this.server.isPresent()) {
        this.server.get().close();
      }
    }
  }
}
