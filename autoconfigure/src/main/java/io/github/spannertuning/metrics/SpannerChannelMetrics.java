package io.github.spannertuning.metrics;

import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.Arm;
import io.github.spannertuning.experiment.ArmTotals;
import io.github.spannertuning.experiment.CallKind;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.pool.ChannelLoad.ChannelState;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.routing.Hedging;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A {@link MeterBinder} for one tuned Spanner client: per-channel load, the pool's size and
 * imbalance, and what the tuning did. Per-channel meters appear as channels carry their first call
 * or join the pool, and go when a dynamic pool closes their channel; all of the client's meters are
 * removed when it is closed.
 */
public class SpannerChannelMetrics implements MeterBinder {

  private static final String PREFIX = "spanner.tuning";

  private final SpannerTuningState state;

  private final Iterable<Tag> tags;

  /**
   * @param state the client's tuning state
   * @param name the client's name, used as the {@code client} tag
   * @param tags further tags for every meter
   */
  public SpannerChannelMetrics(SpannerTuningState state, String name, Iterable<Tag> tags) {
    this.state = state;
    this.tags = Tags.concat(tags, "client", name);
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    List<Meter> meters = new CopyOnWriteArrayList<>();
    ChannelLoad load = this.state.channelLoad();
    meters.add(
        Gauge.builder(PREFIX + ".channel.count", load, (l) -> l.channels().size())
            .tags(this.tags)
            .description("Channels of the client's data pool that have carried calls")
            .baseUnit("channels")
            .register(registry));
    meters.add(
        Gauge.builder(PREFIX + ".pool.size", load, ChannelLoad::poolSize)
            .tags(this.tags)
            .description(
                "Channels of the client's data pool that take new calls now: its size, which"
                    + " grpc-gcp's dynamic pool grows and shrinks with its load")
            .baseUnit("channels")
            .register(registry));
    meters.add(
        Gauge.builder(PREFIX + ".channel.imbalance", load, ChannelLoad::imbalance)
            .tags(this.tags)
            .description(
                "Busiest channel's calls over the mean per pool channel over the last 30 to 60"
                    + " seconds (1.0 = even, the pool size = all on one channel)")
            .baseUnit("ratio")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".warm.up.primed", this.state, SpannerTuningState::primedCount)
            .tags(this.tags)
            .description(
                "Priming calls (SELECT 1) that answered on a channel's new connection before"
                    + " routing sent it reads: one per connection")
            .baseUnit("calls")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".warm.up.reads", this.state, SpannerTuningState::warmUpReadCount)
            .tags(this.tags)
            .description(
                "The warm-up's reads (single-use SELECT 1 through the client, before the"
                    + " application reports ready; spanner.tuning.warm-up.reads) read to their end."
                    + " Not in single.use.routed or an experiment's calls")
            .baseUnit("calls")
            .register(registry));
    meters.add(
        Gauge.builder(PREFIX + ".warm.up.duration", this.state, SpannerTuningState::warmUpSeconds)
            .tags(this.tags)
            .description(
                "From the client's build until every channel was first connected and primed")
            .baseUnit("seconds")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".warm.up.cold.reads", this.state, SpannerTuningState::coldReadCount)
            .tags(this.tags)
            .description(
                "Reads routing sent to a channel that was not warm because no warm one had room:"
                    + " they wait for the connection's set-up")
            .baseUnit("calls")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".warm.up.refreshed", this.state, SpannerTuningState::refreshedCount)
            .tags(this.tags)
            .description(
                "Connections refreshed before the server retired them"
                    + " (spanner.tuning.warm-up.refresh-after), one channel at a time")
            .baseUnit("connections")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".single.use.routed", this.state, SpannerTuningState::singleUseRoutedCount)
            .tags(this.tags)
            .description("Single-use calls routed by the channels' expected latency")
            .baseUnit("calls")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".transactions.routed",
                this.state,
                SpannerTuningState::transactionsRoutedCount)
            .tags(this.tags)
            .description(
                "Transactions whose first call was routed by the channels' expected latency; their"
                    + " later calls follow it")
            .baseUnit("transactions")
            .register(registry));
    meters.addAll(bindHedging(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".stream.end.guard.skipped",
                this.state,
                SpannerTuningState::streamEndGuardSkippedCount)
            .tags(this.tags)
            .description(
                "Closes of finished streams that sent no cancel: the stream had ended, or was"
                    + " closed at its last message and its trailers then arrived in time")
            .baseUnit("cancels")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".stream.end.guard.drained",
                this.state,
                SpannerTuningState::streamEndGuardDrainedCount)
            .tags(this.tags)
            .description(
                "Streams closed at their last message, before their trailers, that completed on"
                    + " their own within the drain timeout")
            .baseUnit("streams")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".stream.end.guard.drain.timeouts",
                this.state,
                SpannerTuningState::streamEndGuardDrainTimeoutCount)
            .tags(this.tags)
            .description(
                "Streams closed at their last message whose trailers did not arrive within the"
                    + " drain timeout, cancelled then")
            .baseUnit("streams")
            .register(registry));
    meters.add(
        FunctionCounter.builder(
                PREFIX + ".stream.end.guard.cancelled.at.limit",
                this.state,
                SpannerTuningState::streamEndGuardCancelledAtLimitCount)
            .tags(this.tags)
            .description(
                "Streams closed at their last message that were cancelled instead of drained: their"
                    + " connection had too few stream slots free")
            .baseUnit("streams")
            .register(registry));
    meters.add(
        Gauge.builder(
                PREFIX + ".experiment.running",
                this.state,
                (state) -> state.isExperimentRunning() ? 1 : 0)
            .tags(this.tags)
            .description("1 while a switchback experiment runs on the client, else 0")
            .register(registry));
    for (CallKind kind : CallKind.values()) {
      for (Arm arm : Arm.values()) {
        meters.addAll(bindExperiment(registry, kind, arm));
      }
    }
    ArmTotals totals = this.state.experimentTotals();
    for (Arm arm : Arm.values()) {
      meters.add(
          FunctionCounter.builder(PREFIX + ".experiment.goaways", totals, (t) -> t.goAways(arm))
              .tags(Tags.concat(this.tags, "arm", arm.id()))
              .description(
                  "GOAWAYs the client saw in the experiments' recorded slices of the arm; added as"
                      + " each slice ends")
              .baseUnit("goaways")
              .register(registry));
    }
    ExperimentLatencyTimers latency = new ExperimentLatencyTimers(registry, this.tags);
    meters.addAll(latency.timers());
    this.state.addExperimentCallListener(latency);
    Map<ChannelStats, List<Meter>> perChannel = new ConcurrentHashMap<>();
    load.onNewChannel(
        (channel) -> {
          List<Meter> bound = bindChannel(registry, channel);
          perChannel.put(channel, bound);
          meters.addAll(bound);
        });
    load.onChannelRemoved(
        (channel) -> {
          List<Meter> bound = perChannel.remove(channel);
          if (bound != null) {
            bound.forEach(registry::remove);
            meters.removeAll(bound);
          }
        });
    this.state.onClose(
        () -> {
          this.state.removeExperimentCallListener(latency);
          meters.forEach(registry::remove);
          meters.clear();
          perChannel.clear();
        });
  }

  /**
   * Hedged reads: the hedges sent, won and denied, and the delay reads wait before a hedge, over
   * every read and for the busiest statement; NaN while too few reads were timed.
   */
  private List<Meter> bindHedging(MeterRegistry registry) {
    Hedging hedging = this.state.hedging();
    String delayDescription =
        "How long a read waits for its first response before it is hedged: the shared estimate"
            + " over every hedgeable read, or, tagged busiest, the delay of the statement read most"
            + " often of late";
    return List.of(
        FunctionCounter.builder(PREFIX + ".hedging.sent", hedging, Hedging::sent)
            .tags(this.tags)
            .description(
                "Hedges sent: second attempts, on another channel, of reads that had not answered"
                    + " within their delay")
            .baseUnit("calls")
            .register(registry),
        FunctionCounter.builder(PREFIX + ".hedging.won", hedging, Hedging::won)
            .tags(this.tags)
            .description("Hedges that answered before the read's first attempt")
            .baseUnit("calls")
            .register(registry),
        FunctionCounter.builder(PREFIX + ".hedging.denied", hedging, Hedging::denied)
            .tags(this.tags)
            .description("Hedges that were due but not sent: the budget of extra calls was spent")
            .baseUnit("calls")
            .register(registry),
        Gauge.builder(PREFIX + ".hedging.delay", hedging, (h) -> seconds(h.delay()))
            .tags(Tags.concat(this.tags, "shape", "all"))
            .description(delayDescription)
            .baseUnit("seconds")
            .register(registry),
        Gauge.builder(PREFIX + ".hedging.delay", hedging, (h) -> seconds(h.busiestDelay()))
            .tags(Tags.concat(this.tags, "shape", "busiest"))
            .description(delayDescription)
            .baseUnit("seconds")
            .register(registry));
  }

  private static double seconds(Optional<Duration> delay) {
    return delay.map((value) -> value.toNanos() / 1e9).orElse(Double.NaN);
  }

  /**
   * The experiment's figures of one call kind in one arm, read from its totals, which change once
   * per recorded slice: nothing is counted per call for them.
   */
  private List<Meter> bindExperiment(MeterRegistry registry, CallKind kind, Arm arm) {
    Iterable<Tag> tags = Tags.concat(this.tags, "kind", kind.id(), "arm", arm.id());
    ArmTotals totals = this.state.experimentTotals();
    return List.of(
        FunctionCounter.builder(PREFIX + ".experiment.calls", totals, (t) -> t.calls(kind, arm))
            .tags(tags)
            .description(
                "Calls of the kind recorded in the experiments' slices of the arm, failed ones"
                    + " included; added as each slice ends")
            .baseUnit("calls")
            .register(registry),
        FunctionCounter.builder(PREFIX + ".experiment.failed", totals, (t) -> t.failed(kind, arm))
            .tags(tags)
            .description("Calls of the kind that failed in the experiments' slices of the arm")
            .baseUnit("calls")
            .register(registry),
        Gauge.builder(PREFIX + ".experiment.p50", totals, (t) -> t.lastP50Seconds(kind, arm))
            .tags(tags)
            .description("Median latency of the kind in the last recorded slice of the arm")
            .baseUnit("seconds")
            .register(registry),
        Gauge.builder(PREFIX + ".experiment.p99", totals, (t) -> t.lastP99Seconds(kind, arm))
            .tags(tags)
            .description("P99 latency of the kind in the last recorded slice of the arm")
            .baseUnit("seconds")
            .register(registry));
  }

  private List<Meter> bindChannel(MeterRegistry registry, ChannelStats channel) {
    Iterable<Tag> channelTags =
        Tags.concat(this.tags, "channel", Integer.toString(channel.index()));
    List<Meter> bound = new ArrayList<>();
    for (ChannelState state : List.of(ChannelState.ACTIVE, ChannelState.DRAINING)) {
      bound.add(
          Gauge.builder(
                  PREFIX + ".channel.state", channel, (stats) -> (stats.state() == state) ? 1 : 0)
              .tags(Tags.concat(channelTags, "state", state.id()))
              .description(
                  "1 while the channel is in this state, else 0: active channels take new calls;"
                      + " a draining one, which grpc-gcp's dynamic pool removed, ends the calls it"
                      + " has before the pool closes it")
              .register(registry));
    }
    bound.addAll(
        List.of(
            Gauge.builder(PREFIX + ".channel.active.streams", channel, ChannelStats::activeStreams)
                .tags(channelTags)
                .description("Calls in flight on the channel")
                .baseUnit("streams")
                .register(registry),
            Gauge.builder(
                    PREFIX + ".channel.draining.streams", channel, ChannelStats::drainingStreams)
                .tags(channelTags)
                .description(
                    "Streams closed at their last message that wait on the channel for their trailers")
                .baseUnit("streams")
                .register(registry),
            FunctionCounter.builder(PREFIX + ".channel.calls", channel, ChannelStats::calls)
                .tags(channelTags)
                .description("Calls started on the channel")
                .baseUnit("calls")
                .register(registry),
            Gauge.builder(
                    PREFIX + ".channel.latency",
                    channel,
                    (stats) -> stats.latencyEstimateNanos() / (double) TimeUnit.SECONDS.toNanos(1))
                .tags(channelTags)
                .description(
                    "Time-decayed average of the channel's time to first response, failed calls"
                        + " counted as a penalty: what single-use reads are routed by")
                .baseUnit("seconds")
                .register(registry)));
    return bound;
  }
}
