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
 */
record FrontendKnobs(
    double serviceFloorMs,
    double serviceRandomMs,
    double trailersDelayMs,
    boolean markLast,
    int maxConcurrentStreams,
    int maxRstFrames,
    int rstWindowSeconds,
    boolean countFrames) {

  static final String[] FLAGS = {
    "service-floor-ms", "service-random-ms", "trailers-delay-ms", "mark-last",
    "max-concurrent-streams", "max-rst-frames", "rst-window-s", "count-frames"
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
            flags.bool("count-frames", true));
    flags.rejectUnknown();
    return knobs;
  }

  MockSpannerServer start() throws IOException {
    MockSpannerServer.Builder builder =
        MockSpannerServer.builder()
            .serviceTime(serviceTime())
            .markLast(this.markLast)
            .trailersDelay(millis(this.trailersDelayMs))
            .maxConcurrentStreams(this.maxConcurrentStreams);
    if (this.maxRstFrames > 0) {
      builder.resetLimit(this.maxRstFrames, this.rstWindowSeconds);
    }
    if (this.countFrames) {
      builder.countFrames();
    }
    return builder.start();
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
    return map;
  }
}
