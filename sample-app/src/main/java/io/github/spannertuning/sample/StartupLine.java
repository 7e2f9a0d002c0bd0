package io.github.spannertuning.sample;

import io.github.spannertuning.sample.backend.SampleBackend;
import java.lang.management.ManagementFactory;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/** The one line a user looks for: where to point the browser. */
@Component
class StartupLine {

  private static final Log logger = LogFactory.getLog(StartupLine.class);

  private final SampleBackend backend;

  StartupLine(SampleBackend backend) {
    this.backend = backend;
  }

  @EventListener
  void ready(ApplicationReadyEvent event) {
    if (event.getApplicationContext() instanceof WebServerApplicationContext web) {
      double seconds = ManagementFactory.getRuntimeMXBean().getUptime() / 1000.0;
      logger.info(
          String.format(
              "Sample ready in %.1f s on %s. Open http://localhost:%d/",
              seconds, this.backend.description(), web.getWebServer().getPort()));
    }
  }
}
