package io.github.spannertuning.actuate;

import static io.github.spannertuning.actuate.SpannerTuningEndpointStatementsWebTests.EMAIL;
import static io.github.spannertuning.actuate.SpannerTuningEndpointStatementsWebTests.FINGERPRINT;
import static io.github.spannertuning.actuate.SpannerTuningEndpointStatementsWebTests.ID;
import static io.github.spannertuning.actuate.SpannerTuningEndpointStatementsWebTests.STATEMENT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * With {@code management.endpoint.spannertuning.show-statements=always}: the statement normalized,
 * {@code ?} for each value, and still no value.
 */
@TestPropertySource(
    properties = {
      "spanner.tuning.hedging.enabled=true",
      "management.endpoint.spannertuning.show-statements=always"
    })
class SpannerTuningEndpointStatementsShownWebTests extends EndpointOverHttp {

  @Test
  void showsTheStatementWithAQuestionMarkForEachValue() throws Exception {
    queries(STATEMENT, 20);
    for (String path : new String[] {"/actuator/spannertuning", CLIENT}) {
      String body = this.http.getForObject(path, String.class);
      assertThat(body)
          .as(path)
          .doesNotContain(EMAIL)
          .doesNotContain(ID)
          .contains("SELECT * FROM Singers WHERE Email = ? AND SingerId = ?");
    }
    JsonNode shape = client().at("/hedging/shapes/0");
    assertThat(shape.get("shape").asText()).isEqualTo(FINGERPRINT);
    assertThat(shape.get("statement").asText())
        .isEqualTo("SELECT * FROM Singers WHERE Email = ? AND SingerId = ?");
  }
}
