package io.github.spannertuning.experiment;

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
}
