package io.github.spannertuning.compat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.cloud.spanner.Spanner;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.testing.MockSpannerServer;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The starter's switches and its startup error on this line: conditions and failure analysis are
 * Boot APIs whose classes differ between lines (a condition whose annotation a line lacks is
 * silently dropped, so a switch would stop working without an error).
 *
 * <p>Tagged {@code boot-line}: a compat line that changes only the client skips it.
 */
@Tag("boot-line")
@ExtendWith(OutputCaptureExtension.class)
class SwitchesIT {

  private static final MockSpannerServer SERVER = start();

  @AfterAll
  static void stopServer() throws InterruptedException {
    SERVER.close();
  }

  @Test
  void masterSwitchLeavesTheClientAlone() {
    assumeBuiltWithoutAot("switch.spanner.tuning.enabled");
    try (ConfigurableApplicationContext context = run("--spanner.tuning.enabled=false")) {
      assertThat(context.getBeanNamesForType(SpannerTuningRegistry.class)).isEmpty();
      assertThat(SpannerTuning.stateOf(context.getBean(Spanner.class).getOptions())).isEmpty();
    }
    try (ConfigurableApplicationContext context = run()) {
      assertThat(SpannerTuning.stateOf(context.getBean(Spanner.class).getOptions())).isPresent();
    }
    CompatLine.report("switch.spanner.tuning.enabled", "works");
  }

  @Test
  void metricsSwitchRemovesTheMeters() {
    assumeBuiltWithoutAot("switch.spanner.tuning.metrics.enabled");
    try (ConfigurableApplicationContext context = run("--spanner.tuning.metrics.enabled=false")) {
      assertThat(SpannerTuning.stateOf(context.getBean(Spanner.class).getOptions())).isPresent();
      assertThat(context.getBean(MeterRegistry.class).find("spanner.tuning.channel.count").meters())
          .isEmpty();
    }
    try (ConfigurableApplicationContext context = run()) {
      assertThat(context.getBean(MeterRegistry.class).find("spanner.tuning.channel.count").meters())
          .isNotEmpty();
    }
    CompatLine.report("switch.spanner.tuning.metrics.enabled", "works");
  }

  @Test
  void badValueStopsStartupNamingTheProperty(CapturedOutput output) {
    assertThatThrownBy(() -> run("--spanner.tuning.channels=0").close())
        .isInstanceOf(Exception.class);
    assertThat(output)
        .contains("Invalid value '0' for property 'spanner.tuning.channels'")
        .contains("Set 'spanner.tuning.channels' to an integer from 1 to 256.");
    CompatLine.report(
        "failure-analysis",
        "spanner.tuning.channels=0 stops startup; the message names the property and its allowed values");
  }

  /**
   * Spring AOT decides the application's beans, and so these switches' conditions, when it
   * processes the build; a value given at run time does not change them.
   */
  private static void assumeBuiltWithoutAot(String key) {
    if (CompatLine.AOT) {
      CompatLine.report(
          key, "fixed when process-aot runs (a run-time value is not applied under AOT)");
    }
    Assumptions.assumeFalse(CompatLine.AOT, "Spring AOT evaluates conditions at build time");
  }

  private static ConfigurableApplicationContext run(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "--compat.spanner.host=http://127.0.0.1:" + SERVER.port();
    System.arraycopy(args, 0, all, 1, args.length);
    // main(...): under AOT, Boot looks for the generated initializer of the main class, which it
    // would otherwise take from the stack (the test runner's).
    return new SpringApplicationBuilder(CompatApplication.class)
        .main(CompatApplication.class)
        .web(WebApplicationType.NONE)
        .run(all);
  }

  private static MockSpannerServer start() {
    try {
      return CompatLine.server().start();
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
  }
}
