package io.github.spannertuning.pool;

import com.google.spanner.v1.BatchCreateSessionsRequest;
import com.google.spanner.v1.BeginTransactionRequest;
import com.google.spanner.v1.CommitRequest;
import com.google.spanner.v1.CreateSessionRequest;
import com.google.spanner.v1.ExecuteBatchDmlRequest;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.PartitionQueryRequest;
import com.google.spanner.v1.PartitionReadRequest;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.RollbackRequest;
import io.grpc.MethodDescriptor;

/** The Spanner service's methods and requests, as the observations of attempts name them. */
final class Methods {

  private static final String SERVICE = "google.spanner.v1.Spanner/";

  private Methods() {}

  /**
   * The bare name of a method of the Spanner service: a constant for each one the client calls, as
   * {@code getBareMethodName()} cuts a new string on every call.
   */
  static String bareName(MethodDescriptor<?, ?> method) {
    String name = method.getFullMethodName();
    return switch (name) {
      case SERVICE + "ExecuteStreamingSql" -> "ExecuteStreamingSql";
      case SERVICE + "StreamingRead" -> "StreamingRead";
      case SERVICE + "ExecuteSql" -> "ExecuteSql";
      case SERVICE + "Read" -> "Read";
      case SERVICE + "Commit" -> "Commit";
      case SERVICE + "BeginTransaction" -> "BeginTransaction";
      case SERVICE + "Rollback" -> "Rollback";
      case SERVICE + "ExecuteBatchDml" -> "ExecuteBatchDml";
      case SERVICE + "PartitionQuery" -> "PartitionQuery";
      case SERVICE + "PartitionRead" -> "PartitionRead";
      case SERVICE + "CreateSession" -> "CreateSession";
      case SERVICE + "BatchCreateSessions" -> "BatchCreateSessions";
      case SERVICE + "BatchWrite" -> "BatchWrite";
      default -> {
        String bare = method.getBareMethodName();
        yield (bare != null) ? bare : name;
      }
    };
  }

  /** The session (or, for a session's creation, the database) a request names; else null. */
  static String sessionOf(Object request) {
    if (request instanceof ExecuteSqlRequest sql) {
      return sql.getSession();
    }
    if (request instanceof ReadRequest read) {
      return read.getSession();
    }
    if (request instanceof CommitRequest commit) {
      return commit.getSession();
    }
    if (request instanceof BeginTransactionRequest begin) {
      return begin.getSession();
    }
    if (request instanceof RollbackRequest rollback) {
      return rollback.getSession();
    }
    if (request instanceof ExecuteBatchDmlRequest batch) {
      return batch.getSession();
    }
    if (request instanceof PartitionQueryRequest partition) {
      return partition.getSession();
    }
    if (request instanceof PartitionReadRequest partition) {
      return partition.getSession();
    }
    if (request instanceof CreateSessionRequest create) {
      return create.getDatabase();
    }
    if (request instanceof BatchCreateSessionsRequest create) {
      return create.getDatabase();
    }
    return null;
  }
}
