package io.github.spannertuning.experiment;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The calls an experiment compares, each in its own histogram: their latencies differ by an order
 * of magnitude, and the features act on them differently.
 */
public enum CallKind {

  /** ExecuteSql, ExecuteStreamingSql, Read and StreamingRead outside a transaction. */
  SINGLE_USE("single-use"),

  /** The same calls inside a read/write or multi-use read-only transaction. */
  TRANSACTION_QUERY("transaction-query"),

  /** Commit. */
  COMMIT("commit");

  private final String id;

  CallKind(String id) {
    this.id = id;
  }

  /** The kind's key in the experiment's {@code results}. */
  public String id() {
    return this.id;
  }

  /**
   * Returns the kind with the given id.
   *
   * @throws IllegalArgumentException naming the known ids when there is none
   */
  public static CallKind fromId(String id) {
    for (CallKind kind : values()) {
      if (kind.id.equals(id)) {
        return kind;
      }
    }
    throw new IllegalArgumentException(
        "Unknown call kind '"
            + id
            + "'; known: "
            + Arrays.stream(values()).map(CallKind::id).collect(Collectors.joining(", ")));
  }
}
