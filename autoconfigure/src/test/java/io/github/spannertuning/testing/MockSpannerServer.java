package io.github.spannertuning.testing;

import com.google.cloud.NoCredentials;
import com.google.cloud.grpc.GcpManagedChannelOptions.GcpChannelPoolOptions;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.protobuf.AbstractMessage;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.ReadRequest;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * The project's {@link MockSpannerService} served over real loopback TCP by Netty, made to behave
 * like a Cloud Spanner frontend where that matters to spanner-tuning, with the bookkeeping the
 * tests need.
 *
 * <p>{@link #start()} gives the production-like server every test should use unless it studies
 * another case:
 *
 * <ul>
 *   <li>the final {@code PartialResultSet} of a streaming query or read carries {@code last =
 *       true}, and the trailers follow {@link Builder#trailersDelay 1 ms} later, as real Spanner
 *       does;
 *   <li>each data-plane call (queries, reads, DML, begin, commit) takes a service time drawn from 2
 *       to 5 ms, a point select's pace; session calls are answered at once;
 *   <li>at most 100 concurrent streams per connection, as Spanner's frontends allow.
 * </ul>
 *
 * <p>Every delay is scheduled: no server thread is held while a call waits. On request the server
 * also limits RST_STREAM frames per connection (HTTP/2 rapid-reset protection, grpc-java's {@code
 * maxRstFramesPerWindow}: past it the server sends GOAWAY ENHANCE_YOUR_CALM) and puts a {@link
 * FrameCountingProxy} in front of itself that counts the RST_STREAM and GOAWAY frames on the wire.
 * It can also make a new connection cost time, as a frontend's does ({@link
 * Builder#connectionSetUp}: every call on a connection, session calls too, waits until that long
 * after the connection's first call, and is counted as having waited), and retire connections by
 * age, as Google's frontends do about hourly ({@link Builder#maxConnectionAge}: grpc-java's {@code
 * maxConnectionAge} and its grace, a GOAWAY, then the connection's end once its calls are done).
 *
 * <p>Recorded: every call with the TCP connection it arrived on (one connection per client channel)
 * and the cancels the server saw.
 *
 * <p>What is simulated: the Spanner backend ({@link MockSpannerService} answers registered
 * statements), its service time, and, when asked, a slow connection. What is real: the client, its
 * channel pool, gRPC, Netty and TCP.
 */
public final class MockSpannerServer implements AutoCloseable {

  public static final String POINT_SELECT = "SELECT id, name FROM Singers WHERE id = 1";

  /**
   * A report: a few rows, its first after {@link Builder#reportCost} more than a point select's on
   * every connection (100 ms unless a test sets another).
   */
  public static final String REPORT = "SELECT SingerId, SUM(Sales) FROM Albums GROUP BY SingerId";

  /** A database for the tests' own clients: the server answers the same for any. */
  public static final DatabaseId DATABASE =
      DatabaseId.of("test-project", "test-instance", "test-db");

  public static final String BIG_QUERY = "SELECT id FROM Numbers";

  /** The statement a client primes a new channel with. */
  public static final String PRIMING_QUERY = "SELECT 1";

  /**
   * A trailers delay for {@link Builder#trailersDelay} and {@link #setTrailersDelay}: the stream
   * sends its {@code last} message and then nothing; it stays open until the client cancels it.
   */
  public static final Duration TRAILERS_NEVER = Duration.ofSeconds(Long.MAX_VALUE);

  /** A GOAWAY for too many resets: ENHANCE_YOUR_CALM (11) with grpc-java's debug data. */
  private static final String TOO_MANY_RESETS = "11/too_many_rststreams";

  /**
   * A streaming query or read as it reached the server, before any service time or stall.
   *
   * @param nanos {@link System#nanoTime()} at its arrival
   */
  public record Arrival(SocketAddress connection, long nanos) {}

  /**
   * One RPC as the server saw it.
   *
   * @param requestId the call's {@code x-goog-spanner-request-id}, or "" when it carries none
   */
  public record Call(
      String method, SocketAddress connection, AbstractMessage request, String requestId) {

    /**
     * The request the call is an attempt of: the process's, the client's and the request's numbers
     * in the request id. A retry and a hedge of a read are attempts of the same request.
     */
    public String logicalRequest() {
      // version.process.client.channel.request.attempt: each attempt names its own channel.
      String[] parts = this.requestId.split("\\.");
      return (parts.length < 6) ? "" : parts[1] + "." + parts[2] + "." + parts[4];
    }

    /** The attempt number in the request id, from 1; 0 when the call carries none. */
    public int attempt() {
      return attemptOf(this.requestId);
    }

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

  /**
   * What the server does to one data-plane call beyond serving it. Chosen per call by {@link
   * #setFaults}, from its method and its attempt number, so that a test can tell a read's first
   * attempt from its retry or hedge.
   *
   * @param delayMillis added to the call's service time
   * @param failAtStart fail the call with this status once its delay has passed, sending nothing;
   *     or {@code null}
   * @param failAfterFirstMessage fail a stream with this status right after its first message; or
   *     {@code null}
   */
  public record Fault(long delayMillis, Status failAtStart, Status failAfterFirstMessage) {

    public static final Fault NONE = new Fault(0, null, null);

    public static Fault delay(long millis) {
      return new Fault(millis, null, null);
    }

    public static Fault failAtStart(long afterMillis, Status status) {
      return new Fault(afterMillis, status, null);
    }

    public static Fault failAfterFirstMessage(Status status) {
      return new Fault(0, null, status);
    }
  }

  /** Chooses each data-plane call's {@link Fault}. */
  @FunctionalInterface
  public interface Faults {

    /**
     * @param method the gRPC method's bare name
     * @param attempt the call's attempt number in its request id, from 1; 0 without one
     */
    Fault of(String method, int attempt);
  }

  /** How long the server takes to serve one data-plane call, drawn per call. */
  @FunctionalInterface
  public interface ServiceTime {

    long sampleNanos();

    /** Answered at once (the bare mock). */
    static ServiceTime none() {
      return () -> 0L;
    }

    static ServiceTime fixed(Duration time) {
      long nanos = time.toNanos();
      return () -> nanos;
    }

    /** Uniformly between the two bounds: 2 to 5 ms is a point select's pace. */
    static ServiceTime uniform(Duration min, Duration max) {
      long low = min.toNanos();
      long spread = max.toNanos() - low;
      return () -> low + (long) (ThreadLocalRandom.current().nextDouble() * spread);
    }

    /** A floor plus an exponentially distributed part with the given mean. */
    static ServiceTime floorPlusExponential(Duration floor, Duration mean) {
      long low = floor.toNanos();
      double meanNanos = mean.toNanos();
      return () ->
          low + (long) (-Math.log(1.0 - ThreadLocalRandom.current().nextDouble()) * meanNanos);
    }
  }

  private static final Metadata.Key<String> REQUEST_ID =
      Metadata.Key.of("x-goog-spanner-request-id", Metadata.ASCII_STRING_MARSHALLER);

  /** The methods whose request carries a statement. */
  private static final Set<String> SQL_METHODS = Set.of("ExecuteStreamingSql", "ExecuteSql");

  /** Methods that carry no query work: answered without service time. */
  private static final Set<String> SESSION_METHODS =
      Set.of("CreateSession", "BatchCreateSessions", "GetSession", "ListSessions", "DeleteSession");

  private final Queue<Call> calls = new ConcurrentLinkedQueue<>();

  private final Map<SocketAddress, AtomicInteger> connections = new ConcurrentHashMap<>();

  private final AtomicInteger cancels = new AtomicInteger();

  private final Map<SocketAddress, AtomicInteger> cancelsByConnection = new ConcurrentHashMap<>();

  private final ScheduledExecutorService scheduler =
      Executors.newScheduledThreadPool(
          2,
          (runnable) -> {
            Thread thread = new Thread(runnable, "mock-spanner-delay");
            thread.setDaemon(true);
            return thread;
          });

  private final MockSpannerService mock = new MockSpannerService(this.scheduler);

  private final StreamEndings endings;

  private volatile ServiceTime serviceTime;

  private volatile Faults faults = (method, attempt) -> Fault.NONE;

  /** Whether responses carry the frontend's time, as Cloud Spanner's do. */
  private volatile boolean serverTiming = true;

  private volatile Set<SocketAddress> slowConnections = Set.of();

  private volatile long slowMillis;

  private volatile SocketAddress stalledConnection;

  private final Queue<Arrival> arrivals = new ConcurrentLinkedQueue<>();

  /** When each connection's set-up is done: its first call's arrival plus the set-up time. */
  private final Map<SocketAddress, Long> setUpDone = new ConcurrentHashMap<>();

  private final Queue<Call> waitedForSetUp = new ConcurrentLinkedQueue<>();

  private final Builder settings;

  private volatile Server server;

  /** The port of the server while {@link #stop}ped. */
  private volatile int stoppedPort;

  private final FrameCountingProxy proxy;

  private MockSpannerServer(Builder builder) throws IOException {
    this.serviceTime = builder.serviceTime;
    this.endings = new StreamEndings(this.scheduler, builder.markLast, builder.trailersDelay);
    this.mock.putStatementResult(
        StatementResult.query(Statement.of(POINT_SELECT), ResultSets.pointRow()));
    this.mock.putStatementResult(
        StatementResult.query(Statement.of(BIG_QUERY), ResultSets.numbers(10_000)));
    this.mock.putStatementResult(
        StatementResult.query(Statement.of(REPORT), ResultSets.numbers(10)));
    // What a client that primes its channels sends (6.125+'s dynamic pool, before a channel it
    // adds takes calls), and what Spanner answers.
    this.mock.putStatementResult(
        StatementResult.query(Statement.of(PRIMING_QUERY), ResultSets.int64Row("", 1)));
    this.settings = builder;
    this.server = newServer(0);
    this.proxy = builder.countFrames ? new FrameCountingProxy(this.server.getPort()) : null;
  }

  private Server newServer(int port) throws IOException {
    NettyServerBuilder server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
            .addService(ServerInterceptors.intercept(this.mock, new Recorder()))
            .addService(new EmulatorCheck())
            // Spanner's frontends accept the client's flow-control (BDP) pings; grpc-java's
            // default policy would answer them with GOAWAY too_many_pings between calls.
            .permitKeepAliveWithoutCalls(true)
            .permitKeepAliveTime(0, TimeUnit.NANOSECONDS);
    if (this.settings.maxConcurrentStreams > 0) {
      server.maxConcurrentCallsPerConnection(this.settings.maxConcurrentStreams);
    }
    if (this.settings.maxResets > 0) {
      server.maxRstFramesPerWindow(this.settings.maxResets, this.settings.resetWindowSeconds);
    }
    if (this.settings.maxConnectionAge != null) {
      server.maxConnectionAge(this.settings.maxConnectionAge.toNanos(), TimeUnit.NANOSECONDS);
      server.maxConnectionAgeGrace(
          this.settings.maxConnectionAgeGrace.toNanos(), TimeUnit.NANOSECONDS);
    }
    return server.build().start();
  }

  /**
   * Stops the server and starts it again on the same port with the same backend state, as a restart
   * behind a stable address would. Graceful: the server sends GOAWAY and lets calls in flight
   * finish; otherwise every connection is dropped at once.
   */
  public void restart(boolean graceful) throws IOException, InterruptedException {
    int port = this.server.getPort();
    if (graceful) {
      this.server.shutdown();
    } else {
      this.server.shutdownNow();
    }
    this.server.awaitTermination(30, TimeUnit.SECONDS);
    this.server = newServer(port);
  }

  /**
   * Stops the server, every connection dropped, until {@link #startAgain}: an unreachable Spanner.
   * Its port stays reserved for it.
   */
  public void stop() throws InterruptedException {
    this.stoppedPort = this.server.getPort();
    this.server.shutdownNow();
    this.server.awaitTermination(30, TimeUnit.SECONDS);
  }

  /** Starts the server stopped by {@link #stop} again, on its port, with the same backend state. */
  public void startAgain() throws IOException {
    this.server = newServer(this.stoppedPort);
  }

  /** A production-like server: see the class description. */
  public static MockSpannerServer start() throws IOException {
    return builder().start();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The backend: register results and faults on it. */
  public MockSpannerService mock() {
    return this.mock;
  }

  /** The port clients connect to: the frame-counting proxy's when there is one. */
  public int port() {
    if (this.proxy != null) {
      return this.proxy.port();
    }
    return this.server.isTerminated() ? this.stoppedPort : this.server.getPort();
  }

  /** Changes the service time of calls that arrive from now on. */
  public void setServiceTime(ServiceTime serviceTime) {
    this.serviceTime = serviceTime;
  }

  /** Changes how long the trailers of streams that end from now on lag their last message. */
  /** From now on, each data-plane call meets the fault this chooses for it. */
  public void setFaults(Faults faults) {
    this.faults = faults;
  }

  static int attemptOf(String requestId) {
    int dot = requestId.lastIndexOf('.');
    try {
      return (dot < 0) ? 0 : Integer.parseInt(requestId.substring(dot + 1));
    } catch (NumberFormatException ex) {
      return 0;
    }
  }

  public void setTrailersDelay(Duration delay) {
    this.endings.setTrailersDelay(delay);
  }

  /**
   * Streams that have sent their final message ({@code last}) and not yet their trailers, and that
   * the client has not cancelled: each holds one of its connection's stream slots for nothing.
   */
  public int awaitingTrailers() {
    return this.endings.awaitingTrailers();
  }

  /**
   * The most streams {@link #awaitingTrailers() awaiting their trailers} at once since the reset.
   */
  public int maxAwaitingTrailers() {
    return this.endings.maxAwaitingTrailers();
  }

  /** Whether streams that end from now on mark their final message {@code last}. */
  public void setMarkLast(boolean markLast) {
    this.endings.setMarkLast(markLast);
  }

  /** RST_STREAM frames the client sent over the wire. Needs {@link Builder#countFrames()}. */
  public int rstStreams() {
    return requireProxy().rstStreams();
  }

  /** RST_STREAM frames the client sent on one connection, as {@link Call#connection()} names it. */
  public int rstStreams(SocketAddress connection) {
    return requireProxy().rstStreams(connection);
  }

  /**
   * RST_STREAM frames the server sent. The reset limit counts them beside the client's: a server
   * that resets streams itself reaches it sooner.
   */
  public int serverRstStreams() {
    return requireProxy().serverRstStreams();
  }

  /** GOAWAY frames the server sent, all error codes. Needs {@link Builder#countFrames()}. */
  public int goAways() {
    return requireProxy().goAways().values().stream().mapToInt(Integer::intValue).sum();
  }

  /**
   * GOAWAY frames the server sent, by error code and debug data ({@code 11/too_many_rststreams}).
   */
  public Map<String, Integer> goAwaysByReason() {
    return requireProxy().goAways();
  }

  /**
   * GOAWAY frames the server sent with ENHANCE_YOUR_CALM, its answer to too many resets. Needs
   * {@link Builder#countFrames()}.
   */
  public int goAwaysForResets() {
    return requireProxy().goAways().getOrDefault(TOO_MANY_RESETS, 0);
  }

  private FrameCountingProxy requireProxy() {
    if (this.proxy == null) {
      throw new IllegalStateException(
          "frames are counted only by a server built with countFrames()");
    }
    return this.proxy;
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
   * Options for a real client of this server on grpc-gcp's dynamic channel pool, with the pool's
   * options: Spanner's defaults (4 channels to start, 2 to 10, one added past 25 calls in flight
   * per channel, one removed below 15) unless given. The pool size is not set: setting it turns the
   * dynamic pool off. The pool's options are set by reflection: 6.113's builder has no setter.
   */
  public SpannerOptions.Builder dynamicPoolOptions(GcpChannelPoolOptions pool) {
    SpannerOptions.Builder builder =
        SpannerOptions.newBuilder()
            .setProjectId("test-project")
            .setHost("http://127.0.0.1:" + port())
            .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
            .setCredentials(NoCredentials.getInstance())
            .enableDynamicChannelPool();
    if (pool != null) {
      try {
        SpannerOptions.Builder.class
            .getMethod("setGcpChannelPoolOptions", GcpChannelPoolOptions.class)
            .invoke(builder, pool);
      } catch (ReflectiveOperationException ex) {
        throw new IllegalStateException("this client line sets no dynamic pool options", ex);
      }
    }
    return builder;
  }

  /**
   * One single-use {@link #POINT_SELECT}, closed as soon as its one row is read, before the stream
   * ends, as an application closes a point read: the close the stream-end guard acts on where the
   * server marks that row's message {@code last}. Whether the row came.
   */
  public static boolean pointSelect(DatabaseClient client) {
    try (ResultSet rows = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
      return rows.next();
    }
  }

  /** {@code count} {@link #pointSelect}s one after another, each of which must return its row. */
  public static void pointSelects(DatabaseClient client, int count) {
    for (int i = 0; i < count; i++) {
      if (!pointSelect(client)) {
        throw new AssertionError("point select " + i + " of " + count + " returned no row");
      }
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
   * Calls the server saw cancelled by the client on one connection: the resets of streams still
   * open, which are what a server's reset limit counts (a reset of a stream the server has ended is
   * not counted, by grpc-java nor here).
   */
  public int cancels(SocketAddress connection) {
    AtomicInteger count = this.cancelsByConnection.get(connection);
    return (count != null) ? count.get() : 0;
  }

  private void cancelled(SocketAddress connection) {
    this.cancels.incrementAndGet();
    this.cancelsByConnection
        .computeIfAbsent(connection, (key) -> new AtomicInteger())
        .incrementAndGet();
  }

  /**
   * Delays every call that arrives on this connection by the given time, without holding a server
   * thread: the call's events are queued and released by a scheduler.
   */
  public void slowDown(SocketAddress connection, long millis) {
    slowDown((connection != null) ? Set.of(connection) : Set.of(), millis);
  }

  /**
   * Delays every call that arrives on any of these connections by the given time: one connection of
   * each of several clients that share this server.
   */
  public void slowDown(Collection<SocketAddress> connections, long millis) {
    this.slowMillis = millis;
    this.slowConnections = Set.copyOf(connections);
  }

  /**
   * Holds every call that arrives on this connection from now on, unanswered, until the server
   * closes: a connection that stopped answering, as a half-open TCP connection or a stuck frontend
   * is to its client. {@code null} ends the stall for calls that arrive later.
   */
  public void stall(SocketAddress connection) {
    this.stalledConnection = connection;
  }

  /** Every streaming query and read that arrived since the last {@link #reset()}, in order. */
  public List<Arrival> arrivals() {
    return new ArrayList<>(this.arrivals);
  }

  /** The connection that carried the most {@link #arrivals() arrivals} since the last reset. */
  public SocketAddress busiestConnection() {
    return this.arrivals.stream()
        .collect(Collectors.groupingBy(Arrival::connection, Collectors.counting()))
        .entrySet()
        .stream()
        .max(Map.Entry.comparingByValue())
        .orElseThrow(() -> new AssertionError("no query reached the server"))
        .getKey();
  }

  public void reset() {
    this.arrivals.clear();
    this.calls.clear();
    this.waitedForSetUp.clear();
    this.cancels.set(0);
    this.cancelsByConnection.clear();
    this.endings.reset();
    this.mock.clearRequests();
    if (this.proxy != null) {
      this.proxy.resetCounts();
    }
  }

  /**
   * The calls that waited for their connection's set-up ({@link Builder#connectionSetUp}) since the
   * start or the last {@link #reset()}, with the connection each came on. Each is recorded at its
   * arrival; its request is not kept.
   */
  public List<Call> callsThatWaitedForSetUp() {
    return List.copyOf(this.waitedForSetUp);
  }

  /** Connections that have had a call, over the server's life: each one set up once. */
  public int connectionsSetUp() {
    return this.setUpDone.size();
  }

  /** Closes a client of this server, then the server, even where the client's close fails. */
  public void closeAfter(AutoCloseable client) throws Exception {
    try {
      client.close();
    } finally {
      close();
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (this.proxy != null) {
      this.proxy.close();
    }
    this.server.shutdownNow();
    this.server.awaitTermination(10, TimeUnit.SECONDS);
    this.scheduler.shutdownNow();
  }

  private final class Recorder implements ServerInterceptor {

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(
        ServerCall<ReqT, RespT> call, Metadata headers, ServerCallHandler<ReqT, RespT> next) {
      SocketAddress connection = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
      connections.computeIfAbsent(connection, (key) -> new AtomicInteger()).incrementAndGet();
      String method = call.getMethodDescriptor().getBareMethodName();
      String requestId = headers.get(REQUEST_ID);
      String id = (requestId != null) ? requestId : "";
      Fault fault =
          SESSION_METHODS.contains(method) ? Fault.NONE : faults.of(method, attemptOf(id));
      if (fault.failAtStart() != null) {
        return failAtStart(call, method, connection, id, fault);
      }
      StreamEndings.StreamEnding<ReqT, RespT> ending =
          (call.getMethodDescriptor().getType() == MethodDescriptor.MethodType.SERVER_STREAMING)
              ? endings.wrap(call)
              : null;
      ServerCall<ReqT, RespT> served = (ending != null) ? ending : call;
      if (serverTiming) {
        served = new ServerTimed<>(served, System.nanoTime());
      }
      if (fault.failAfterFirstMessage() != null) {
        served = new FailAfterFirstMessage<>(served, fault.failAfterFirstMessage());
      }
      ServerCall.Listener<ReqT> listener =
          new SimpleForwardingServerCallListener<>(next.startCall(served, headers)) {
            @Override
            public void onMessage(ReqT message) {
              calls.add(new Call(method, connection, (AbstractMessage) message, id));
              super.onMessage(message);
            }

            @Override
            public void onCancel() {
              cancelled(connection);
              if (ending != null) {
                ending.trailersDone();
              }
              super.onCancel();
            }
          };
      if (call.getMethodDescriptor().getType() == MethodDescriptor.MethodType.SERVER_STREAMING) {
        arrivals.add(new Arrival(connection, System.nanoTime()));
      }
      if (connection.equals(stalledConnection) && !SESSION_METHODS.contains(method)) {
        return new DelayedListener<>(listener, Long.MAX_VALUE, scheduler);
      }
      long delayNanos =
          SESSION_METHODS.contains(method)
              ? 0
              : serviceTime.sampleNanos() + TimeUnit.MILLISECONDS.toNanos(fault.delayMillis());
      if (slowConnections.contains(connection)) {
        delayNanos += TimeUnit.MILLISECONDS.toNanos(slowMillis);
      }
      delayNanos += setUpWait(connection, method, id);
      if (SQL_METHODS.contains(method) && !settings.reportCost.isZero()) {
        long cost = settings.reportCost.toNanos();
        listener =
            new CostlyStatementListener<>(
                listener, (service) -> new DelayedListener<>(service, cost, scheduler));
      }
      return (delayNanos > 0) ? new DelayedListener<>(listener, delayNanos, scheduler) : listener;
    }
  }

  /**
   * How long a call arriving now on {@code connection} waits for the connection's set-up: until the
   * set-up time after the connection's first call.
   */
  private long setUpWait(SocketAddress connection, String method, String requestId) {
    Duration setUp = this.settings.connectionSetUp;
    if (setUp.isZero()) {
      return 0;
    }
    long now = System.nanoTime();
    long done = this.setUpDone.computeIfAbsent(connection, (key) -> now + setUp.toNanos());
    long wait = done - now;
    if (wait <= 0) {
      return 0;
    }
    this.waitedForSetUp.add(new Call(method, connection, null, requestId));
    return wait;
  }

  private <ReqT, RespT> ServerCall.Listener<ReqT> failAtStart(
      ServerCall<ReqT, RespT> call,
      String method,
      SocketAddress connection,
      String requestId,
      Fault fault) {
    call.request(1);
    this.scheduler.schedule(
        () -> call.close(fault.failAtStart(), new Metadata()),
        fault.delayMillis(),
        TimeUnit.MILLISECONDS);
    return new ServerCall.Listener<>() {
      @Override
      public void onMessage(ReqT message) {
        calls.add(new Call(method, connection, (AbstractMessage) message, requestId));
      }

      @Override
      public void onCancel() {
        cancelled(connection);
      }
    };
  }

  /**
   * Sets whether responses carry Cloud Spanner's {@code server-timing} header: the frontend's time
   * from the call's arrival to its response headers ({@code gfet4t7; dur=<ms>}). On by default.
   */
  public void setServerTiming(boolean serverTiming) {
    this.serverTiming = serverTiming;
  }

  static final Metadata.Key<String> SERVER_TIMING =
      Metadata.Key.of("server-timing", Metadata.ASCII_STRING_MARSHALLER);

  /** A call whose response headers carry its time at the frontend, as Cloud Spanner's do. */
  private static final class ServerTimed<ReqT, RespT>
      extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {

    private final long arrivedNanos;

    ServerTimed(ServerCall<ReqT, RespT> call, long arrivedNanos) {
      super(call);
      this.arrivedNanos = arrivedNanos;
    }

    @Override
    public void sendHeaders(Metadata headers) {
      double millis = (System.nanoTime() - this.arrivedNanos) / 1e6;
      headers.put(SERVER_TIMING, String.format(java.util.Locale.ROOT, "gfet4t7; dur=%.3f", millis));
      super.sendHeaders(headers);
    }
  }

  /** A stream that fails right after its first message; what the service sends later is dropped. */
  private static final class FailAfterFirstMessage<ReqT, RespT>
      extends ForwardingServerCall.SimpleForwardingServerCall<ReqT, RespT> {

    private final Status status;

    private boolean closed;

    FailAfterFirstMessage(ServerCall<ReqT, RespT> call, Status status) {
      super(call);
      this.status = status;
    }

    @Override
    public synchronized void sendMessage(RespT message) {
      if (!this.closed) {
        super.sendMessage(message);
        this.closed = true;
        super.close(this.status, new Metadata());
      }
    }

    @Override
    public synchronized void close(Status status, Metadata trailers) {
      if (!this.closed) {
        this.closed = true;
        super.close(status, trailers);
      }
    }
  }

  /** Builds a server; the defaults are those of {@link MockSpannerServer#start()}. */
  public static final class Builder {

    private ServiceTime serviceTime =
        ServiceTime.uniform(Duration.ofMillis(2), Duration.ofMillis(5));

    private boolean markLast = true;

    private Duration trailersDelay = Duration.ofMillis(1);

    private int maxConcurrentStreams = 100;

    private int maxResets;

    private int resetWindowSeconds;

    private boolean countFrames;

    private Duration connectionSetUp = Duration.ZERO;

    private Duration maxConnectionAge;

    private Duration maxConnectionAgeGrace;

    private Duration reportCost = Duration.ofMillis(100);

    private Builder() {}

    /**
     * How much longer than a point select the {@link #REPORT} takes on every connection: 100 ms
     * unless set.
     */
    public Builder reportCost(Duration cost) {
      this.reportCost = cost;
      return this;
    }

    /**
     * The bare mock: answers at once, no {@code last}, trailers with the last message. Real Spanner
     * never behaves like this; use it only to show what that hides.
     */
    public Builder instant() {
      return serviceTime(ServiceTime.none()).markLast(false).trailersDelay(Duration.ZERO);
    }

    public Builder serviceTime(ServiceTime serviceTime) {
      this.serviceTime = serviceTime;
      return this;
    }

    /** Whether the final message of a stream carries {@code last = true}. */
    public Builder markLast(boolean markLast) {
      this.markLast = markLast;
      return this;
    }

    /** How long a stream's trailers lag its final message; {@link #TRAILERS_NEVER} for never. */
    public Builder trailersDelay(Duration trailersDelay) {
      this.trailersDelay = trailersDelay;
      return this;
    }

    /** Concurrent streams allowed per connection, 0 for no limit. */
    public Builder maxConcurrentStreams(int maxConcurrentStreams) {
      this.maxConcurrentStreams = maxConcurrentStreams;
      return this;
    }

    /**
     * At most {@code maxResets} RST_STREAM frames per connection in each window of {@code seconds};
     * past that the server sends GOAWAY ENHANCE_YOUR_CALM and ends the connection.
     */
    public Builder resetLimit(int maxResets, int seconds) {
      this.maxResets = maxResets;
      this.resetWindowSeconds = seconds;
      return this;
    }

    /**
     * What a new connection costs: every call on a connection, session calls too, waits until this
     * long after the connection's first call, as the frontend sets up its own state for the
     * connection (TCP and TLS are loopback here). Zero (the default) for none.
     */
    public Builder connectionSetUp(Duration setUp) {
      this.connectionSetUp = setUp;
      return this;
    }

    /**
     * Retires each connection at {@code age} (grpc-java's {@code maxConnectionAge}, which adds a
     * jitter of up to a tenth): a GOAWAY, then up to {@code grace} for the calls in flight to
     * finish, as Google's frontends do with their connections about every hour.
     */
    public Builder maxConnectionAge(Duration age, Duration grace) {
      this.maxConnectionAge = age;
      this.maxConnectionAgeGrace = grace;
      return this;
    }

    /** Puts a proxy in front of the server that counts RST_STREAM and GOAWAY frames. */
    public Builder countFrames() {
      this.countFrames = true;
      return this;
    }

    public MockSpannerServer start() throws IOException {
      return new MockSpannerServer(this);
    }
  }
}
