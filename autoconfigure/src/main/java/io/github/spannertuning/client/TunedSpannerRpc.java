package io.github.spannertuning.client;

import com.google.api.core.ApiFuture;
import com.google.api.core.ApiFutures;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.XGoogSpannerRequestId;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.protobuf.ByteString;
import com.google.protobuf.Empty;
import com.google.spanner.v1.BeginTransactionRequest;
import com.google.spanner.v1.CommitRequest;
import com.google.spanner.v1.CommitResponse;
import com.google.spanner.v1.ExecuteBatchDmlRequest;
import com.google.spanner.v1.ExecuteBatchDmlResponse;
import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.PartitionQueryRequest;
import com.google.spanner.v1.PartitionReadRequest;
import com.google.spanner.v1.PartitionResponse;
import com.google.spanner.v1.ReadRequest;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.RollbackRequest;
import com.google.spanner.v1.Session;
import com.google.spanner.v1.Transaction;
import com.google.spanner.v1.TransactionSelector;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.pool.ChannelReservation;
import io.github.spannertuning.pool.ChannelWarmer;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.routing.HedgeDelay;
import io.github.spannertuning.routing.TransactionTable;
import io.github.spannertuning.trace.Traces;
import io.grpc.Context;
import io.opentelemetry.api.trace.Span;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The client's own {@link GapicSpannerRpc}, with the stream-end guard and routing added where the
 * client hands out streams, queries and a transaction's calls. A subclass rather than a proxy: the
 * client closes a {@code GapicSpannerRpc} with {@code shutdownNow()} and anything else with a
 * graceful shutdown that waits for in-flight calls.
 *
 * <p>The path of one single-use query, with every feature on:
 *
 * <ol>
 *   <li>The client calls {@link #executeQuery}: the request is a single-use read ({@link
 *       PoolRouting#isSingleUse}).
 *   <li>A {@link GuardedStream} is put between the call and the client's consumer.
 *   <li>The rpc asks the pool's {@link PoolRouting} for a {@link ChannelReservation}: the channel
 *       the call may expect to answer first, counted from now, the options that send the call there
 *       (on a fixed pool, without the client's own channel choice; on a dynamic one, naming the
 *       channel), and the context that carries the reservation and the guarded stream to the
 *       channel's counting interceptor.
 *   <li>The client's own {@code executeQuery} runs with those options, inside the reservation; gax
 *       creates the gRPC call on this thread, and grpc-gcp sends it to the channel named.
 *   <li>On that sub-channel the counting interceptor claims the reservation (moving the count
 *       should the call have landed elsewhere), tells the guarded stream its sub-channel and wraps
 *       the call to count and time it.
 *   <li>The reservation closes: the caller's context is back, and the count given back if no call
 *       claimed it.
 *   <li>The first response times the sub-channel's latency estimate; the guarded stream notes the
 *       message marked {@code last} before the consumer sees it.
 *   <li>The application closes the result set at that message: the guarded stream drains instead of
 *       cancelling, unless its sub-channel has too few stream slots free.
 *   <li>The trailers arrive: the interceptor's call tells the guarded stream it closed OK ({@link
 *       GuardedStream#transportClosedOk}), which ends the drain, then stops counting the call in
 *       flight; gax's report of the end a hop later is dropped.
 * </ol>
 *
 * <p>A transaction's first call (a BeginTransaction, or a query, read or DML that begins the
 * transaction inline) takes the same path, and the pool records the channel it took under the
 * object the client gives every call of that transaction. Each later call of the transaction
 * (queries, reads, DML, commit, rollback) is reserved on that channel while it takes calls. The
 * blocking methods of the client's rpc call these asynchronous ones, which are overridden.
 *
 * <p>A call that is not routed (partitioned DML, a transaction whose first call was not routed)
 * meets only step 5: counted on its sub-channel from its start to its close.
 *
 * <p>Where the client traces its calls with OpenTelemetry, the client's span of each stream, DML,
 * batch DML, commit and read/write BeginTransaction gets the route and channel of the call ({@link
 * Traces}), and a stream's span how it ended. Whether the client traces is decided once, here: on a
 * client that does not, each call pays a final field's check here and in the channel interceptor,
 * and a guarded stream the read of its span field, {@code null}, at its end.
 */
