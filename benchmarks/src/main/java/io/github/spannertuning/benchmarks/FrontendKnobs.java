package io.github.spannertuning.benchmarks;

import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the simulated frontend models, each knob a flag of {@link FrontendMain} (and of {@link
 * BenchmarkMain}, which passes them on).
 *
 * <p>The reset limit defaults to Netty's own HTTP/2 default (200 RST_STREAM frames per 30 s per
 * connection, {@code Http2FrameCodecBuilder.decoderEnforceMaxRstFramesPerWindow}); Spanner's is not
 * documented.
 *
 * <p>The frontend answers {@code SELECT 1} with one row, as Spanner does ({@link
 * MockSpannerServer#PRIMING_QUERY}): on grpc-gcp 1.20 (the 6.127 line) the client primes each
 * channel its dynamic pool adds with that query, and adds the channel only once it has answered. It
 * takes the frontend's time per query, as any query does.
 *
 * <p>It serves a report ({@link MockSpannerServer#REPORT}: a few rows) {@code report-cost-ms} (100)
 * later than a point select on every connection, on top of the time per query and of a slowed
 * connection's delay, as a costly statement is: the {@code mixed} workload sends one in ten, a cost
 * that routing must not take for a slow connection.
 *
 * <p>The connection knobs ({@link #CONNECTION_FLAGS}) are set by the workloads that need them, on a
 * frontend of their own ({@code aging}, {@code fresh-instance}): every call on a new connection
 * waits until {@code connection-set-up-ms} after its first call, and with {@code
 * max-connection-age-s} the server retires each connection at that age (grpc-java's {@code
 * maxConnectionAge}, which adds a jitter of ±10 % itself), its calls in flight given {@code
 * max-connection-age-grace-s}.
 */
record FrontendKnobs(
    double serviceFloorMs,
    double serviceRandomMs,
    double trailersDelayMs,
    boolean markLast,
    int maxConcurrentStreams,
    int maxRstFrames,
    int rstWindowSeconds,
    boolean countFrames,
    double reportCostMs,
    double connectionSetUpMs,
    double maxConnectionAgeSeconds,
    double maxConnectionAgeGraceSeconds) {

  static final String[] FLAGS = {
    "service-floor-ms",
    "service-random-ms",
    "trailers-delay-ms",
    "mark-last",
    "max-concurrent-streams",
    "max-rst-frames",
    "rst-window-s",
    "count-frames",
    "report-cost-ms"
  };

  /**
   * The frontend's connection knobs: not passed on from the run's flags, since they would hold for
   * every workload; the workloads that need them start a frontend of their own with them.
   */
  static final String[] CONNECTION_FLAGS = {
    "connection-set-up-ms", "max-connection-age-s", "max-connection-age-grace-s"
  };

  static FrontendKnobs from(Flags flags) {
    FrontendKnobs knobs =
        new FrontendKnobs(
            flags.positive("service-floor-ms", 2.0),
            flags.positive("service-random-ms", 1.0),
            flags.positive("trailers-delay-ms", 1.0),
            flags.bool("mark-last", true),
            flags.integer("max-concurrent-streams", 100, 0, Integer.MAX_VALUE),
            flags.integer("max-rst-frames", 200, 0, Integer.MAX_VALUE),
            flags.integer("rst-window-s", 30, 1, 3600),
            flags.bool("count-frames", true),
            flags.positive("report-cost-ms", 100),
            flags.positive("connection-set-up-ms", 0),
            flags.positive("max-connection-age-s", 0),
            flags.positive("max-connection-age-grace-s", 1));
    flags.rejectUnknown();
    return knobs;
  }

  MockSpannerServer start() throws IOException {
    MockSpannerServer.Builder builder =
        MockSpannerServer.builder()
            .serviceTime(serviceTime())
            .markLast(this.markLast)
            .trailersDelay(millis(this.trailersDelayMs))
            .maxConcurrentStreams(this.maxConcurrentStreams)
            .reportCost(millis(this.reportCostMs));
    if (this.maxRstFrames > 0) {
      builder.resetLimit(this.maxRstFrames, this.rstWindowSeconds);
    }
    if (this.countFrames) {
      builder.countFrames();
    }
    if (this.connectionSetUpMs > 0) {
      builder.connectionSetUp(millis(this.connectionSetUpMs));
    }
    if (this.maxConnectionAgeSeconds > 0) {
      builder.maxConnectionAge(
          millis(this.maxConnectionAgeSeconds * 1000),
          millis(this.maxConnectionAgeGraceSeconds * 1000));
    }
    return builder.start();
  }

  /** Whether new connections cost a set-up or connections are retired: the connection knobs. */
  boolean modelsConnections() {
    return this.connectionSetUpMs > 0 || this.maxConnectionAgeSeconds > 0;
  }

  ServiceTime serviceTime() {
    return ServiceTime.floorPlusExponential(
        millis(this.serviceFloorMs), millis(this.serviceRandomMs));
  }

  static Duration millis(double millis) {
    return Duration.ofNanos((long) (millis * 1_000_000));
  }

  Map<String, Object> asMap() {
    Map<String, Object> map = new LinkedHashMap<>();
    map.put(
        "serviceTime",
        this.serviceFloorMs + " ms + exponential(mean " + this.serviceRandomMs + " ms) per query");
    map.put("lastOnFinalMessage", this.markLast);
    map.put("trailersDelayMs", this.trailersDelayMs);
    map.put(
        "maxConcurrentStreamsPerConnection",
        (this.maxConcurrentStreams > 0)
            ? Integer.toString(this.maxConcurrentStreams)
            : "unlimited");
    map.put(
        "maxRstFramesPerWindow",
        (this.maxRstFrames > 0)
            ? this.maxRstFrames + " per " + this.rstWindowSeconds + " s per connection"
            : "off");
    map.put(
        "framesCounted", this.countFrames ? "RST_STREAM and GOAWAY, by a loopback proxy" : "no");
    map.put(
        "reportCost",
        VariantTally.trim(this.reportCostMs)
            + " ms more than a point select on every connection: "
            + MockSpannerServer.REPORT);
    if (this.connectionSetUpMs > 0) {
      map.put(
          "connectionSetUp",
          VariantTally.trim(this.connectionSetUpMs)
              + " ms: every call on a new connection waits until then after its first call");
    }
    if (this.maxConnectionAgeSeconds > 0) {
      map.put(
          "maxConnectionAge",
          VariantTally.trim(this.maxConnectionAgeSeconds)
              + " s (grpc-java's, +/-10 % jitter), grace "
              + VariantTally.trim(this.maxConnectionAgeGraceSeconds)
              + " s");
    }
    return map;
  }
}
