package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.api.gax.rpc.ApiCallContext;
import com.google.cloud.spanner.spi.v1.SpannerRpc.ResultStreamConsumer;
import com.google.cloud.spanner.spi.v1.SpannerRpc.StreamingCall;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.pool.PoolRouting;
import io.github.spannertuning.routing.ChannelPicker;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A hedged read's race, one callback order at a time, with recording calls in place of the
 * client's: the order in which the application and the losing attempt learn the race's outcome.
 * {@link HedgedReadsIT} runs the race against a real client and server.
 */
class HedgedStreamTest extends GuardedStreamTests {

  /** What a loser is asked for when it is left to run to its end: every message. */
  private static final String DRAIN = "request " + (1 << 20);

  /**
   * What the application ({@link #consumer}, unprefixed) and both attempts' calls saw, in the order
   * they saw it.
   */
  private final List<String> events = this.consumer.events;

  /** The attempts' calls, the first attempt's first. */
  private final List<ScriptedCall> calls = new ArrayList<>();

  @Override
  FeatureState guard() {
    return FeatureState.on();
  }

  /**
   * The loser's abandonment (here its drain: it has no channel whose resets could pay for a cancel)
   * comes after the winner's answer reached the application: the read does not wait for it.
   */
  @Test
  void theApplicationHasTheFirstAttemptsAnswerBeforeTheHedgeIsAbandoned() {
    hedgedRead();

    this.calls.get(0).consumer.onPartialResultSet(LAST_ROW);

    assertThat(this.events).containsSubsequence("row last", "hedge: " + DRAIN);
  }

  @Test
  void theApplicationHasTheHedgesAnswerBeforeTheFirstAttemptIsAbandoned() {
    HedgedStream read = hedgedRead();

    this.calls.get(1).consumer.onPartialResultSet(LAST_ROW);

    assertThat(this.events).containsSubsequence("row last", "first: " + DRAIN);
    assertThat(read.winner()).isEqualTo(HedgedStream.SECOND);
  }

  @Test
  void aCompletionWithoutMessagesReachesTheApplicationBeforeTheLoserIsAbandoned() {
    hedgedRead();

    this.calls.get(0).consumer.onCompleted();

    assertThat(this.events).containsSubsequence("completed", "hedge: " + DRAIN);
  }

  /**
   * A read whose first attempt was made and whose hedge was sent, asked for one message by the
   * application, on a client with a hedge in its budget.
   */
  private HedgedStream hedgedRead() {
    SpannerTuningState state = state(SpannerTuning.newBuilder().hedging(true).hedgingMaxExtra(1.0));
    PoolRouting routing =
        PoolRouting.over(
            List.of(new ChannelLoad.ChannelStats(0), new ChannelLoad.ChannelStats(1)),
            ChannelPicker.Rule.defaults(100));
    GuardedStream.Starter starter =
        (attempt, options) -> {
          ScriptedCall call =
              new ScriptedCall(attempt, this.calls.isEmpty() ? "first" : "hedge", this.events);
          this.calls.add(call);
          return call;
        };
    HedgedStream read =
        HedgedStream.create(
            this.consumer,
            state,
            routing,
            state.hedging().queryShape("SELECT 1", System.nanoTime()),
            starter,
            Map.of(),
            CallKind.SINGLE_USE,
            System.nanoTime(),
            null);
    read.first().attach(starter.start(read.first(), Map.of()));
    read.request(1);
    // The hedge's delay passed: called here rather than on the timer's thread.
    read.hedgeDue();
    assertThat(this.calls).as("the first attempt and its hedge").hasSize(2);
    this.events.clear();
    return read;
  }

  /** An attempt's call: records what the read asks of it; the test answers through its consumer. */
  private record ScriptedCall(ResultStreamConsumer consumer, String name, List<String> events)
      implements StreamingCall {

    @Override
    public ApiCallContext getCallContext() {
      return null;
    }

    @Override
    public void request(int numMessages) {
      this.events.add(this.name + ": request " + numMessages);
    }

    @Override
    public void cancel(String message) {
      this.events.add(this.name + ": cancel");
    }
  }
}
