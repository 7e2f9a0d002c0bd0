package io.github.spannertuning.testing;

import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.Value;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.TextFormat;
import com.google.spanner.v1.ResultSet;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.StringJoiner;

/**
 * What {@link MockSpannerService} answers to one statement or read: rows, an update count or an
 * error, registered with {@link MockSpannerService#putStatementResult}.
 *
 * <p>A statement is matched by its SQL text and parameter values, exactly; a read by its table and
 * columns. The factories take the client's {@link Statement}, the value the tests already build for
 * their queries, and keep of it only the SQL and the parameters as protobuf values, as the client
 * sends them: the service itself sees nothing but the protos on the wire.
 */
public final class StatementResult {

  enum Kind {
    QUERY,
    UPDATE,
    EXCEPTION
  }

  /** What a request is matched by. */
  sealed interface Key permits SqlKey, ReadKey {}

  /** A statement: its SQL text and its parameter values as the client sends them. */
  record SqlKey(String sql, Struct params) implements Key {

    @Override
    public String toString() {
      StringJoiner values = new StringJoiner(", ", " with ", "").setEmptyValue("");
      this.params
          .getFieldsMap()
          .forEach(
              (name, value) -> values.add("@" + name + " " + TextFormat.shortDebugString(value)));
      return this.sql + values;
    }
  }

  /** A read: its table and columns. */
  record ReadKey(String table, List<String> columns) implements Key {

    @Override
    public String toString() {
      return "a read of " + this.table + " " + this.columns;
    }
  }

  private final Key key;

  private final Kind kind;

  private final ResultSet resultSet;

  private final long updateCount;

  private final StatusRuntimeException exception;

  private StatementResult(
      Key key, Kind kind, ResultSet resultSet, long updateCount, StatusRuntimeException exception) {
    this.key = key;
    this.kind = kind;
    this.resultSet = resultSet;
    this.updateCount = updateCount;
    this.exception = exception;
  }

  /** Rows for a query, streamed one row per {@code PartialResultSet}. */
  public static StatementResult query(Statement statement, ResultSet resultSet) {
    return new StatementResult(
        key(statement), Kind.QUERY, Objects.requireNonNull(resultSet), 0, null);
  }

  /** An exact update count for a DML statement. */
  public static StatementResult update(Statement statement, long updateCount) {
    return new StatementResult(key(statement), Kind.UPDATE, null, updateCount, null);
  }

  /** An error for a statement, returned instead of any result. */
  public static StatementResult exception(Statement statement, StatusRuntimeException exception) {
    return new StatementResult(
        key(statement), Kind.EXCEPTION, null, 0, Objects.requireNonNull(exception));
  }

  /**
   * Rows for every read of these columns of the table, whatever keys it asks for: the service does
   * not filter rows by key, so a result is registered for all keys.
   *
   * @throws IllegalArgumentException if {@code keySet} is not {@link KeySet#all()}
   */
  public static StatementResult read(
      String table, KeySet keySet, Iterable<String> columns, ResultSet resultSet) {
    if (!keySet.isAll()) {
      throw new IllegalArgumentException(
          "reads are matched by table and columns only: register them for KeySet.all()");
    }
    List<String> names = new ArrayList<>();
    columns.forEach(names::add);
    return new StatementResult(
        new ReadKey(table, List.copyOf(names)),
        Kind.QUERY,
        Objects.requireNonNull(resultSet),
        0,
        null);
  }

  /** Rows for a request matched by {@code key}: the service's own answers. */
  static StatementResult rows(Key key, ResultSet resultSet) {
    return new StatementResult(key, Kind.QUERY, resultSet, 0, null);
  }

  Key key() {
    return this.key;
  }

  Kind kind() {
    return this.kind;
  }

  ResultSet resultSet() {
    return this.resultSet;
  }

  long updateCount() {
    return this.updateCount;
  }

  StatusRuntimeException exception() {
    return this.exception;
  }

  private static SqlKey key(Statement statement) {
    Struct.Builder params = Struct.newBuilder();
    for (Map.Entry<String, Value> parameter : statement.getParameters().entrySet()) {
      params.putFields(parameter.getKey(), proto(parameter.getKey(), parameter.getValue()));
    }
    return new SqlKey(statement.getSql(), params.build());
  }

  /** A parameter value as the client puts it on the wire, for the types the tests bind. */
  private static com.google.protobuf.Value proto(String name, Value value) {
    com.google.protobuf.Value.Builder proto = com.google.protobuf.Value.newBuilder();
    if (value.isNull()) {
      return proto.setNullValue(NullValue.NULL_VALUE).build();
    }
    return switch (value.getType().getCode()) {
      case INT64 -> proto.setStringValue(Long.toString(value.getInt64())).build();
      case STRING -> proto.setStringValue(value.getString()).build();
      case BOOL -> proto.setBoolValue(value.getBool()).build();
      case FLOAT64 -> proto.setNumberValue(value.getFloat64()).build();
      default ->
          throw new IllegalArgumentException(
              "parameter @"
                  + name
                  + " is "
                  + value.getType()
                  + ": the test server matches INT64, STRING, BOOL and FLOAT64 parameters");
    };
  }
}
