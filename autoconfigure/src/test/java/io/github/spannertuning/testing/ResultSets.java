package io.github.spannertuning.testing;

import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;

/** Result sets for {@link MockSpannerServer}'s mock, built the way Spanner returns them. */
public final class ResultSets {

  private ResultSets() {}

  /** The row of {@link MockSpannerServer#POINT_SELECT}: {@code id = 1, name = 'Alice'}. */
  public static ResultSet pointRow() {
    return ResultSet.newBuilder()
        .setMetadata(metadata("id", TypeCode.INT64, "name", TypeCode.STRING))
        .addRows(
            ListValue.newBuilder()
                .addValues(Value.newBuilder().setStringValue("1"))
                .addValues(Value.newBuilder().setStringValue("Alice")))
        .build();
  }

  /** {@code count} rows of one INT64 column {@code id}: 0, 1, 2 and so on. */
  public static ResultSet numbers(int count) {
    ResultSet.Builder result = ResultSet.newBuilder().setMetadata(metadata("id", TypeCode.INT64));
    for (int i = 0; i < count; i++) {
      result.addRows(
          ListValue.newBuilder().addValues(Value.newBuilder().setStringValue(Integer.toString(i))));
    }
    return result.build();
  }

  /** One row of one INT64 column holding {@code value}. */
  public static ResultSet int64Row(String column, long value) {
    return ResultSet.newBuilder()
        .setMetadata(metadata(column, TypeCode.INT64))
        .addRows(
            ListValue.newBuilder()
                .addValues(Value.newBuilder().setStringValue(Long.toString(value))))
        .build();
  }

  /**
   * The metadata of a row type.
   *
   * @param namesAndTypes column names, each followed by its {@link TypeCode}
   */
  public static ResultSetMetadata metadata(Object... namesAndTypes) {
    StructType.Builder row = StructType.newBuilder();
    for (int i = 0; i < namesAndTypes.length; i += 2) {
      row.addFields(
          StructType.Field.newBuilder()
              .setName((String) namesAndTypes[i])
              .setType(Type.newBuilder().setCode((TypeCode) namesAndTypes[i + 1])));
    }
    return ResultSetMetadata.newBuilder().setRowType(row).build();
  }
}
