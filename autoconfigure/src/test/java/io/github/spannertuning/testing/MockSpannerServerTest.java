package io.github.spannertuning.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.spanner.v1.CreateSessionRequest;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.Session;
import com.google.spanner.v1.SpannerGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * The test server itself, seen through a raw gRPC stub: what the tests of spanner-tuning rely on
 * (the {@code last} flag, lagging trailers, service time, frames counted on the wire, the reset
 * limit) is checked here once, so that a test server that stopped behaving like Spanner fails here
 * first.
 */
class MockSpannerServerTest {

  private static final String DATABASE = "projects/p/instances/i/databases/d";

  @Test
  void marksTheFinalMessageLastAndSendsTheTrailersLater() throws Exception {
    try (MockSpannerServer server =
        MockSpannerServer.builder().trailersDelay(Duration.ofMillis(200)).start()) {
      ManagedChannel channel = channel(server);
      try {
        Stream stream = query(channel, session(channel), MockSpannerServer.POINT_SELECT);
        assertThat(stream.closed.get(5, TimeUnit.SECONDS).isOk()).isTrue();
        assertThat(stream.messages).isNotEmpty();
        assertThat(stream.messages.get(stream.messages.size() - 1).getLast()).isTrue();
        assertThat(stream.messages.subList(0, stream.messages.size() - 1))
            .noneMatch(PartialResultSet::getLast);
        // Sent 200 ms apart; the client may take the message late on a busy machine, not the
        // trailers early.
        assertThat(stream.closedNanos - stream.lastMessageNanos)
            .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
      } finally {
        channel.shutdownNow();
      }
    }
  }

  @Test
  void theBareMockMarksNothingAndClosesAtOnce() throws Exception {
    try (MockSpannerServer server = MockSpannerServer.builder().instant().start()) {
      ManagedChannel channel = channel(server);
      try {
        Stream stream = query(channel, session(channel), MockSpannerServer.POINT_SELECT);
        assertThat(stream.closed.get(5, TimeUnit.SECONDS).isOk()).isTrue();
        assertThat(stream.messages).noneMatch(PartialResultSet::getLast);
      } finally {
        channel.shutdownNow();
      }
    }
  }

  @Test
  void takesItsServiceTimeWithoutHoldingAThread() throws Exception {
    try (MockSpannerServer server =
        MockSpannerServer.builder()
            .serviceTime(MockSpannerServer.ServiceTime.fixed(Duration.ofMillis(200)))
            .start()) {
      ManagedChannel channel = channel(server);
      try {
        String session = session(channel);
        long start = System.nanoTime();
        List<Stream> streams = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
          streams.add(query(channel, session, MockSpannerServer.POINT_SELECT));
        }
        for (Stream stream : streams) {
          assertThat(stream.closed.get(10, TimeUnit.SECONDS).isOk()).isTrue();
        }
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        // 50 calls of 200 ms each: concurrent, not one after the other.
        assertThat(elapsedMillis).isBetween(190L, 3_000L);
      } finally {
        channel.shutdownNow();
      }
    }
  }

  @Test
  void countsTheResetsOnTheWireAndAnswersTooManyWithGoAway() throws Exception {
    try (MockSpannerServer server =
        MockSpannerServer.builder()
            .serviceTime(MockSpannerServer.ServiceTime.fixed(Duration.ofSeconds(10)))
            .resetLimit(10, 10)
            .countFrames()
            .start()) {
      ManagedChannel channel = channel(server);
      try {
        String session = session(channel);
        for (int i = 0; i < 5; i++) {
          query(channel, session, MockSpannerServer.POINT_SELECT).call.cancel("test", null);
        }
        awaitTrue(() -> server.rstStreams() == 5);
        assertThat(server.goAways()).isZero();
        for (int i = 0; i < 20; i++) {
          query(channel, session, MockSpannerServer.POINT_SELECT).call.cancel("test", null);
        }
        awaitTrue(() -> server.goAwaysForResets() == 1);
        assertThat(server.rstStreams() + server.serverRstStreams()).isGreaterThan(10);
      } finally {
        channel.shutdownNow();
      }
    }
  }

  private static void awaitTrue(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("condition within 10 s").isLessThan(deadline);
      Thread.sleep(5);
    }
  }

  private static ManagedChannel channel(MockSpannerServer server) {
    return ManagedChannelBuilder.forAddress("127.0.0.1", server.port()).usePlaintext().build();
  }

  private static String session(ManagedChannel channel) {
    Session session =
        SpannerGrpc.newBlockingStub(channel)
            .createSession(CreateSessionRequest.newBuilder().setDatabase(DATABASE).build());
    return session.getName();
  }

  private static Stream query(ManagedChannel channel, String session, String sql) {
    Stream stream =
        new Stream(
            channel.newCall(SpannerGrpc.getExecuteStreamingSqlMethod(), CallOptions.DEFAULT));
    stream.call.start(stream, new Metadata());
    stream.call.sendMessage(ExecuteSqlRequest.newBuilder().setSession(session).setSql(sql).build());
    stream.call.halfClose();
    stream.call.request(Integer.MAX_VALUE);
    return stream;
  }

  /** One raw streaming call and what it received, with the time of its last message and close. */
  private static final class Stream extends ClientCall.Listener<PartialResultSet> {

    final ClientCall<ExecuteSqlRequest, PartialResultSet> call;

    final List<PartialResultSet> messages = new ArrayList<>();

    final CompletableFuture<Status> closed = new CompletableFuture<>();

    volatile long lastMessageNanos;

    volatile long closedNanos;

    Stream(ClientCall<ExecuteSqlRequest, PartialResultSet> call) {
      this.call = call;
    }

    @Override
    public void onMessage(PartialResultSet message) {
      this.lastMessageNanos = System.nanoTime();
      this.messages.add(message);
    }

    @Override
    public void onClose(Status status, Metadata trailers) {
      this.closedNanos = System.nanoTime();
      this.closed.complete(status);
    }
  }
}