final class TunedSpannerRpc extends ObservedSpannerRpc {

  /** {@code null} when neither routing feature nor hedging was on when this client was built. */
  private final PoolRouting pool;

  /** Whether the client traces its calls ({@link Traces#on}), as it was when this rpc was built. */
  private final boolean traced;

  /** The channels' warmth, where it is watched; else {@code null}. */
  private final ChannelWarmer warmer;

  /** Times each operation where the application observes the client's calls; else {@code null}. */
  private final CallObserver observer;

  /** The operations of streams the client may resume after an error, for their next attempt. */
  private final ResumedStreams resumed = new ResumedStreams();

  TunedSpannerRpc(SpannerOptions options, SpannerTuningState state) {
    super(options, state);
    this.pool = pool(options, state);
    this.traced = state.traced();
    this.warmer =
        (this.pool != null && state.tuning().isWarmUp())
            ? this.pool.watchWarmth(options, state.tuning().newConnectionRefresh())
            : null;
    state.warmer(this.warmer, options);
    this.observer =
        (state.observations().status() == FeatureState.Status.ON) ? state.observer() : null;
  }

  @Override
  public Session createSession(
      String databaseName,
      String databaseRole,
      Map<String, String> labels,
      Map<Option, ?> options,
      boolean isMultiplexed) {
    return primeWith(
        observed(
            "CreateSession",
            databaseName,
            () -> super.createSession(databaseName, databaseRole, labels, options, isMultiplexed)));
  }

  @Override
  public Session createSession(
      String databaseName,
      String databaseRole,
      Map<String, String> labels,
      Map<Option, ?> options) {
    return primeWith(
        observed(
            "CreateSession",
            databaseName,
            () -> super.createSession(databaseName, databaseRole, labels, options)));
  }

  @Override
  public List<Session> batchCreateSessions(
      String databaseName,
      int sessionCount,
      String databaseRole,
      Map<String, String> labels,
      Map<Option, ?> options) {
    List<Session> sessions =
        observed(
            "BatchCreateSessions",
            databaseName,
            () ->
                super.batchCreateSessions(
                    databaseName, sessionCount, databaseRole, labels, options));
    if (!sessions.isEmpty()) {
      primeWith(sessions.get(0));
    }
    return sessions;
  }

  /**
   * The client's first session is the one its channels are primed with: the warm-up's priming call
   * is a single-use {@code SELECT 1} on it, as the dynamic pool primes the channels it adds.
   */
  private Session primeWith(Session session) {
    ChannelWarmer warmer = this.warmer;
    if (warmer != null && !warmer.hasSession()) {
      ExecuteSqlRequest priming =
          ExecuteSqlRequest.newBuilder().setSession(session.getName()).setSql(PRIMING_SQL).build();
      // Known before any channel can be primed: the read warm-up starts once one is.
      this.state.readsFrom(databaseOf(session.getName()));
      warmer.sessionKnown((channel) -> prime(priming, channel));
    }
    return session;
  }

  /** The database of a session's name ({@code projects/p/instances/i/databases/d/sessions/s}). */
  static String databaseOf(String sessionName) {
    int sessions = sessionName.indexOf("/sessions/");
    return (sessions > 0) ? sessionName.substring(0, sessions) : null;
  }

  /** The priming query: the cheapest query Spanner answers, touching no table. */
  static final String PRIMING_SQL = "SELECT 1";

  private ApiFuture<?> prime(ExecuteSqlRequest priming, ChannelStats channel) {
    ChannelReservation reservation = this.pool.reservePriming(channel);
    if (reservation == null) {
      return ApiFutures.immediateFailedFuture(
          new IllegalStateException("the pool no longer has the channel"));
    }
    try (reservation) {
      return super.executeQueryAsync(priming, reservation.options(), false);
    }
  }

