package io.github.spannertuning.client;

import java.util.Arrays;
import java.util.stream.Collectors;

/** The tunings spanner-tuning can apply to a Spanner client. */
public enum Feature {

  /**
   * Single-use reads and queries go to the channel with the lowest expected latency, with no
   * affinity binding.
   */
  SINGLE_USE_DISTRIBUTION("single-use-distribution"),

  /**
   * Each read-only and read/write transaction's first call goes to the channel with the lowest
   * expected latency, and the transaction's later calls follow it.
   */
  TRANSACTION_ROUTING("transaction-routing"),

  /** A cancel of a stream that has finished (at its last message, or ended) is skipped. */
  STREAM_END_GUARD("stream-end-guard"),

  /**
   * A read that is safe to send twice and has not answered by the time most reads of its shape have
   * is sent again to another channel, within a budget of extra calls; the first attempt to answer
   * is the one the application reads.
   */
  HEDGING("hedging"),

  /** The grpc-gcp channel pool, which picks channels by load, is switched on. */
  GRPC_GCP("grpc-gcp");

  private final String id;

  Feature(String id) {
    this.id = id;
  }

  /** The feature's name as used in property keys and by the endpoint. */
  public String id() {
    return this.id;
  }

  /**
   * Whether the feature can be switched on a running client. grpc-gcp cannot: it is chosen when the
   * channels are built.
   */
  public boolean isSwitchableAtRuntime() {
    return this != GRPC_GCP;
  }

  /**
   * Returns the feature with the given id.
   *
   * @throws IllegalArgumentException naming the known ids when there is none
   */
  public static Feature fromId(String id) {
    for (Feature feature : values()) {
      if (feature.id.equals(id)) {
        return feature;
      }
    }
    throw new IllegalArgumentException(
        "Unknown feature '"
            + id
            + "'; known: "
            + Arrays.stream(values()).map(Feature::id).collect(Collectors.joining(", ")));
  }
}
