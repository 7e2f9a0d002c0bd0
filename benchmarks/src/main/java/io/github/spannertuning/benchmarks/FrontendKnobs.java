package io.github.spannertuning.benchmarks;

import io.github.spannertuning.testing.MockSpannerServer;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** What the simulated frontend models, each knob a flag of {@link FrontendMain}. */
record FrontendKnobs(
    double serviceFloorMs,
    double serviceRandomMs,
    double trailerDelayMs,
    int maxConcurrentStreams,
    int maxRstFrames,
    int rstWindowSeconds) {

  static final String[] FLAGS = {
    "service-floor-ms", "service-random-ms", "trailer-delay-ms", "max-concurrent-streams",
    "max-rst-frames", "rst-window-s"
  };

  static FrontendKnobs from(Flags flags) {
    FrontendKnobs knobs =
        new FrontendKnobs(
            flags.positive("service-floor-ms", 2.0),
            flags.positive("service-random-ms", 1.0),
            flags.positive("trailer-delay-ms", 0.3),
            flags.integer("max-concurrent-streams", 100, 1, Integer.MAX_VALUE),
            flags.integer("max-rst-frames", 200, 0, Integer.MAX_VALUE),
            flags.integer("rst-window-s", 10, 1, 3600));
    flags.rejectUnknown();
    return knobs;
  }

  MockSpannerServer start() throws IOException {
    return MockSpannerServer.start();
  }

  Map<String, Object> asMap() {
    Map<String, Object> map = new LinkedHashMap<>();
    map.put("serviceTime", serviceFloorMs + " ms + exponential(mean " + serviceRandomMs + " ms)");
    map.put("trailerDelayMs", trailerDelayMs);
    map.put("lastFlagOnFinalMessage", true);
    map.put("maxConcurrentStreamsPerConnection", maxConcurrentStreams);
    map.put("maxRstFramesPerWindow", maxRstFrames + " per " + rstWindowSeconds + " s");
    return map;
  }
}