  /**
   * Sets up routing over the pool before the client's first call; that is the only moment a fixed
   * pool's keys can be bound one per channel.
   */
  private PoolRouting pool(SpannerOptions options, SpannerTuningState state) {
    if (!state.isActive(Feature.SINGLE_USE_DISTRIBUTION)
        && !state.isActive(Feature.TRANSACTION_ROUTING)
        && !state.isActive(Feature.HEDGING)) {
      state.builtWithPicker(false);
      return null;
    }
    try {
      PoolRouting pool =
          PoolRouting.install(
              this,
              options,
              state.channelLoad(),
              state.tuning().routingRule(state.drainWhileInFlightAtMost()));
      state.builtWithPicker(true);
      return pool;
    } catch (RuntimeException ex) {
      state.builtWithPicker(false);
      state.pickerUnavailable("cannot set up the channel pool: " + ex.getMessage());
      return null;
    }
  }

  @Override
  public StreamingCall executeQuery(
      ExecuteSqlRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      XGoogSpannerRequestId requestId,
      boolean routeToLeader) {
    Route route = Route.of(request.hasTransaction(), request.getTransaction());
    HedgeDelay.Shape shape =
        hedgeable(route, options, request.getPartitionToken(), request.getResumeToken())
            ? this.state.hedging().queryShape(request.getSql(), System.nanoTime())
            : null;
    GuardedStream.Starter starter =
        (target, callOptions) ->
            super.executeQuery(request, target, callOptions, requestId, routeToLeader);
    if (this.observer == null || this.state.isWarmUpRead()) {
      return stream(route, shape, consumer, options, starter);
    }
    ObservedStream observed =
        observedStream("ExecuteStreamingSql", request.getSession(), requestId, consumer);
    return observed.start(() -> stream(route, shape, observed, options, starter));
  }

  @Override
  public StreamingCall read(
      ReadRequest request,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      XGoogSpannerRequestId requestId,
      boolean routeToLeader) {
    Route route = Route.of(request.hasTransaction(), request.getTransaction());
    HedgeDelay.Shape shape =
        hedgeable(route, options, request.getPartitionToken(), request.getResumeToken())
            ? this.state
                .hedging()
                .readShape(
                    request.getTable(),
                    request.getIndex(),
                    request.getColumnsList(),
                    System.nanoTime())
            : null;
    GuardedStream.Starter starter =
        (target, callOptions) -> super.read(request, target, callOptions, requestId, routeToLeader);
    if (this.observer == null || this.state.isWarmUpRead()) {
      return stream(route, shape, consumer, options, starter);
    }
    ObservedStream observed =
        observedStream("StreamingRead", request.getSession(), requestId, consumer);
    return observed.start(() -> stream(route, shape, observed, options, starter));
  }

  /**
   * A stream's operation: the one an earlier attempt of the same stream left, where the client
   * resumes it after an error, else a new one.
   */
  private ObservedStream observedStream(
      String method, String session, Object requestId, ResultStreamConsumer consumer) {
    CallObserver.Call operation = this.resumed.resume(requestId);
    if (operation == null) {
      operation = this.observer.operation(method, session);
    }
    return new ObservedStream(consumer, operation, requestId, this.resumed);
  }

  /**
   * Makes a blocking call, as an operation where calls are observed. For the seldom calls (a
   * session's creation, a partition): the supplier is made whether or not they are observed.
   */
  private <T> T observed(String method, String session, Supplier<T> call) {
    CallObserver observer = this.observer;
    if (observer == null) {
      return call.get();
    }
    CallObserver.Call operation = observer.operation(method, session);
    T result;
    try {
      result = call.get();
    } catch (RuntimeException ex) {
      operation.stop(OperationEnd.errorType(ex));
      throw ex;
    }
    operation.stop(CallObserver.NO_ERROR);
    return result;
  }

