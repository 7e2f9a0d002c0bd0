package io.github.spannertuning.compat;

import static io.github.spannertuning.compat.CompatLine.text;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import java.util.List;

/** Reading the spannertuning endpoint's answer for one client. */
final class Endpoint {

  static final List<String> FEATURES =
      List.of(
          "single-use-distribution",
          "transaction-routing",
          "stream-end-guard",
          "hedging",
          "grpc-gcp");

  private Endpoint() {}

  static JsonObject client(int port, String client) {
    CompatLine.Response response = CompatLine.get(port, "/actuator/spannertuning");
    assertThat(response.status())
        .as("GET /actuator/spannertuning: %s", response.body())
        .isEqualTo(200);
    JsonObject clients = response.json().getAsJsonObject("clients");
    assertThat(clients.has(client)).as("tuned clients: %s", clients.keySet()).isTrue();
    return clients.getAsJsonObject(client);
  }

  /** Each feature as this line's profile expects it, unsupported ones with their reason. */
  static void assertFeaturesAsExpected(JsonObject client) {
    for (String feature : FEATURES) {
      String expected = CompatLine.expected(feature);
      assertThat(text(client, "features/" + feature + "/state"))
          .as("%s on %s (endpoint: %s)", feature, CompatLine.LINE, client.get("features"))
          .isEqualTo(expected);
      if (expected.equals("unsupported")) {
        assertThat(text(client, "features/" + feature + "/reason"))
            .as("reason given for unsupported %s", feature)
            .isNotBlank();
      }
    }
  }

  /** The library versions the endpoint reports are the ones the profile put on the classpath. */
  static void assertVersionsAsExpected(JsonObject client) {
    assertThat(text(client, "versions/googleCloudSpanner")).isEqualTo(CompatLine.SPANNER);
    assertThat(text(client, "versions/grpcGcp")).isEqualTo(CompatLine.GRPC_GCP);
    assertThat(text(client, "versions/gax")).isNotBlank().isNotEqualTo("unknown");
    assertThat(text(client, "versions/grpcJava")).isNotBlank().isNotEqualTo("unknown");
  }

  static String describe(JsonObject client, String feature) {
    String state = text(client, "features/" + feature + "/state");
    String reason = text(client, "features/" + feature + "/reason");
    return (reason != null) ? state + " (" + reason + ")" : state;
  }

  static long calls(JsonObject client) {
    long calls = 0;
    for (var channel : client.getAsJsonArray("channels")) {
      calls += channel.getAsJsonObject().get("calls").getAsLong();
    }
    return calls;
  }

  static long counter(JsonObject client, String name) {
    return client.get(name).getAsLong();
  }
}
