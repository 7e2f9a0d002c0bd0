package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Spanner's {@code server-timing} values as the client's own interceptor reads them. */
class ServerTimingTest {

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "gfet4t7; dur=12|12000000",
        "gfet4t7;dur=12.5|12500000",
        "gfet4t7; dur=0.25|250000",
        "gfet4t7;  dur=3, afe; dur=1|3000000",
        "afe; dur=1, gfet4t7; dur=7|7000000",
        "  gfet4t7; dur=4 |4000000",
        "gfet4t7; dur=4; desc=x|4000000"
      })
  void readsTheFrontendsTime(String header, long nanos) {
    assertThat(ServerTiming.durationNanos(header, ServerTiming.GFE)).isEqualTo(nanos);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {"gfet4t7; dur=3, afe; dur=1.5|1500000", "afe;dur=2|2000000"})
  void readsTheApplicationFrontendsTime(String header, long nanos) {
    assertThat(ServerTiming.durationNanos(header, ServerTiming.AFE)).isEqualTo(nanos);
  }

  @ParameterizedTest
  @NullSource
  @ValueSource(
      strings = {
        "",
        "gfet4t7",
        "gfet4t7;",
        "gfet4t7; dur=",
        "gfet4t7; dur=abc",
        "gfet4t7; dur=-3",
        "gfet4t7; dur=1.",
        "gfet4t7; dur=12x",
        "gfet4t7; dur=99999999999999999999",
        "gfet4t7x; dur=3",
        "xgfet4t7; dur=3",
        "afe; dur=3",
        ",,,;;;==",
        "gfet4t7: dur=3",
        "gfet4t7; duration=3"
      })
  void aMissingOrMalformedValueIsMissingAndNeverThrows(String header) {
    assertThat(ServerTiming.durationNanos(header, ServerTiming.GFE))
        .isEqualTo(ServerTiming.MISSING);
  }
}