  /** Ends the operation of an asynchronous call when its future does. */
  private <T> ApiFuture<T> observedAsync(
      String method, String session, Supplier<ApiFuture<T>> call) {
    CallObserver.Call operation = this.observer.operation(method, session);
    ApiFuture<T> future;
    try {
      future = call.get();
    } catch (RuntimeException ex) {
      operation.stop(OperationEnd.errorType(ex));
      throw ex;
    }
    ApiFutures.addCallback(future, new OperationEnd<>(operation), MoreExecutors.directExecutor());
    return future;
  }

  /**
   * Whether a read may be hedged now: hedging is on, and the read is safe to send twice. That is a
   * single-use read-only read, or a read of a read-only transaction that has its id; never one that
   * begins a transaction, one of a read/write transaction (DML included), a partitioned read, nor a
   * resumed stream, which has passed rows to the application already. The warm-up's reads are not
   * hedged: they are not the application's, and its shapes and delays are learned from its own.
   */
  private boolean hedgeable(
      Route route, Map<Option, ?> options, ByteString partition, ByteString resume) {
    if (this.pool == null
        || !this.state.isActive(Feature.HEDGING)
        || !partition.isEmpty()
        || !resume.isEmpty()
        || this.state.isWarmUpRead()) {
      return false;
    }
    return route == Route.SINGLE_USE
        || (route == Route.FOLLOWS && this.pool.isReadOnly(PoolRouting.transactionOf(options)));
  }

  @Override
  public ApiFuture<ResultSet> executeQueryAsync(
      ExecuteSqlRequest request, Map<Option, ?> options, boolean routeToLeader) {
    if (this.observer == null) {
      return executeQueryAsyncTraced(request, options, routeToLeader);
    }
    return observedAsync(
        "ExecuteSql",
        request.getSession(),
        () -> executeQueryAsyncTraced(request, options, routeToLeader));
  }

  private ApiFuture<ResultSet> executeQueryAsyncTraced(
      ExecuteSqlRequest request, Map<Option, ?> options, boolean routeToLeader) {
    Span span = this.traced ? Traces.current() : null;
    if (span != null) {
      return traced(span, () -> executeQueryAsync(request, options, routeToLeader, span));
    }
    return executeQueryAsync(request, options, routeToLeader, null);
  }

  private ApiFuture<ResultSet> executeQueryAsync(
      ExecuteSqlRequest request, Map<Option, ?> options, boolean routeToLeader, Span span) {
    ChannelReservation reservation =
        reserve(Route.of(request.hasTransaction(), request.getTransaction()), options, null, span);
    if (reservation == null) {
      return super.executeQueryAsync(request, options, routeToLeader);
    }
    try (reservation) {
      return super.executeQueryAsync(request, reservation.options(), routeToLeader);
    }
  }

  @Override
  public ApiFuture<ExecuteBatchDmlResponse> executeBatchDmlAsync(
      ExecuteBatchDmlRequest request, Map<Option, ?> options) {
    if (this.observer == null) {
      return executeBatchDmlAsyncTraced(request, options);
    }
    return observedAsync(
        "ExecuteBatchDml",
        request.getSession(),
        () -> executeBatchDmlAsyncTraced(request, options));
  }

  private ApiFuture<ExecuteBatchDmlResponse> executeBatchDmlAsyncTraced(
      ExecuteBatchDmlRequest request, Map<Option, ?> options) {
    Span span = this.traced ? Traces.current() : null;
    if (span != null) {
      return traced(span, () -> executeBatchDmlAsync(request, options, span));
    }
    return executeBatchDmlAsync(request, options, null);
  }

  private ApiFuture<ExecuteBatchDmlResponse> executeBatchDmlAsync(
      ExecuteBatchDmlRequest request, Map<Option, ?> options, Span span) {
    ChannelReservation reservation =
        reserve(Route.of(request.hasTransaction(), request.getTransaction()), options, null, span);
    if (reservation == null) {
      return super.executeBatchDmlAsync(request, options);
    }
    try (reservation) {
      return super.executeBatchDmlAsync(request, reservation.options());
    }
  }

