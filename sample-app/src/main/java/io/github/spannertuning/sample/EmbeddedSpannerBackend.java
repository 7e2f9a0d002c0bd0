package io.github.spannertuning.sample;

import com.google.api.gax.core.CredentialsProvider;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.MockSpannerServiceImpl;
import com.google.cloud.spanner.MockSpannerServiceImpl.StatementResult;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spring.autoconfigure.spanner.SpannerOptionsCustomizer;
import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The embedded backend: Google's in-process Spanner fake ({@code MockSpannerServiceImpl}, from the
 * google-cloud-spanner test-jar) served over real loopback gRPC. It answers the statements
 * registered here, instantly; everything between the application and it (the client, its channel
 * pool, the tuning) is real. Set {@code sample.embedded-backend=false} to point the app at a real
 * Spanner or the emulator through spring-cloud-gcp's own properties.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "sample.embedded-backend", havingValue = "true", matchIfMissing = true)
class EmbeddedSpannerBackend {

  static final String SINGER_BY_ID = "SELECT id, name FROM Singers WHERE id = @id";

  @Bean(destroyMethod = "shutdownNow")
  Server embeddedSpannerServer() throws IOException {
    MockSpannerServiceImpl spanner = new MockSpannerServiceImpl();
    spanner.setAbortProbability(0.0);
    for (long id = 1; id <= 3; id++) {
      spanner.putStatementResult(
          StatementResult.query(
              Statement.newBuilder(SINGER_BY_ID).bind("id").to(id).build(),
              singer(id, new String[] {"Alice", "Bob", "Carol"}[(int) id - 1])));
    }
    return NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .addService(spanner)
        .build()
        .start();
  }

  @Bean
  CredentialsProvider credentialsProvider() {
    return NoCredentials::getInstance;
  }

  /** The application's own customizer; spanner-tuning composes with it rather than replacing it. */
  @Bean
  SpannerOptionsCustomizer embeddedBackendCustomizer(Server embeddedSpannerServer) {
    return (builder) ->
        builder
            .setHost("http://127.0.0.1:" + embeddedSpannerServer.getPort())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext);
  }

  private static ResultSet singer(long id, String name) {
    return ResultSet.newBuilder()
        .setMetadata(
            ResultSetMetadata.newBuilder()
                .setRowType(
                    StructType.newBuilder()
                        .addFields(field("id", TypeCode.INT64))
                        .addFields(field("name", TypeCode.STRING))))
        .addRows(
            ListValue.newBuilder()
                .addValues(Value.newBuilder().setStringValue(Long.toString(id)))
                .addValues(Value.newBuilder().setStringValue(name)))
        .build();
  }

  private static StructType.Field field(String name, TypeCode type) {
    return StructType.Field.newBuilder()
        .setName(name)
        .setType(Type.newBuilder().setCode(type))
        .build();
  }
}
