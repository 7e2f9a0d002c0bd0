package io.github.spannertuning.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * Asked for an emulator the machine lacks, the sample stops with the three ways, no stack trace.
 */
@ExtendWith(OutputCaptureExtension.class)
class SampleBackendMissingTests {

  @Test
  void anEmulatorAskedForButMissingStopsWithTheWaysToGiveItABackend(CapturedOutput output) {
    assertThatThrownBy(
        () ->
            new SpringApplicationBuilder(SampleApplication.class)
                .run(
                    "--sample.backend=emulator",
                    "--sample.emulator.search-locations=/nonexistent/emulator_main",
                    "--SPANNER_EMULATOR_BINARY=",
                    "--server.port=0")
                .close());
    assertThat(output.getAll())
        .contains(
            "The sample has no Spanner backend: sample.backend=emulator, but no Cloud Spanner"
                + " emulator at /nonexistent/emulator_main.",
            "SPANNER_EMULATOR_BINARY",
            "SPANNER_EMULATOR_HOST=localhost:9010",
            "sample.backend=spanner")
        .doesNotContain("\tat io.github.spannertuning");
  }
}
