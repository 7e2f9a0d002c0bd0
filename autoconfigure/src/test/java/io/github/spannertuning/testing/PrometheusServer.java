package io.github.spannertuning.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A real Prometheus server for one test: started on a free loopback port with a generated
 * configuration that scrapes the given targets' {@code /actuator/prometheus}, keeping its data in a
 * temporary directory; stopped, and the directory deleted, on {@link #close()} or at the latest
 * when the JVM exits (see {@link ChildProcess}).
 *
 * <p>The binary is looked for in {@code PROMETHEUS_BINARY}, then where Debian's {@code prometheus}
 * package puts it. Tests should {@link #find() find} it first and skip themselves, saying so, when
 * it is absent.
 *
 * <p>Prometheus finds its targets about 5 s after it starts (its discovery sends updates at most
 * every 5 s): start it before the applications it scrapes, on ports chosen for them beforehand
 * ({@link #freePort()}), and {@link #awaitScrapes} waits for them to be up.
 *
 * <p>Queries go through Prometheus's HTTP API as Grafana sends them: {@link #query} as an instant
 * query (a stat panel), {@link #queryRange} as a range query (a time series panel).
 */
public final class PrometheusServer implements AutoCloseable {

  /** Environment variable naming the {@code prometheus} binary to use. */
  public static final String BINARY_ENV = "PROMETHEUS_BINARY";

  /** The path Spring Boot's Actuator serves the Prometheus format on. */
  public static final String METRICS_PATH = "/actuator/prometheus";

  /** The job name of the scraped targets: their {@code job} label. */
  public static final String JOB = "spanner-tuning-test";

  private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);

  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

  private static final LocalBinary BINARY =
      new LocalBinary(
          "Prometheus",
          BINARY_ENV,
          List.of(Paths.get("/usr/bin/prometheus"), Paths.get("/usr/local/bin/prometheus")),
          "apt-get install prometheus, or set " + BINARY_ENV + " to its binary");

  private final LocalBinary.Running program;

  private final Path directory;

  private final Duration scrapeInterval;

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(REQUEST_TIMEOUT).build();

  private final ObjectMapper json = new ObjectMapper();

  /** One series of an instant query: its labels and its value at the query's time. */
  public record Sample(Map<String, String> labels, double value) {}

  /** A point of a range query's series. */
  public record Point(Instant time, double value) {}

  /** One series of a range query: its labels and its points, oldest first. */
  public record Series(Map<String, String> labels, List<Point> points) {}

  /** A scraped target as Prometheus last saw it. */
  public record Target(String instance, String health, Instant lastScrape, String lastError) {}

  private PrometheusServer(LocalBinary.Running program, Path directory, Duration interval) {
    this.program = program;
    this.directory = directory;
    this.scrapeInterval = interval;
  }

  /** The first executable candidate, if any. */
  public static Optional<Path> find() {
    return BINARY.find();
  }

  /** A sentence saying where the binary was looked for, for skip messages. */
  public static String notFoundMessage() {
    return BINARY.notFoundMessage();
  }

  /**
   * Starts the Prometheus found by {@link #find()}, scraping each target's {@link #METRICS_PATH}
   * every {@code scrapeInterval}, and returns once it is ready to answer queries.
   *
   * @param targets {@code host:port} of each application; each becomes an {@code instance} label
   */
  public static PrometheusServer start(Duration scrapeInterval, List<String> targets)
      throws IOException, InterruptedException {
    Path binary = find().orElseThrow(() -> new IllegalStateException(notFoundMessage()));
    return LocalBinary.startOnFreePort(
        (port) -> {
          Path directory = Files.createTempDirectory("prometheus");
          Path config = directory.resolve("prometheus.yml");
          Files.writeString(config, config(scrapeInterval, targets));
          ProcessBuilder command =
              new ProcessBuilder(
                  binary.toString(),
                  "--config.file=" + config,
                  "--storage.tsdb.path=" + directory.resolve("data"),
                  "--web.listen-address=127.0.0.1:" + port);
          return new PrometheusServer(
              LocalBinary.Running.start(command, port, directory.resolve("prometheus.log")),
              directory,
              scrapeInterval);
        },
        PrometheusServer::awaitReady,
        PrometheusServer::close);
  }

  /** The configuration: one job, every target scraped at the interval, no rule, no alerting. */
  static String config(Duration scrapeInterval, List<String> targets) {
    String interval = scrapeInterval.toMillis() + "ms";
    return "global:\n"
        + "  scrape_interval: "
        + interval
        + "\n"
        + "  scrape_timeout: "
        + interval
        + "\n"
        + "  evaluation_interval: "
        + interval
        + "\n"
        + "scrape_configs:\n"
        + "  - job_name: "
        + JOB
        + "\n"
        + "    metrics_path: "
        + METRICS_PATH
        + "\n"
        + "    static_configs:\n"
        + "      - targets: ["
        + targets.stream().map((t) -> "'" + t + "'").collect(Collectors.joining(", "))
        + "]\n";
  }

  /** The server's address, {@code http://127.0.0.1:port}. */
  public URI uri() {
    return URI.create("http://127.0.0.1:" + this.program.port());
  }

  public Duration scrapeInterval() {
    return this.scrapeInterval;
  }

  /** Every scraped target, as Prometheus saw it at its last scrape. */
  public List<Target> targets() throws IOException, InterruptedException {
    List<Target> targets = new ArrayList<>();
    for (JsonNode target : get("/api/v1/targets?state=active").path("activeTargets")) {
      targets.add(
          new Target(
              target.at("/labels/instance").asText(),
              target.get("health").asText(),
              Instant.parse(target.get("lastScrape").asText()),
              target.get("lastError").asText()));
    }
    return targets;
  }

  /**
   * Waits until every target has been scraped successfully {@code scrapes} times after this call
   * began: a value read from an application before the call is then in Prometheus, and a counter
   * has two samples since, for a rate.
   */
  public void awaitScrapes(int scrapes, Duration timeout) throws IOException, InterruptedException {
    Instant deadline = Instant.now().plus(timeout);
    Instant after = Instant.now();
    for (int scrape = 0; scrape < scrapes; scrape++) {
      after = awaitScrapedAfter(after, deadline);
    }
  }

  /** Waits for a successful scrape of every target after {@code after}; returns the latest. */
  private Instant awaitScrapedAfter(Instant after, Instant deadline)
      throws IOException, InterruptedException {
    while (true) {
      List<Target> targets = targets();
      boolean all =
          !targets.isEmpty()
              && targets.stream()
                  .allMatch((t) -> t.health().equals("up") && t.lastScrape().isAfter(after));
      if (all) {
        return targets.stream().map(Target::lastScrape).max(Comparator.naturalOrder()).get();
      }
      if (Instant.now().isAfter(deadline)) {
        throw new IllegalStateException(
            "Prometheus did not scrape every target after " + after + ": " + targets);
      }
      Thread.sleep(50);
    }
  }

  /** An instant query at the server's present. */
  public List<Sample> query(String promql) throws IOException, InterruptedException {
    return query(promql, Instant.now());
  }

  /**
   * An instant query evaluated at {@code time}. NaN values are kept: Grafana shows them as gaps.
   */
  public List<Sample> query(String promql, Instant time) throws IOException, InterruptedException {
    JsonNode data = get("/api/v1/query?query=" + encode(promql) + "&time=" + seconds(time));
    List<Sample> samples = new ArrayList<>();
    String type = data.get("resultType").asText();
    if (type.equals("scalar")) {
      samples.add(new Sample(Map.of(), value(data.get("result"))));
      return samples;
    }
    if (!type.equals("vector")) {
      throw new IllegalStateException("an instant query gave a " + type + ": " + promql);
    }
    for (JsonNode series : data.get("result")) {
      samples.add(new Sample(labels(series), value(series.get("value"))));
    }
    return samples;
  }

  /** A range query from {@code start} to {@code end}, a point every {@code step}. */
  public List<Series> queryRange(String promql, Instant start, Instant end, Duration step)
      throws IOException, InterruptedException {
    JsonNode data =
        get(
            "/api/v1/query_range?query="
                + encode(promql)
                + "&start="
                + seconds(start)
                + "&end="
                + seconds(end)
                + "&step="
                + (step.toMillis() / 1000.0));
    List<Series> result = new ArrayList<>();
    for (JsonNode series : data.get("result")) {
      List<Point> points = new ArrayList<>();
      for (JsonNode point : series.get("values")) {
        points.add(new Point(instant(point.get(0).asDouble()), value(point)));
      }
      result.add(new Series(labels(series), points));
    }
    return result;
  }

  /** Stops the server and deletes its configuration and data. */
  @Override
  public void close() throws InterruptedException {
    this.program.process().close();
    try (Stream<Path> files = Files.walk(this.directory)) {
      Iterator<Path> deepestFirst = files.sorted(Comparator.reverseOrder()).iterator();
      while (deepestFirst.hasNext()) {
        Files.deleteIfExists(deepestFirst.next());
      }
    } catch (IOException ex) {
      // a temp directory; leave what is left of it
    }
  }

  /** The last lines of the server's log, for a failure message. */
  public String logTail() {
    return LocalBinary.tail(this.program.log(), 3000);
  }

  private JsonNode get(String pathAndQuery) throws IOException, InterruptedException {
    HttpResponse<String> response =
        this.http.send(
            HttpRequest.newBuilder(this.uri().resolve(pathAndQuery))
                .timeout(REQUEST_TIMEOUT)
                .GET()
                .build(),
            HttpResponse.BodyHandlers.ofString());
    JsonNode body = this.json.readTree(response.body());
    if (response.statusCode() != 200 || !"success".equals(body.path("status").asText())) {
      throw new IllegalStateException(
          "Prometheus answered " + response.statusCode() + " to " + pathAndQuery + ": " + body);
    }
    return body.get("data");
  }

  private void awaitReady() throws IOException, InterruptedException {
    LocalBinary.awaitReady(
        this.program,
        "prometheus",
        uri().toString(),
        STARTUP_TIMEOUT,
        Duration.ofMillis(50),
        () ->
            this.http
                    .send(
                        HttpRequest.newBuilder(this.uri().resolve("/-/ready"))
                            .timeout(Duration.ofSeconds(1))
                            .GET()
                            .build(),
                        HttpResponse.BodyHandlers.discarding())
                    .statusCode()
                == 200,
        this::logTail);
  }

  private static Map<String, String> labels(JsonNode series) {
    Map<String, String> labels = new TreeMap<>();
    series
        .get("metric")
        .fields()
        .forEachRemaining((e) -> labels.put(e.getKey(), e.getValue().asText()));
    return labels;
  }

  /** A {@code [time, "value"]} pair's value; Prometheus writes NaN and infinities as strings. */
  private static double value(JsonNode pair) {
    String text = pair.get(1).asText();
    return switch (text) {
      case "NaN" -> Double.NaN;
      case "+Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      default -> Double.parseDouble(text);
    };
  }

  private static String seconds(Instant time) {
    return String.format("%d.%03d", time.getEpochSecond(), time.getNano() / 1_000_000);
  }

  private static Instant instant(double seconds) {
    return Instant.ofEpochMilli(Math.round(seconds * 1000));
  }

  private static String encode(String promql) {
    return URLEncoder.encode(promql, StandardCharsets.UTF_8);
  }

  /**
   * A loopback port free now, for an application Prometheus is to scrape: bound and released, so
   * another process may take it in between, which a test on a shared machine can afford.
   */
  public static int freePort() throws IOException {
    return LocalBinary.freePort();
  }
}
