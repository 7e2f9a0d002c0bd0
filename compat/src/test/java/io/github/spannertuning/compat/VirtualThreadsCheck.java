package io.github.spannertuning.compat;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.Spanner;
import com.google.gson.JsonObject;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.ServiceTime;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The application with {@code spring.threads.virtual.enabled=true} on Java 21+ (profile
 * virtual-threads, which alone runs this class): its requests, and so the Spanner calls, the picker
 * and the guard's drain, run on virtual threads; none of them pins its carrier (JFR {@code
 * jdk.VirtualThreadPinned}, every event recorded), and the features and the wire behave as on
 * platform threads.
 */
@SpringBootTest(
    classes = CompatApplication.class,
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = "compat.spanner.mode=own-options")
class VirtualThreadsCheck {

  static final MockSpannerServer SERVER = start();

  @DynamicPropertySource
  static void mockServer(DynamicPropertyRegistry registry) {
    registry.add("compat.spanner.host", () -> "http://127.0.0.1:" + SERVER.port());
    registry.add("compat.spanner.channels", () -> 8);
  }

  @Value("${local.server.port}")
  int port;

  /**
   * The application's client closes before its server: a 6.89 client deletes its pooled sessions
   * when it closes, and against a closed server it would wait out those calls when the context
   * closes at the JVM's exit (30 s, after which Surefire kills the test JVM). Closing it again then
   * does nothing.
   */
  @AfterAll
  static void stopServer(@Autowired ObjectProvider<Spanner> spanner) throws InterruptedException {
    spanner.ifAvailable(Spanner::close);
    SERVER.close();
  }

  @Test
  void spannerCallsRunOnVirtualThreadsWithoutPinning() throws Exception {
    int requests = 32;
    int selectsPerRequest = 25;
    // Warm up first: a cold JVM pins carriers while threads wait for one another's class
    // initialisation (the client's, OpenCensus'), which is not what this measures.
    for (int i = 0; i < 4; i++) {
      assertThat(
              CompatLine.post(this.port, "/compat/point-selects?count=" + selectsPerRequest, "")
                  .status())
          .isEqualTo(200);
    }
    JsonObject before = Endpoint.client(this.port, "spanner");
    int rstBefore = SERVER.rstStreams();
    List<Boolean> virtual = new ArrayList<>();
    int rows = 0;
    List<RecordedEvent> pinned;
    try (Recording recording = new Recording()) {
      recording.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
      recording.start();
      ExecutorService callers = Executors.newFixedThreadPool(16);
      try {
        List<Future<CompatLine.Response>> responses = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
          responses.add(
              callers.submit(
                  () ->
                      CompatLine.post(
                          this.port, "/compat/point-selects?count=" + selectsPerRequest, "")));
        }
        for (Future<CompatLine.Response> response : responses) {
          CompatLine.Response r = response.get(2, TimeUnit.MINUTES);
          assertThat(r.status()).as(r.body()).isEqualTo(200);
          rows += r.json().get("rows").getAsInt();
          virtual.add(r.json().get("virtualThread").getAsBoolean());
        }
      } finally {
        callers.shutdownNow();
      }
      // Trailers follow the last message by a millisecond; let the drained streams end.
      Thread.sleep(500);
      recording.stop();
      Path file = Files.createTempFile("virtual-threads", ".jfr");
      recording.dump(file);
      pinned = RecordingFile.readAllEvents(file);
      Files.delete(file);
    }
    JsonObject after = Endpoint.client(this.port, "spanner");
    int selects = requests * selectsPerRequest;
    long routed =
        Endpoint.counter(after, "singleUseRouted") - Endpoint.counter(before, "singleUseRouted");
    long skipped =
        Endpoint.counter(after, "streamEndGuardSkipped")
            - Endpoint.counter(before, "streamEndGuardSkipped");
    int rst = SERVER.rstStreams() - rstBefore;
    List<String> starterPins = new ArrayList<>();
    Map<String, Integer> reasons = new TreeMap<>();
    for (RecordedEvent event : pinned) {
      reasons.merge(event.getString("pinnedReason"), 1, Integer::sum);
      if (event.getStackTrace() != null
          && event.getStackTrace().getFrames().stream()
              .map(RecordedFrame::getMethod)
              .anyMatch(m -> isStarterCode(m.getType().getName()))) {
        starterPins.add(event.toString());
      }
    }
    String figures =
        String.format(
            "%d point selects from %d requests: on virtual threads %d of %d requests, routed by the starter %d, cancels skipped by the guard %d, RST_STREAM on the wire %d, pinned events %d (in starter code %d) %s",
            selects,
            requests,
            virtual.stream().filter(v -> v).count(),
            requests,
            routed,
            skipped,
            rst,
            pinned.size(),
            starterPins.size(),
            reasons);
    CompatLine.report("measured.virtual-threads", figures);

    assertThat(rows).isEqualTo(selects);
    assertThat(virtual).as(figures).containsOnly(true);
    assertThat(starterPins).as(figures).isEmpty();
    Endpoint.assertFeaturesAsExpected(after);
    if (CompatLine.expected("single-use-distribution").equals("on")) {
      assertThat(routed).as(figures).isEqualTo(selects);
    }
    if (CompatLine.expected("stream-end-guard").equals("on")) {
      assertThat(rst).as(figures).isZero();
    }
  }

  /** The starter's packages; the compat application's own code is not the starter's. */
  private static boolean isStarterCode(String className) {
    return className.startsWith("io.github.spannertuning.")
        && !className.startsWith("io.github.spannertuning.compat.");
  }

  private static MockSpannerServer start() {
    try {
      return CompatLine.server()
          .serviceTime(ServiceTime.uniform(Duration.ofMillis(2), Duration.ofMillis(5)))
          .countFrames()
          .start();
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }
}