  @Override
  public ApiFuture<Transaction> beginTransactionAsync(
      BeginTransactionRequest request, Map<Option, ?> options, boolean routeToLeader) {
    if (this.observer == null) {
      return beginTransactionAsyncTraced(request, options, routeToLeader);
    }
    return observedAsync(
        "BeginTransaction",
        request.getSession(),
        () -> beginTransactionAsyncTraced(request, options, routeToLeader));
  }

  private ApiFuture<Transaction> beginTransactionAsyncTraced(
      BeginTransactionRequest request, Map<Option, ?> options, boolean routeToLeader) {
    // Partitioned DML goes on as the client sends it.
    Route route =
        request.getOptions().hasPartitionedDml()
            ? Route.FOLLOWS
            : request.getOptions().hasReadOnly()
                ? Route.BEGINS_READ_ONLY
                : Route.BEGINS_TRANSACTION;
    // The client makes a span of its own for a read/write transaction's BeginTransaction only.
    Span span = (this.traced && route == Route.BEGINS_TRANSACTION) ? Traces.current() : null;
    if (span != null) {
      return traced(
          span, () -> beginTransactionAsync(request, options, routeToLeader, route, span));
    }
    return beginTransactionAsync(request, options, routeToLeader, route, null);
  }

  private ApiFuture<Transaction> beginTransactionAsync(
      BeginTransactionRequest request,
      Map<Option, ?> options,
      boolean routeToLeader,
      Route route,
      Span span) {
    ChannelReservation reservation = reserve(route, options, null, span);
    if (reservation == null) {
      return super.beginTransactionAsync(request, options, routeToLeader);
    }
    try (reservation) {
      return super.beginTransactionAsync(request, reservation.options(), routeToLeader);
    }
  }

  @Override
  public ApiFuture<CommitResponse> commitAsync(CommitRequest request, Map<Option, ?> options) {
    if (this.observer == null) {
      return commitAsyncTraced(request, options);
    }
    return observedAsync("Commit", request.getSession(), () -> commitAsyncTraced(request, options));
  }

  private ApiFuture<CommitResponse> commitAsyncTraced(
      CommitRequest request, Map<Option, ?> options) {
    Route route = request.hasSingleUseTransaction() ? Route.SINGLE_CALL_TRANSACTION : Route.FOLLOWS;
    Span span = this.traced ? Traces.current() : null;
    if (span != null) {
      return traced(span, () -> commitAsync(request, options, route, span));
    }
    return commitAsync(request, options, route, null);
  }

  private ApiFuture<CommitResponse> commitAsync(
      CommitRequest request, Map<Option, ?> options, Route route, Span span) {
    ChannelReservation reservation = reserve(route, options, null, span);
    if (reservation == null) {
      return super.commitAsync(request, options);
    }
    try (reservation) {
      return super.commitAsync(request, reservation.options());
    }
  }

  @Override
  public ApiFuture<Empty> rollbackAsync(RollbackRequest request, Map<Option, ?> options) {
    if (this.observer == null) {
      return rollbackAsyncRouted(request, options);
    }
    return observedAsync(
        "Rollback", request.getSession(), () -> rollbackAsyncRouted(request, options));
  }

  private ApiFuture<Empty> rollbackAsyncRouted(RollbackRequest request, Map<Option, ?> options) {
    // The client has no span of a rollback's own: its current span is the transaction's.
    ChannelReservation reservation = reserve(Route.FOLLOWS, options, null, null);
    if (reservation == null) {
      return super.rollbackAsync(request, options);
    }
    try (reservation) {
      return super.rollbackAsync(request, reservation.options());
    }
  }

  @Override
  public PartitionResponse partitionQuery(PartitionQueryRequest request, Map<Option, ?> options) {
    return observed(
        "PartitionQuery", request.getSession(), () -> partitionQueryRouted(request, options));
  }

