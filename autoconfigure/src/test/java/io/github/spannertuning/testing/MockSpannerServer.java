package io.github.spannertuning.testing;

import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.MockSpannerServiceImpl;
import com.google.cloud.spanner.MockSpannerServiceImpl.StatementResult;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.protobuf.AbstractMessage;
import com.google.protobuf.ByteString;
import com.google.protobuf.ListValue;
import com.google.protobuf.Value;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.ResultSetMetadata;
import com.google.spanner.v1.StructType;
import com.google.spanner.v1.Type;
import com.google.spanner.v1.TypeCode;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Google's {@link MockSpannerServiceImpl} served over real loopback TCP by Netty, with the
 * bookkeeping the tests need: every call recorded with the TCP connection it arrived on (one
 * connection per client channel), server-side cancels, and an optional delay on one connection.
 *
 * <p>What is simulated: the Spanner backend (the mock answers registered statements instantly) and,
 * when asked, a slow connection. What is real: the client, its channel pool, gRPC and TCP.
 */
public final class MockSpannerServer implements AutoCloseable {

  public static final String POINT_SELECT = "SELECT id, name FROM Singers WHERE id = 1";

  public static final String BIG_QUERY = "SELECT id FROM Numbers";

  /** One RPC as the server saw it. */
  public record Call(String method, SocketAddress connection, AbstractMessage request) {

    /** The request tag, or "" when the request carries none. */
    public String requestTag() {
      if (this.request instanceof ExecuteSqlRequest sql) {
        return sql.getRequestOptions().getRequestTag();
      }
      if (this.request instanceof ReadRequest read) {
        return read.getRequestOptions().getRequestTag();
      }
      return "";
    }

    /** The transaction tag, or "" when the request carries none. */
    public String transactionTag() {
      if (this.request instanceof ExecuteSqlRequest sql) {
        return sql.getRequestOptions().getTransactionTag();
      }
      if (this.request instanceof com.google.spanner.v1.CommitRequest commit) {
        return commit.getRequestOptions().getTransactionTag();
      }
      if (this.request instanceof ReadRequest read) {
        return read.getRequestOptions().getTransactionTag();
      }
      return "";
    }
  }

  private final MockSpannerServiceImpl mock = new MockSpannerServiceImpl();

  private final Queue<Call> calls = new ConcurrentLinkedQueue<>();

  private final Map<SocketAddress, AtomicInteger> connections = new ConcurrentHashMap<>();

  private final AtomicInteger cancels = new AtomicInteger();

  private final ScheduledExecutorService scheduler =
      Executors.newSingleThreadScheduledExecutor(
          (runnable) -> {
            Thread thread = new Thread(runnable, "mock-spanner-delay");
            thread.setDaemon(true);
            return thread;
          });

  private volatile SocketAddress slowConnection;

  private volatile long slowMillis;

  private volatile Server server;

  private MockSpannerServer() throws IOException {
    this.mock.setAbortProbability(0.0);
    this.mock.putStatementResult(StatementResult.query(Statement.of(POINT_SELECT), pointRow()));
    this.mock.putStatementResult(StatementResult.query(Statement.of(BIG_QUERY), numbers(10_000)));
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(ServerInterceptors.intercept(this.mock, new ResumeFromToken(), new Recorder()))
            .build()
            .start();
  }

  public static MockSpannerServer start() throws IOException {
    return new MockSpannerServer();
  }

  public MockSpannerServiceImpl mock() {
    return this.mock;
  }

  public int port() {
    return this.server.getPort();
  }

  /**
   * Options for a real client of this server: plaintext loopback, no credentials, the given pool
   * size. grpc-gcp is the client's default (on from google-cloud-spanner 6.105).
   */
  public SpannerOptions.Builder clientOptions(int channels) {
    return SpannerOptions.newBuilder()
        .setProjectId("test-project")
        .setHost("http://127.0.0.1:" + port())
        .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
        .setCredentials(NoCredentials.getInstance())
        .setNumChannels(channels);
  }

  /**
   * Gives a point select's end of stream time to reach the client after its row, so that closing
   * the result set next is a close of a finished stream, which the stream-end guard must skip.
   * Without it the closing thread can win that race, and the close rightly cancels.
   */
  public static void awaitStreamEnd() {
    try {
      Thread.sleep(5);
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
    }
  }

  /** Every call seen so far, oldest first. */
  public List<Call> calls() {
    return new ArrayList<>(this.calls);
  }

  /** Calls of one method (the gRPC method's bare name, such as "ExecuteStreamingSql"). */
  public List<Call> calls(String method) {
    return this.calls.stream().filter((call) -> call.method().equals(method)).toList();
  }

  /** Calls per TCP connection for the given calls, busiest first. */
  public static List<Integer> perConnection(Collection<Call> calls, Collection<SocketAddress> all) {
    Map<SocketAddress, Integer> counts = new ConcurrentHashMap<>();
    all.forEach((connection) -> counts.put(connection, 0));
    calls.forEach((call) -> counts.merge(call.connection(), 1, Integer::sum));
    return counts.values().stream().sorted(Comparator.reverseOrder()).toList();
  }

  /** Every TCP connection that has carried a call. */
  public Collection<SocketAddress> connections() {
    return new ArrayList<>(this.connections.keySet());
  }

  /** Calls the server saw cancelled by the client. */
  public int cancels() {
    return this.cancels.get();
  }

  /**
   * Delays every call that arrives on this connection by the given time, without holding a server
   * thread: the call's events are queued and released by a scheduler.
   */
  public void slowDown(SocketAddress connection, long millis) {
    this.slowMillis = millis;
    this.slowConnection = connection;
  }

