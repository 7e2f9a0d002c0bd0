package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.pool.StreamLink;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The guard's decisions, one callback order at a time, with a recording consumer and call in place
 * of the client's: which close cancels, which drains, what reaches the consumer after the close.
 * {@link StreamEndGuardTest} runs the same guard against a real client and server.
 */
class GuardedStreamTest extends GuardedStreamTests {

  @Override
  FeatureState guard() {
    return FeatureState.on();
  }

  @Test
  void closeAtLastSendsNoCancelAndTheTrailersEndTheDrain() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream stream = start(state);
    stream.onPartialResultSet(LAST_ROW);
    stream.cancel("closed");
    assertThat(this.call.cancels).isEmpty();
    assertThat(state.streamEndGuardSkippedCount()).isZero();

    stream.onCompleted();
    assertThat(this.call.cancels).isEmpty();
    assertThat(this.consumer.events).containsExactly("row last");
    assertThat(state.streamEndGuardDrainedCount()).isEqualTo(1);
    assertThat(state.streamEndGuardSkippedCount()).isEqualTo(1);
    assertThat(state.streamEndGuardDrainTimeoutCount()).isZero();
  }

  @Test
  void anOkCloseOfTheCallEndsTheDrainBeforeGaxTellsTheConsumer() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream stream = start(state);
    stream.onPartialResultSet(LAST_ROW);
    stream.cancel("closed");
    stream.transportClosedOk();
    assertThat(state.streamEndGuardDrainedCount()).isEqualTo(1);
    stream.onCompleted();
    assertThat(this.consumer.events).containsExactly("row last");
    assertThat(state.streamEndGuardDrainedCount()).isEqualTo(1);
    assertThat(this.call.cancels).isEmpty();
  }

  @Test
  void trailersThatDoNotComeWithinTheDrainTimeoutAreCancelledOnTheTimerThread() throws Exception {
    SpannerTuningState state = state(Duration.ofMillis(100));
    GuardedStream stream = start(state);
    stream.onPartialResultSet(LAST_ROW);
    long closedAt = System.nanoTime();
    stream.cancel("closed");
    assertThat(this.call.cancelled.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(System.nanoTime() - closedAt)
        .isGreaterThanOrEqualTo(Duration.ofMillis(100).toNanos());
    assertThat(this.call.cancels).hasSize(1);
    assertThat(this.call.cancelThreads).allMatch((name) -> name.equals("spanner-tuning-timer"));
    assertThat(state.streamEndGuardDrainTimeoutCount()).isEqualTo(1);
    assertThat(state.streamEndGuardDrainedCount()).isZero();
    assertThat(state.streamEndGuardSkippedCount()).isZero();

    // gax then reports the cancel; the closed consumer never hears of it.
    stream.onError(cancelled());
    stream.onCompleted();
    assertThat(this.consumer.events).containsExactly("row last");
  }

  @Test
  void aCloseAtLastCancelsAtOnceWhenItsConnectionHasTooFewSlotsFree() {
    // 10 streams per connection, a tenth kept free: a close at last drains while at most 9 calls,
    // its own included, are in flight on its channel.
    SpannerTuningState state = state(Duration.ofSeconds(5), 10);
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    List<GuardedStream> draining = new java.util.ArrayList<>();
    for (int i = 0; i < 9; i++) {
      draining.add(closedAtLast(state, channel, "closed " + i));
    }
    assertThat(channel.activeStreams()).isEqualTo(9);
    assertThat(channel.drainingStreams()).isEqualTo(9);
    assertThat(this.call.cancels).isEmpty();

    GuardedStream tenth = closedAtLast(state, channel, "closed 9");
    assertThat(this.call.cancels).containsExactly("closed 9");
    assertThat(state.streamEndGuardCancelledAtLimitCount()).isEqualTo(1);
    assertThat(channel.drainingStreams()).isEqualTo(9);
    // The cancelled stream's own end is not a drain.
    channel.connection().callClosed();
    tenth.onError(cancelled());
    assertThat(state.streamEndGuardDrainedCount()).isZero();

    // Trailers end a drain and free its slot: the next close at last drains again.
    draining.get(0).transportClosedOk();
    channel.connection().callClosed();
    assertThat(channel.drainingStreams()).isEqualTo(8);
    GuardedStream next = closedAtLast(state, channel, "closed 10");
    assertThat(this.call.cancels).containsExactly("closed 9");
    assertThat(channel.drainingStreams()).isEqualTo(9);

    // A stream that has ended takes no slot: its cancel is skipped on a full connection too.
    channel.connection().countCall(System.nanoTime());
    GuardedStream ended = startOn(state, channel);
    ended.transportClosedOk();
    ended.cancel("closed after the end");
    assertThat(this.call.cancels).containsExactly("closed 9");
    assertThat(state.streamEndGuardCancelledAtLimitCount()).isEqualTo(1);

    for (GuardedStream stream : draining.subList(1, draining.size())) {
      stream.onCompleted();
    }
    next.onCompleted();
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardDrainedCount()).isEqualTo(10);
  }

  /**
   * A hedged read's loser still running is cancelled while its connection's budget of resets lasts
   * (two here); past it, the loser is read to its end with what it sends dropped, holding its slot
   * as a draining stream, and its end is not counted as the guard's.
   */
  @Test
  void aLoserStillRunningIsCancelledOnlyWithinItsConnectionsResetBudget() {
    SpannerTuningState state =
        state(
            SpannerTuning.newBuilder()
                .streamEndGuardReleaseBudget(2, Duration.ofSeconds(30))
                .streamEndGuardDrainTimeout(Duration.ofSeconds(5)));
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    countedOn(state, channel).abandon();
    countedOn(state, channel).abandon();
    assertThat(this.call.cancels).hasSize(2);
    assertThat(state.hedging().losersCancelled()).isEqualTo(2);

    GuardedStream third = countedOn(state, channel);
    third.abandon();
    assertThat(this.call.cancels).as("past the budget").hasSize(2);
    assertThat(this.call.requests).as("the rest of its messages asked for").hasSize(1);
    assertThat(channel.drainingStreams()).isEqualTo(1);
    third.onPartialResultSet(ROW);
    third.onPartialResultSet(LAST_ROW);
    third.transportClosedOk();
    third.onCompleted();
    assertThat(this.consumer.events).as("what the loser sent after it lost").isEmpty();
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardDrainedCount()).as("a loser's end is not the guard's").isZero();
    assertThat(state.hedging().losersCancelled()).isEqualTo(2);
  }

  @Test
  void aLoserPastTheBudgetWhoseEndNeverComesIsCancelledAtTheDrainTimeout() throws Exception {
    SpannerTuningState state =
        state(
            SpannerTuning.newBuilder()
                .streamEndGuardReleaseBudget(0, Duration.ofSeconds(30))
                .streamEndGuardDrainTimeout(Duration.ofMillis(100)));
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    countedOn(state, channel).abandon();
    assertThat(this.call.cancelled.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(this.call.cancelThreads).containsExactly("spanner-tuning-timer");
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardDrainTimeoutCount()).isZero();
  }

  /** A loser that finished at its last message is left to drain, as a close there is. */
  @Test
  void aLoserThatFinishedDrainsAsTheGuardsCloseAtLastDoes() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    GuardedStream loser = countedOn(state, channel);
    loser.onPartialResultSet(LAST_ROW);
    loser.abandon();
    assertThat(this.call.cancels).isEmpty();
    assertThat(channel.drainingStreams()).isEqualTo(1);
    loser.onCompleted();
    assertThat(state.streamEndGuardDrainedCount()).isEqualTo(1);
    assertThat(state.hedging().losersCancelled()).isZero();
  }

  @Test
  void aLoserThatEndedOrWhoseChannelIsUnknownIsNeverCancelled() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream ended = countedOn(state, new ChannelLoad.ChannelStats(0));
    ended.transportClosedOk();
    ended.abandon();
    GuardedStream unknown = start(state);
    unknown.abandon();
    unknown.abandon();
    assertThat(this.call.cancels).isEmpty();
    assertThat(this.call.requests).as("the unknown one is read to its end").hasSize(1);
    assertThat(state.hedging().losersCancelled()).isZero();
  }

  /** A stream counted in flight on the channel, closed by the application at its last message. */
  private GuardedStream closedAtLast(
      SpannerTuningState state, ChannelLoad.ChannelStats channel, String message) {
    channel.connection().countCall(System.nanoTime());
    GuardedStream stream = startOn(state, channel);
    stream.onPartialResultSet(LAST_ROW);
    stream.cancel(message);
    return stream;
  }

  @Test
  void aDrainThatTimesOutGivesItsPlaceOnTheChannelBack() throws Exception {
    SpannerTuningState state = state(Duration.ofMillis(100), 4);
    ChannelLoad.ChannelStats channel = new ChannelLoad.ChannelStats(0);
    GuardedStream stream = startOn(state, channel);
    stream.onPartialResultSet(LAST_ROW);
    stream.cancel("closed");
    // Not asserted here that it is draining: the 100 ms timeout may already have fired when this
    // thread runs again. The drain timeout counted below fires only for a stream that drained.
    assertThat(this.call.cancelled.await(10, TimeUnit.SECONDS)).isTrue();
    assertThat(channel.drainingStreams()).isZero();
    assertThat(state.streamEndGuardDrainTimeoutCount()).isEqualTo(1);
    assertThat(state.streamEndGuardCancelledAtLimitCount()).isZero();
  }

  @Test
  void aStreamClosedBeforeItsLastMessageIsCancelledAtOnce() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream stream = start(state);
    stream.onPartialResultSet(ROW);
    stream.cancel("closed");
    assertThat(this.call.cancels).containsExactly("closed");
    // What the call delivers after the close is not handed to the closed consumer.
    stream.onPartialResultSet(LAST_ROW);
    stream.onError(cancelled());
    assertThat(this.consumer.events).containsExactly("row");
    assertThat(state.streamEndGuardSkippedCount()).isZero();
  }

  @Test
  void aStreamWhoseCallEndedIsNotCancelledAndOnlyTheFirstCloseCounts() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream stream = start(state);
    stream.onPartialResultSet(ROW);
    stream.transportClosedOk();
    stream.cancel("closed");
    stream.cancel("closed again");
    stream.onCompleted();
    assertThat(this.call.cancels).isEmpty();
    assertThat(state.streamEndGuardSkippedCount()).isEqualTo(1);
    assertThat(state.streamEndGuardDrainedCount()).isZero();
    assertThat(this.consumer.events).containsExactly("row");
  }

  @Test
  void callbacksBeforeTheCloseReachTheConsumer() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream stream = start(state);
    stream.onPartialResultSet(ROW);
    stream.onPartialResultSet(LAST_ROW);
    stream.onCompleted();
    stream.cancel("closed");
    assertThat(this.consumer.events).containsExactly("row", "row last", "completed");
    assertThat(this.call.cancels).isEmpty();

    GuardedStream failed = start(state);
    failed.onError(cancelled());
    failed.cancel("closed");
    assertThat(this.consumer.events).endsWith("error CANCELLED");
    assertThat(this.call.cancels).isEmpty();
  }

  @Test
  void withTheGuardSwitchedOffAStreamStartedWithItOnCancelsAsTheClientWould() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    GuardedStream atLast = start(state);
    GuardedStream ended = start(state);
    atLast.onPartialResultSet(LAST_ROW);
    ended.transportClosedOk();
    state.setEnabled(Feature.STREAM_END_GUARD, false);
    atLast.cancel("closed at last");
    ended.cancel("closed after the end");
    assertThat(this.call.cancels).containsExactly("closed at last", "closed after the end");
    assertThat(state.streamEndGuardSkippedCount()).isZero();
  }

  @Test
  void onlyTheFirstCallCreatedWhileTheStreamStartsIsLinked() {
    GuardedStream stream = new GuardedStream(this.consumer, state(Duration.ofSeconds(5)));
    assertThat(stream.linkTransport()).isTrue();
    assertThat(stream.linkTransport()).as("a second call, such as a retry attempt").isFalse();

    GuardedStream started = start(state(Duration.ofSeconds(5)));
    assertThat(started.linkTransport()).as("a call created after the stream started").isFalse();
  }

  @Test
  void theChannelLoadInterceptorReportsOnlyAnOkCloseOfTheStreamsFirstCall() {
    SpannerTuningState state = state(Duration.ofSeconds(5));
    ChannelLoad load = new ChannelLoad(null);
    FakeChannel channel = FakeChannel.holding();

    // The first attempt closes OK: the stream has finished, before gax tells the consumer.
    GuardedStream okStream = new GuardedStream(this.consumer, state);
    startCall(load, channel, okStream);
    okStream.attach(this.call);
    channel.close(0, Status.OK);
    okStream.cancel("closed");
    assertThat(this.call.cancels).isEmpty();
    assertThat(state.streamEndGuardSkippedCount()).isEqualTo(1);

    // The first attempt fails and a retry attempt is created in the same context: neither the
    // failure nor the retry's close marks the stream, so its close still cancels.
    GuardedStream retried = new GuardedStream(this.consumer, state);
    startCall(load, channel, retried);
    channel.close(1, Status.UNAVAILABLE);
    startCall(load, channel, retried);
    retried.attach(this.call);
    channel.close(2, Status.OK);
    retried.cancel("closed");
    assertThat(this.call.cancels).containsExactly("closed");

    // A call created outside the stream's start is not linked to it.
    GuardedStream started = start(state);
    load.interceptor()
        .interceptCall(SpannerGrpc.getExecuteStreamingSqlMethod(), CallOptions.DEFAULT, channel)
        .start(new ClientCall.Listener<>() {}, new Metadata());
    channel.close(3, Status.OK);
    started.cancel("closed too");
    assertThat(this.call.cancels).containsExactly("closed", "closed too");
  }

  @Test
  void aCloseDecidedWhileTheCallWasOpenIsNotCountedAsACancelOfAnEndedCall() {
    // StreamEndGuardIT's check without last from several threads. This thread's stream started
    // after the other thread's; its close begins while its call is open, so the guard cancels.
    // On gax's way down to gRPC (several throwables long, a thread a busy CPU may pause there) the
    // trailers arrive and the other thread begins a close of its own. The cancel was of an open
    // stream; it now meets a closed call, and stops at the counting interceptor.
    SpannerTuningState state = state(Duration.ofSeconds(5));
    Wire wire = Wire.open();
    CancelCounter counter = wire.counter();
    ExecutorService otherThread = Executors.newSingleThreadExecutor();
    try {
      join(otherThread.submit(() -> wire.start(new GuardedStream(this.consumer, state))));
      GuardedStream stream = new GuardedStream(this.consumer, state);
      stream.attach(
          cancelling(
              wire.start(stream),
              () -> {
                wire.transport().close(1, Status.OK);
                join(otherThread.submit(counter::closing));
              }));
      stream.onPartialResultSet(ROW);
      counter.closing();
      stream.cancel("closed while open");
      assertThat(counter.cancels()).as("cancels reaching the application's interceptor").isZero();
      assertThat(state.streamEndGuardSkippedCount()).as("closes whose cancel was skipped").isOne();
      assertThat(counter.cancelsOfEnded()).as("cancels of calls closed before the close").isZero();
      assertThat(counter.endedBeforeClose()).as("calls closed before their close began").isZero();

      // What the check does count: a call closed before its own close began, cancelled anyway, as
      // the client does with the guard off.
      state.setEnabled(Feature.STREAM_END_GUARD, false);
      GuardedStream ended = new GuardedStream(this.consumer, state);
      ended.attach(cancelling(wire.start(ended), () -> {}));
      wire.transport().close(2, Status.OK);
      counter.closing();
      ended.cancel("closed after the end");
      assertThat(counter.endedBeforeClose()).isEqualTo(1);
      assertThat(counter.cancelsOfEnded()).isEqualTo(1);
    } finally {
      otherThread.shutdownNow();
    }
  }

  @Test
  void aLosersCancelThatMeetsTheEndOfItsCallOnTheWayStopsAtTheCountingInterceptor() {
    // A hedged read's race on a busy CPU (HedgedReadsIT's setting): the hedge answered, and the
    // first attempt, still open, is abandoned with a cancel. On gax's way down to gRPC the first
    // attempt's trailers arrive, and the application, which has the hedge's row, begins its close.
    SpannerTuningState state = state(Duration.ofSeconds(5));
    Wire wire = Wire.open();
    CancelCounter counter = wire.counter();
    GuardedStream first = new GuardedStream(this.consumer, state, true);
    first.attach(
        cancelling(
            wire.start(first),
            () -> {
              wire.transport().close(0, Status.OK);
              counter.closing();
            }));

    first.abandon();

    assertThat(state.hedging().losersCancelled()).as("losers cancelled").isEqualTo(1);
    assertThat(counter.endedBeforeClose()).as("calls closed before their close began").isOne();
    assertThat(counter.cancelsOfEnded()).as("cancels of calls closed before the close").isZero();
    assertThat(counter.cancels()).as("cancels reaching the application's interceptor").isZero();
  }

  /**
   * A transport whose calls stay open until the test closes them, below an application's cancel
   * counter, below the counting interceptor.
   */
  private record Wire(ChannelLoad load, FakeChannel transport, CancelCounter counter) {

    static Wire open() {
      return new Wire(new ChannelLoad(null), FakeChannel.holding(), new CancelCounter());
    }

    /** Starts the stream's first call, as gax does while the stream starts. */
    ClientCall<?, ?> start(GuardedStream stream) {
      return startCall(
          this.load, ClientInterceptors.intercept(this.transport, this.counter), stream);
    }
  }

  private static void join(Future<?> future) {
    try {
      future.get(10, TimeUnit.SECONDS);
    } catch (Exception ex) {
      throw new IllegalStateException(ex);
    }
  }

  /** Starts the stream's first call on {@code channel}, as gax does while the stream starts. */
  private static ClientCall<?, ?> startCall(
      ChannelLoad load, Channel channel, GuardedStream stream) {
    Context context = Context.current().withValue(StreamLink.STARTING, stream);
    Context previous = context.attach();
    try {
      ClientCall<?, PartialResultSet> call =
          load.interceptor()
              .interceptCall(
                  SpannerGrpc.getExecuteStreamingSqlMethod(), CallOptions.DEFAULT, channel);
      call.start(new ClientCall.Listener<>() {}, new Metadata());
      return call;
    } finally {
      context.detach(previous);
    }
  }

  /** Stands in for gax: a cancel goes down to the call after {@code onTheWay} has run. */
  private static StreamingCall cancelling(ClientCall<?, ?> call, Runnable onTheWay) {
    return new StreamingCall() {
      @Override
      public ApiCallContext getCallContext() {
        return null;
      }

      @Override
      public void request(int numMessages) {}

      @Override
      public void cancel(String message) {
        onTheWay.run();
        call.cancel(message, null);
      }
    };
  }
}