  private PartitionResponse partitionQueryRouted(
      PartitionQueryRequest request, Map<Option, ?> options) {
    ChannelReservation reservation = reserve(Route.FOLLOWS, options, null, null);
    if (reservation == null) {
      return super.partitionQuery(request, options);
    }
    try (reservation) {
      return super.partitionQuery(request, reservation.options());
    }
  }

  @Override
  public PartitionResponse partitionRead(PartitionReadRequest request, Map<Option, ?> options) {
    return observed(
        "PartitionRead", request.getSession(), () -> partitionReadRouted(request, options));
  }

  private PartitionResponse partitionReadRouted(
      PartitionReadRequest request, Map<Option, ?> options) {
    ChannelReservation reservation = reserve(Route.FOLLOWS, options, null, null);
    if (reservation == null) {
      return super.partitionRead(request, options);
    }
    try (reservation) {
      return super.partitionRead(request, reservation.options());
    }
  }

  private StreamingCall stream(
      Route route,
      HedgeDelay.Shape hedgeShape,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      GuardedStream.Starter starter) {
    Span span = this.traced ? Traces.current() : null;
    if (span != null) {
      return traced(span, () -> stream(route, hedgeShape, consumer, options, starter, span));
    }
    return stream(route, hedgeShape, consumer, options, starter, null);
  }

  /** As {@link #stream(Route, HedgeDelay.Shape, ...)}, traced on {@code span} unless null. */
  private StreamingCall stream(
      Route route,
      HedgeDelay.Shape hedgeShape,
      ResultStreamConsumer consumer,
      Map<Option, ?> options,
      GuardedStream.Starter starter,
      Span span) {
    if (hedgeShape != null) {
      HedgedStream hedged =
          HedgedStream.create(
              consumer,
              this.state,
              this.pool,
              hedgeShape,
              starter,
              options,
              (route == Route.SINGLE_USE) ? CallKind.SINGLE_USE : CallKind.TRANSACTION_QUERY,
              System.nanoTime(),
              span);
      start(route, hedged.first(), options, starter, span);
      return hedged.started();
    }
    if (this.state.isActive(Feature.STREAM_END_GUARD)) {
      GuardedStream guarded = new GuardedStream(consumer, this.state);
      if (span != null) {
        guarded.trace(span);
      }
      return start(route, guarded, options, starter, span);
    }
    ChannelReservation reservation = reserve(route, options, null, span);
    if (reservation == null) {
      return starter.start(consumer, options);
    }
    try (reservation) {
      return starter.start(consumer, reservation.options());
    }
  }

  /** Makes a guarded stream's call where routing sends it; returns the stream, attached to it. */
  private StreamingCall start(
      Route route,
      GuardedStream guarded,
      Map<Option, ?> options,
      GuardedStream.Starter starter,
      Span span) {
    ChannelReservation reservation = reserve(route, options, guarded, span);
    if (reservation == null) {
      return guarded.start(options, starter);
    }
    StreamingCall call;
    try (reservation) {
      call = starter.start(guarded, reservation.options());
    }
    return guarded.attach(call);
  }

