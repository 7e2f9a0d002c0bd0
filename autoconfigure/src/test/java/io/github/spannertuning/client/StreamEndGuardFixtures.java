package io.github.spannertuning.client;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.KeySet;
import com.google.cloud.spanner.MockSpannerServiceImpl.StatementResult;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.data.spanner.core.SpannerTemplate;
import com.google.cloud.spring.data.spanner.core.convert.ConverterAwareMappingSpannerEntityProcessor;
import com.google.cloud.spring.data.spanner.core.admin.SpannerSchemaUtils;
import com.google.cloud.spring.data.spanner.core.SpannerMutationFactoryImpl;
import com.google.cloud.spring.data.spanner.core.mapping.SpannerMappingContext;
import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;
import io.github.spannertuning.testing.MockSpannerServer;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;

/** The test server and queries the stream-end guard is checked on, and the reads the checks use. */
final class StreamEndGuardFixtures {

  private StreamEndGuardFixtures() {}

  static final String FAILING_QUERY = "SELECT fail";

  static final String THREE_ROWS = "SELECT id FROM Three";

  /** 1,000 rows of 32 KB each: 32 MB, more than any HTTP/2 flow-control window gRPC opens. */
  static final String WIDE_QUERY = "SELECT id, payload FROM Wide";

  static final String COUNT_QUERY = "SELECT COUNT(*) FROM Singers";

  static MockSpannerServer newServer(MockSpannerServer.Builder builder) throws Exception {
    MockSpannerServer server = builder.start();
    server
        .mock()
        .putStatementResult(
            StatementResult.exception(
                Statement.of(FAILING_QUERY), Status.INVALID_ARGUMENT.asRuntimeException()));
    server
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(THREE_ROWS), threeRows()));
    server
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(WIDE_QUERY), wideRows()));
    server
        .mock()
        .putStatementResult(StatementResult.query(Statement.of(COUNT_QUERY), countRow(3)));
    // existsById reads the key column of one key. The mock looks a read up as a statement built
    // from it: from table and columns (6.119), or with the key too (6.113).
    server
        .mock()
        .putStatementResult(
            StatementResult.read("Singers", KeySet.all(), List.of("SingerId"), singerIdRow(1)));
    server
        .mock()
        .putStatementResult(
            StatementResult.query(
                Statement.of("SELECT SingerId FROM Singers WHERE ID=1"), singerIdRow(1)));
    return server;
  }

  static List<String> rows(DatabaseClient database, String sql, int max) {
    List<String> rows = new ArrayList<>();
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      while (rows.size() < max && rs.next()) {
        rows.add(rs.getCurrentRowAsStruct().toString());
      }
    }
    return rows;
  }

  static boolean readOneRow(DatabaseClient database, String sql) {
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      return rs.next();
    }
  }

  static int readAll(DatabaseClient database, String sql) {
    int rows = 0;
    try (ResultSet rs = database.singleUse().executeQuery(Statement.of(sql))) {
      while (rs.next()) {
        rows++;
      }
    }
    return rows;
  }

  static int activeStreams(SpannerTuningState state) {
    return state.channelLoad().channels().stream()
        .mapToInt(ChannelLoad.ChannelStats::activeStreams)
        .sum();
  }

  static SpannerTemplate template(DatabaseClient client) {
    SpannerMappingContext mappingContext = new SpannerMappingContext();
    ConverterAwareMappingSpannerEntityProcessor processor =
        new ConverterAwareMappingSpannerEntityProcessor(mappingContext);
    SpannerSchemaUtils schemaUtils = new SpannerSchemaUtils(mappingContext, processor, true);
    return new SpannerTemplate(
        () -> client,
        mappingContext,
        processor,
        new SpannerMutationFactoryImpl(processor, mappingContext, schemaUtils),
        schemaUtils);
  }

  static com.google.spanner.v1.ResultSet singerIdRow(long id) {
    return com.google.spanner.v1.ResultSet.newBuilder()
        .setMetadata(metadata("SingerId"))
        .addRows(
            ListValue.newBuilder().addValues(Value.newBuilder().setStringValue(Long.toString(id))))
        .build();
  }

  private static com.google.spanner.v1.ResultSet countRow(long count) {
    return com.google.spanner.v1.ResultSet.newBuilder()
        .setMetadata(metadata(""))
        .addRows(
            ListValue.newBuilder()
                .addValues(Value.newBuilder().setStringValue(Long.toString(count))))
        .build();
  }

  private static ResultSetMetadata metadata(String int64Column) {
    return ResultSetMetadata.newBuilder()
        .setRowType(
            StructType.newBuilder()
                .addFields(
                    StructType.Field.newBuilder()
                        .setName(int64Column)
                        .setType(Type.newBuilder().setCode(TypeCode.INT64))))
        .build();
  }

  private static com.google.spanner.v1.ResultSet threeRows() {
    com.google.spanner.v1.ResultSet.Builder result =
        com.google.spanner.v1.ResultSet.newBuilder().setMetadata(metadata("id"));
    for (int i = 0; i < 3; i++) {
      result.addRows(
          ListValue.newBuilder().addValues(Value.newBuilder().setStringValue(Integer.toString(i))));
    }
    return result.build();
  }

  private static com.google.spanner.v1.ResultSet wideRows() {
    String payload = "x".repeat(32 * 1024);
    com.google.spanner.v1.ResultSet.Builder result =
        com.google.spanner.v1.ResultSet.newBuilder()
            .setMetadata(
                ResultSetMetadata.newBuilder()
                    .setRowType(
                        StructType.newBuilder()
                            .addFields(
                                StructType.Field.newBuilder()
                                    .setName("id")
                                    .setType(Type.newBuilder().setCode(TypeCode.INT64)))
                            .addFields(
                                StructType.Field.newBuilder()
                                    .setName("payload")
                                    .setType(Type.newBuilder().setCode(TypeCode.STRING)))));
    for (int i = 0; i < 1000; i++) {
      result.addRows(
          ListValue.newBuilder()
              .addValues(Value.newBuilder().setStringValue(Integer.toString(i)))
              .addValues(Value.newBuilder().setStringValue(payload)));
    }
    return result.build();
  }
}
