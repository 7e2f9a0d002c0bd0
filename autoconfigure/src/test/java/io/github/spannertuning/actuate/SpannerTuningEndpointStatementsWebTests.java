package io.github.spannertuning.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.springframework.test.context.TestPropertySource;

/**
 * With hedging on, a statement with its values written in, then the endpoint over HTTP with Boot's
 * defaults and this starter's: no value and no SQL, the statement named by its fingerprint.
 */
@TestPropertySource(properties = "spanner.tuning.hedging.enabled=true")
class SpannerTuningEndpointStatementsWebTests extends EndpointOverHttp {

  static final String EMAIL = "ann@example.com";

  static final String ID = "73829146";

  static final String STATEMENT =
      "SELECT * FROM Singers WHERE Email = '" + EMAIL + "' AND SingerId = " + ID;

  /** The first 16 hex digits of the SHA-256 of the statement with {@code ?} for its values. */
  static final String FINGERPRINT = "query def541b87c060a4c";

  @Test
  void showsTheStatementsFingerprintAndNoValueNorSql() throws Exception {
    queries(STATEMENT, 20);
    for (String path : new String[] {"/actuator/spannertuning", CLIENT}) {
      String body = this.http.getForObject(path, String.class);
      assertThat(body).as(path).doesNotContain(EMAIL).doesNotContain(ID).contains(FINGERPRINT);
      assertNothingSecret(body);
    }
    JsonNode shape = client().at("/hedging/shapes/0");
    assertThat(shape.get("shape").asText()).isEqualTo(FINGERPRINT);
    assertThat(shape.has("statement")).as("a statement field in %s", shape).isFalse();
    assertThat(shape.get("samples").asInt()).isPositive();
  }
}