  /**
   * Reserves the channel of the call about to be made on this thread, counted there from now, or
   * returns {@code null} to leave it where the client sends it. A single-use read, and the first
   * call of a transaction, go where the picker says; a later call of a transaction whose first call
   * was routed follows it while its channel takes calls, whatever the switches say now, so that no
   * transaction is split.
   *
   * @param span the client's span of the call, which is told its route; {@code null} if untraced
   */
  private ChannelReservation reserve(
      Route route, Map<Option, ?> options, GuardedStream stream, Span span) {
    PoolRouting pool = this.pool;
    if (pool == null || route == Route.NONE) {
      return leftToClient(route, options, span);
    }
    ChannelReservation reservation;
    if (route == Route.SINGLE_USE || route == Route.SINGLE_CALL_TRANSACTION) {
      if (!this.state.isActive(
          (route == Route.SINGLE_USE)
              ? Feature.SINGLE_USE_DISTRIBUTION
              : Feature.TRANSACTION_ROUTING)) {
        return leftToClient(route, options, span);
      }
      reservation = pool.reserve(options, stream);
      if (reservation == null) {
        return leftToClient(route, options, span);
      }
      if (route == Route.SINGLE_USE) {
        if (!this.state.isWarmUpRead()) {
          this.state.singleUseRouted();
        }
      } else {
        this.state.transactionRouted();
      }
    } else {
      Object transaction = PoolRouting.transactionOf(options);
      if (transaction == null) {
        return leftToClient(route, options, span);
      }
      if (route == Route.BEGINS_READ_ONLY && this.state.isActive(Feature.HEDGING)) {
        pool.markReadOnly(transaction);
      }
      reservation = pool.reserveFollowing(transaction, options, stream);
      if (reservation == null) {
        if ((route != Route.BEGINS_TRANSACTION && route != Route.BEGINS_READ_ONLY)
            || !this.state.isActive(Feature.TRANSACTION_ROUTING)) {
          return leftToClient(route, options, span);
        }
        reservation = pool.reserveFirst(transaction, options, stream);
        if (reservation == null) {
          return leftToClient(route, options, span);
        }
        this.state.transactionRouted();
      }
    }
    if (span != null) {
      Traces.route(span, reservation.route());
    }
    return reservation;
  }

  /**
   * No channel is picked for the call: {@code null}, and on its span whether routing would have
   * picked one with its feature on ({@link Traces#CLIENT}) or never does ({@link
   * Traces#NOT_ROUTED}): a later call of a transaction whose first call was not routed, partitioned
   * DML, a call that names no transaction routing can follow.
   */
  private static ChannelReservation leftToClient(Route route, Map<Option, ?> options, Span span) {
    if (span != null) {
      boolean routable =
          switch (route) {
            case SINGLE_USE, SINGLE_CALL_TRANSACTION -> true;
            case BEGINS_TRANSACTION, BEGINS_READ_ONLY -> PoolRouting.transactionOf(options) != null;
            default -> false;
          };
      Traces.route(span, routable ? Traces.CLIENT : Traces.NOT_ROUTED);
    }
    return null;
  }

  /** Makes a call traced on {@code span}: the interceptor tells the span the call's channel. */
  private static <T> T traced(Span span, Supplier<T> call) {
    Context previous = Traces.open(span);
    try {
      return call.get();
    } finally {
      Traces.close(previous);
    }
  }

  /** The transactions this client routes now, for the state's soak checks. */
  TransactionTable transactions() {
    return (this.pool != null) ? this.pool.transactions() : new TransactionTable();
  }

  /** What a request is to routing. */
  enum Route {

    /** A single-use read or query: picked, bound to nothing. */
    SINGLE_USE,

    /** A read/write transaction of one call (a commit of mutations alone): picked. */
    SINGLE_CALL_TRANSACTION,

    /** A transaction's first call (BeginTransaction, or a statement that begins it inline). */
    BEGINS_TRANSACTION,

    /** As {@link #BEGINS_TRANSACTION}, of a read-only transaction. */
    BEGINS_READ_ONLY,

    /** A later call of a transaction: it follows the first if that was routed. */
    FOLLOWS,

    /** Neither: where the client sends it. */
    NONE;

    /** The route of a query or read by its transaction selector. */
    static Route of(boolean hasTransaction, TransactionSelector selector) {
      if (PoolRouting.isSingleUse(hasTransaction, selector)) {
        return SINGLE_USE;
      }
      return switch (selector.getSelectorCase()) {
        case BEGIN -> selector.getBegin().hasReadOnly() ? BEGINS_READ_ONLY : BEGINS_TRANSACTION;
        case ID -> FOLLOWS;
        default -> NONE;
      };
    }
  }
}
