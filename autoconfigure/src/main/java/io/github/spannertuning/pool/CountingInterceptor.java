package io.github.spannertuning.pool;

import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.ReadRequest;
import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.ServerTiming;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.experiment.ExperimentSlot;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.routing.ChannelLatency;
import io.github.spannertuning.routing.StatementCosts;
import io.github.spannertuning.trace.Traces;
import io.github.spannertuning.warmup.ReadWarmUp;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.ForwardingClientCallListener.SimpleForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * Counts every data-plane call on the real sub-channel it is made on, into its {@link ChannelLoad}.
 * It sits on every sub-channel, below grpc-gcp or gax's pool, and tells sub-channels apart by the
 * channel it is handed: the same interceptor instance serves all of grpc-gcp's channels, so a
 * per-instance count would not do.
 *
 * <p>Two other pieces hand it what they know through the call's context: {@link PoolRouting} the
 * {@link ChannelReservation} the call was counted under at its pick, and the stream-end guard the
 * {@link StreamLink} whose first call this is, which learns its sub-channel here and hears of an OK
 * close before gax tells its consumer. A cancel that such a stream decided while its call was open
 * and that reaches the call after the call closed stops here, where the stream says so: on its way
 * down through gax the trailers came, and below this interceptor only the application's would see
 * it, as a cancel of a call that had ended.
 *
 * <p>The cost per call is a map lookup, two context lookups, two atomic increments, one decrement,
 * two clock reads (one for a call routing picked, which is timed from its pick) and the wrappers.
 * Where the client traces its calls, a third context lookup tells the call's span its channel
 * ({@link Traces#madeOn}); elsewhere that is a final field's check.
 *
 * <p>It also tells the client's {@link ExperimentSlot} of the calls an experiment compares. With no
 * experiment running that is one volatile read per call. While one runs, a call of a kind it
 * compares (queries and reads, by their transaction selector; commits) is recorded once, with its
 * latency from its pick or start to the message marked {@code last} (the end of its rows, where the
 * application stops waiting) or else its close, and its status; no lock, no allocation. A cancel of
 * a call that had delivered its {@code last} message and not closed is a cancel of a finished
 * stream; a call closed by a GOAWAY (its status says so) counts as one the client saw.
 */
final class CountingInterceptor implements ClientInterceptor {

  /**
   * The only service counted. The client hands the same interceptors to its instance-admin and
   * database-admin channels as to its data pool; their calls pass uncounted, so channels and
   * imbalance describe only the pool that carries queries, reads and transactions. The check costs
   * a field read ({@code MethodDescriptor.getServiceName()}) and a compare that the admin and
   * long-running-operation service names fail at once on their length.
   */
  private static final String DATA_SERVICE = "google.spanner.v1.Spanner";

  private final ChannelLoad load;

  private final ExperimentSlot experiment;

  /** Whether the client traces its calls, as it was when its rpc was built. */
  private final boolean traced;

  /** Where the application observes the client's calls, each attempt's; else {@code null}. */
  private final CallObserver observer;

  private static final Metadata.Key<String> SERVER_TIMING =
      Metadata.Key.of(ServerTiming.HEADER, Metadata.ASCII_STRING_MARSHALLER);

  CountingInterceptor(
      ChannelLoad load, ExperimentSlot experiment, boolean traced, CallObserver observer) {
    this.load = load;
    this.experiment = experiment;
    this.traced = traced;
    this.observer = observer;
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    if (!DATA_SERVICE.equals(method.getServiceName())) {
      return next.newCall(method, callOptions);
    }
    ChannelStats stats = this.load.stats(next);
    if (this.traced) {
      Traces.madeOn(stats.index());
    }
    ExperimentSlot experiment = this.experiment;
    if (experiment != null && (!experiment.isRunning() || ReadWarmUp.isWarmUpRead())) {
      experiment = null;
    }
    ChannelReservation reservation = ChannelReservation.KEY.get();
    if (reservation != null && reservation.claim(stats)) {
      if (reservation.reserved() != null) {
        return new CountedCall<>(
            next.newCall(method, callOptions),
            stats,
            reservation.reserved(),
            reservation.pickedAtNanos(),
            StreamLink.link(reservation.stream(), stats),
            experiment,
            method,
            this.load.costs(),
            attempt(method));
      }
      if (reservation.route() != PoolRouting.PRIMING) {
        return next.newCall(method, callOptions);
      }
      // A priming call: counted as a call of its channel, not timed (its connection's set-up is
      // not the channel's latency) and not an experiment's.
      return new CountedCall<>(
          next.newCall(method, callOptions), stats, null, 0, null, null, method, null, null);
    }
    return new CountedCall<>(
        next.newCall(method, callOptions),
        stats,
        null,
        0,
        StreamLink.linkStarting(stats),
        experiment,
        method,
        this.load.costs(),
        attempt(method));
  }

  /** The attempt a call is observed as, where the application observes calls; else null. */
  private CallObserver.Attempt attempt(MethodDescriptor<?, ?> method) {
    CallObserver observer = this.observer;
    // The warm-up's reads are the starter's own, not the application's.
    return (observer != null && !ReadWarmUp.isWarmUpRead())
        ? observer.attempt(Methods.bareName(method))
        : null;
  }

  /** What a call's status tells routing's latency estimate of its channel. */
  static ChannelLatency.Close close(Status.Code code) {
    return switch (code) {
      case UNAVAILABLE, RESOURCE_EXHAUSTED -> ChannelLatency.Close.CHANNEL_FAULT;
      case DEADLINE_EXCEEDED -> ChannelLatency.Close.DEADLINE;
      case CANCELLED -> ChannelLatency.Close.CANCELLED;
      default -> ChannelLatency.Close.ANSWERED;
    };
  }

  /** Not a kind an experiment compares. */
  private static final int OTHER = 0;

  /** A query or read: single-use or in a transaction, as its request's selector says. */
  private static final int QUERY = 1;

  /** A commit. */
  private static final int COMMIT = 2;

  /**
   * What an experiment makes of a method of the Spanner service. By its full name, a field: the
   * bare name is cut from it anew, allocating, on every call to {@code getBareMethodName()}.
   */
  static int methodKind(MethodDescriptor<?, ?> method) {
    return switch (method.getFullMethodName()) {
      case DATA_SERVICE + "/ExecuteStreamingSql",
          DATA_SERVICE + "/StreamingRead",
          DATA_SERVICE + "/ExecuteSql",
          DATA_SERVICE + "/Read" ->
          QUERY;
      case DATA_SERVICE + "/Commit" -> COMMIT;
      default -> OTHER;
    };
  }

  /** The kind of a query or read by its request, or {@code null} for any other message. */
  static CallKind queryKind(Object request) {
    if (request instanceof ExecuteSqlRequest sql) {
      return PoolRouting.isSingleUse(sql.hasTransaction(), sql.getTransaction())
          ? CallKind.SINGLE_USE
          : CallKind.TRANSACTION_QUERY;
    }
    if (request instanceof ReadRequest read) {
      return PoolRouting.isSingleUse(read.hasTransaction(), read.getTransaction())
          ? CallKind.SINGLE_USE
          : CallKind.TRANSACTION_QUERY;
    }
    return null;
  }

  /**
   * A data-plane call, counted in flight on its channel from its pick (a call routing picked) or
   * its start (any other) to its close, and timed from then to its first response for the channel's
   * latency estimate. Should grpc-gcp have sent a picked call elsewhere than its pick, the count
   * moves to the channel it really went to.
   */
  private static final class CountedCall<ReqT, RespT>
      extends SimpleForwardingClientCall<ReqT, RespT> {

    @SuppressWarnings("rawtypes")
    private static final AtomicIntegerFieldUpdater<CountedCall> COUNTED =
        AtomicIntegerFieldUpdater.newUpdater(CountedCall.class, "counted");

    private final ChannelStats stats;

    private final StreamLink stream;

    /** 1 while this call holds an in-flight count, on {@link #countedOn}. */
    private volatile int counted;

    private volatile ChannelStats countedOn;

    private long startNanos;

    /**
     * The costs of the client's kinds of call, where the call's time to first response goes into
     * its channel's estimate; {@code null} where it does not (a priming call).
     */
    private final StatementCosts costs;

    /** The call's kind, once its request is sent; {@code null} until then or for no free way. */
    private StatementCosts.Cost costKind;

    /** The method's full name, a constant of its descriptor: the kind of a call of no statement. */
    private final String methodName;

    /** The experiment running when the call was made, or {@code null}: then nothing below is. */
    private final ExperimentSlot experiment;

    /** {@link #QUERY} until the request tells which kind of query, {@link #COMMIT} or other. */
    private final int methodKind;

    /** The kind the experiment records this call as, once known; {@code null} for none. */
    private volatile CallKind kind;

    /** Whether the call delivered its {@code last} message, and so was recorded then. */
    private volatile boolean lastSeen;

    /** Whether the call's close reached this interceptor. */
    private volatile boolean closed;

    /** The attempt the application observes, or {@code null}. */
    private final CallObserver.Attempt attempt;

    /**
     * @param reserved the channel counted at the pick, or {@code null} for a call that was not
     *     picked and is counted when it starts
     * @param stream the guarded stream this call is the first attempt of, or {@code null}
     * @param experiment the client's experiments while one runs, else {@code null}
     * @param costs the costs of the client's kinds of call, where the call's time to first response
     *     goes into its channel's estimate, less its kind's extra cost; {@code null} where it is
     *     not timed
     */
    CountedCall(
        ClientCall<ReqT, RespT> call,
        ChannelStats stats,
        ChannelStats reserved,
        long pickedAtNanos,
        StreamLink stream,
        ExperimentSlot experiment,
        MethodDescriptor<ReqT, RespT> method,
        StatementCosts costs,
        CallObserver.Attempt attempt) {
      super(call);
      this.attempt = attempt;
      this.costs = costs;
      this.methodName = method.getFullMethodName();
      this.stats = stats;
      this.stream = stream;
      this.counted = (reserved != null) ? 1 : 0;
      this.countedOn = (reserved != null) ? reserved : stats;
      this.startNanos = pickedAtNanos;
      this.experiment = experiment;
      // A hedged read's attempts are recorded as one read, by the read.
      this.methodKind =
          (experiment != null && (stream == null || !stream.hedgeAttempt()))
              ? methodKind(method)
              : OTHER;
      if (this.methodKind == COMMIT) {
        this.kind = CallKind.COMMIT;
      }
    }

    @Override
    public void sendMessage(ReqT message) {
      CallObserver.Attempt attempt = this.attempt;
      if (attempt != null) {
        // Timed from its request, which names its database: every call sends one at once.
        attempt.on(Methods.sessionOf(message));
      }
      if (this.methodKind == QUERY && this.kind == null) {
        this.kind = queryKind(message);
      }
      StatementCosts costs = this.costs;
      if (costs != null && this.costKind == null) {
        StatementCosts.Cost kind = costs.kind(costKey(message), this.startNanos);
        this.costKind = kind;
        long extra = costs.extraNanos(kind);
        if (extra > 0) {
          this.stats.connection().latency().quietUntil(this.startNanos + extra);
        }
      }
      super.sendMessage(message);
    }

    /**
     * The kind of call a request is, as its cost is kept: its statement, its table, or its method.
     */
    private long costKey(Object request) {
      if (request instanceof ExecuteSqlRequest sql) {
        return (long) sql.getSql().hashCode() << 2;
      }
      if (request instanceof ReadRequest read) {
        return ((long) (read.getTable().hashCode() * 31 + read.getIndex().hashCode()) << 2) | 1;
      }
      return ((long) this.methodName.hashCode() << 2) | 2;
    }

    @Override
    public void start(Listener<RespT> listener, Metadata headers) {
      if (this.counted == 0) {
        this.startNanos = System.nanoTime();
        this.stats.connection().countCall(this.startNanos);
        this.counted = 1;
      } else if (this.countedOn != this.stats) {
        ChannelStats reserved = this.countedOn;
        this.stats.connection().countCall(this.startNanos);
        this.countedOn = this.stats;
        reserved.connection().uncountCall();
      }
      super.start(new CountedListener(listener), headers);
    }

    @Override
    public void cancel(String message, Throwable cause) {
      if (this.lastSeen && this.counted == 1) {
        // Its rows had all arrived: the cancel is of a finished stream.
        this.experiment.cancelOfFinishedStream();
      }
      // A call cancelled before it starts never sees onClose.
      uncount();
      StreamLink stream = this.stream;
      if (this.closed && stream != null && stream.dropCancelOfClosedCall()) {
        // Decided while the call was open; its trailers came while the cancel was on its way.
        return;
      }
      super.cancel(message, cause);
    }

    private void uncount() {
      if (COUNTED.compareAndSet(this, 1, 0)) {
        this.countedOn.connection().callClosed();
      }
    }

    /** gRPC calls a listener's methods one at a time, so its own state needs no fence. */
    private final class CountedListener extends SimpleForwardingClientCallListener<RespT> {

      private boolean answered;

      /** Whether the server's headers came, which carry its {@code server-timing}. */
      private boolean headers;

      CountedListener(Listener<RespT> delegate) {
        super(delegate);
      }

      @Override
      public void onHeaders(Metadata headers) {
        CallObserver.Attempt attempt = CountedCall.this.attempt;
        if (attempt != null) {
          this.headers = true;
          serverTiming(attempt, headers);
        }
        super.onHeaders(headers);
      }

      @Override
      public void onMessage(RespT message) {
        if (!this.answered) {
          this.answered = true;
          StatementCosts costs = CountedCall.this.costs;
          if (costs != null) {
            long now = System.nanoTime();
            long latency =
                costs.answered(CountedCall.this.costKind, now - CountedCall.this.startNanos);
            CountedCall.this.stats.connection().latency().answered(now - latency, now);
          }
        }
        CallKind kind = CountedCall.this.kind;
        if (kind != null
            && message instanceof PartialResultSet rows
            && rows.getLast()
            && !CountedCall.this.lastSeen) {
          // Marked before the consumer sees it: it may close the stream at once.
          CountedCall.this.lastSeen = true;
          CountedCall.this.experiment.record(
              kind, CountedCall.this.startNanos, System.nanoTime(), 0);
        }
        super.onMessage(message);
      }

      @Override
      public void onClose(Status status, Metadata trailers) {
        // Before the listeners above: gax tells the stream's consumer of the end a hop later, and
        // a close of the stream in between must not cancel a call that has ended. Before the call
        // leaves the in-flight count, too: a draining stream is always one of the calls in flight,
        // which is what bounds the draining streams of a connection.
        StreamLink stream = CountedCall.this.stream;
        if (stream != null) {
          CountedCall.this.closed = true;
        }
        if (stream != null && status.isOk()) {
          stream.transportClosedOk();
        }
        uncount();
        if (CountedCall.this.experiment != null) {
          experimentClosed(status);
        }
        CallObserver.Attempt attempt = CountedCall.this.attempt;
        if (attempt != null) {
          if (!this.headers) {
            // A response of trailers only carries its headers there.
            serverTiming(attempt, trailers);
          }
          attempt.stop(status.isOk() ? CallObserver.NO_ERROR : status.getCode().name());
        }
        StatementCosts costs = CountedCall.this.costs;
        if (costs != null && (!this.answered || !status.isOk())) {
          // Timed from when the call's kind would be due on the pool's cheapest connection.
          CountedCall.this
              .stats
              .connection()
              .latency()
              .closed(
                  close(status.getCode()),
                  CountedCall.this.startNanos + costs.extraNanos(CountedCall.this.costKind),
                  System.nanoTime(),
                  this.answered);
        }
        super.onClose(status, trailers);
      }

      private void serverTiming(CallObserver.Attempt attempt, Metadata metadata) {
        String timing = metadata.get(SERVER_TIMING);
        attempt.serverTiming(
            ServerTiming.durationNanos(timing, ServerTiming.GFE),
            ServerTiming.durationNanos(timing, ServerTiming.AFE));
      }

      private void experimentClosed(Status status) {
        ExperimentSlot experiment = CountedCall.this.experiment;
        CallKind kind = CountedCall.this.kind;
        if (kind != null && !CountedCall.this.lastSeen) {
          experiment.record(
              kind, CountedCall.this.startNanos, System.nanoTime(), status.getCode().value());
        }
        if (!status.isOk()) {
          String description = status.getDescription();
          if (description != null && description.contains("GOAWAY")) {
            experiment.goAway();
          }
        }
      }
    }
  }
}