  /**
   * Stops the server and starts it again on the same port with the same backend state, as a
   * restart behind a stable address would. Graceful: the server sends GOAWAY and lets calls in
   * flight finish; otherwise every connection is dropped at once.
   */
  public void restart(boolean graceful) throws IOException, InterruptedException {
    int port = port();
    if (graceful) {
      this.server.shutdown();
    } else {
      this.server.shutdownNow();
    }
    this.server.awaitTermination(30, TimeUnit.SECONDS);
    this.server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(ServerInterceptors.intercept(this.mock, new ResumeFromToken(), new Recorder()))
            .build()
            .start();
  }

  public void reset() {
    this.calls.clear();
    this.cancels.set(0);
    this.mock.clearRequests();
  }

  @Override
  public void close() throws InterruptedException {
    this.server.shutdownNow();
    this.server.awaitTermination(10, TimeUnit.SECONDS);
    this.scheduler.shutdownNow();
  }

  private static ResultSet pointRow() {
    return ResultSet.newBuilder()
        .setMetadata(metadata("id", TypeCode.INT64, "name", TypeCode.STRING))
        .addRows(
            ListValue.newBuilder()
                .addValues(Value.newBuilder().setStringValue("1"))
                .addValues(Value.newBuilder().setStringValue("Alice")))
        .build();
  }

  private static ResultSet numbers(int count) {
    ResultSet.Builder result =
        ResultSet.newBuilder().setMetadata(metadata("id", TypeCode.INT64));
    for (int i = 0; i < count; i++) {
      result.addRows(
          ListValue.newBuilder().addValues(Value.newBuilder().setStringValue(Integer.toString(i))));
    }
    return result.build();
  }

  private static ResultSetMetadata metadata(Object... namesAndTypes) {
    StructType.Builder row = StructType.newBuilder();
    for (int i = 0; i < namesAndTypes.length; i += 2) {
      row.addFields(
          StructType.Field.newBuilder()
              .setName((String) namesAndTypes[i])
              .setType(Type.newBuilder().setCode((TypeCode) namesAndTypes[i + 1])));
    }
    return ResultSetMetadata.newBuilder().setRowType(row).build();
  }

  private final class Recorder implements ServerInterceptor {

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
        ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      SocketAddress connection = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
      connections.computeIfAbsent(connection, (key) -> new AtomicInteger()).incrementAndGet();
      String method = call.getMethodDescriptor().getBareMethodName();
      boolean slow = connection.equals(slowConnection);
      ServerCall.Listener<ReqT> listener =
          new SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
            @Override
            public void onMessage(ReqT message) {
              calls.add(new Call(method, connection, (AbstractMessage) message));
              super.onMessage(message);
            }

            @Override
            public void onCancel() {
              cancels.incrementAndGet();
              super.onCancel();
            }
          };
      return slow ? new DelayedListener<>(listener, slowMillis) : listener;
    }
  }

  /** Holds a call's events until its delay has passed, then replays them in order. */
  private final class DelayedListener<ReqT> extends ServerCall.Listener<ReqT> {

    private final ServerCall.Listener<ReqT> delegate;

    private final Queue<Runnable> pending = new ArrayDeque<>();

    private boolean released;

    DelayedListener(ServerCall.Listener<ReqT> delegate, long millis) {
      this.delegate = delegate;
      scheduler.schedule(this::release, millis, TimeUnit.MILLISECONDS);
    }

    private void release() {
      synchronized (this) {
        Runnable event;
        while ((event = this.pending.poll()) != null) {
          event.run();
        }
        this.released = true;
      }
    }

    private synchronized void submit(Runnable event) {
      if (this.released) {
        event.run();
      } else {
        this.pending.add(event);
      }
    }

    @Override
    public void onMessage(ReqT message) {
      submit(() -> this.delegate.onMessage(message));
    }

    @Override
    public void onHalfClose() {
      submit(this.delegate::onHalfClose);
    }

    @Override
    public void onCancel() {
      submit(this.delegate::onCancel);
    }

    @Override
    public void onComplete() {
      submit(this.delegate::onComplete);
    }

    @Override
    public void onReady() {
      submit(this.delegate::onReady);
    }
  }

  /**
   * Makes a resumed streaming query start after its resume token, as Spanner does.
   * google-cloud-spanner 6.113's {@code MockSpannerServiceImpl} ignores the token and sends the
   * whole result again (6.119's honours it, and then nothing is dropped here): the messages up to
   * the token, which the client already has, are dropped, keeping only the result's metadata.
   */
  private static final class ResumeFromToken implements ServerInterceptor {

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
        ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      if (!call.getMethodDescriptor().getBareMethodName().equals("ExecuteStreamingSql")) {
        return next.startCall(call, headers);
      }
      long[] resumeAfter = {-1};
      ServerCall<ReqT, RespT> skipping =
          new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            @SuppressWarnings("unchecked")
            public void sendMessage(RespT message) {
              PartialResultSet part = (PartialResultSet) message;
              if (resumeAfter[0] >= 0) {
                String token = part.getResumeToken().toStringUtf8();
                if (token.isEmpty() || Long.parseLong(token) <= resumeAfter[0]) {
                  if (part.hasMetadata()) {
                    super.sendMessage(
                        (RespT) PartialResultSet.newBuilder().setMetadata(part.getMetadata()).build());
                  }
                  return;
                }
                resumeAfter[0] = -1;
              }
              super.sendMessage(message);
            }
          };
      return new SimpleForwardingServerCallListener<>(next.startCall(skipping, headers)) {
        @Override
        public void onMessage(ReqT message) {
          ByteString token = ((ExecuteSqlRequest) message).getResumeToken();
          if (!token.isEmpty()) {
            resumeAfter[0] = Long.parseLong(token.toStringUtf8());
          }
          super.onMessage(message);
        }
      };
    }
  }
}
