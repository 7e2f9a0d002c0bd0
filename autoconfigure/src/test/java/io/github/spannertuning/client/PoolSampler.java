package io.github.spannertuning.client;

import io.github.spannertuning.pool.ChannelLoad.ChannelState;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Samples the pool's size as grpc-gcp has it, for stock and tuned alike, and on a tuned client each
 * channel's state and calls: the calls made on a channel between two samples that both saw it
 * draining are calls sent to a channel the pool no longer gives calls (a sample finds a channel
 * draining at most a sample after the pool removed it).
 */
final class PoolSampler implements AutoCloseable {

  private final RoutingSubject subject;

  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  private final List<Integer> sizes = new ArrayList<>();

  private final Map<ChannelStats, Long> drainingSince = new HashMap<>();

  private long callsWhileDraining;

  PoolSampler(RoutingSubject subject, Duration every) {
    this.subject = subject;
    sample();
    this.timer.scheduleAtFixedRate(
        this::sample, every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
  }

  synchronized int sample() {
    int size = DynamicPoolIT.poolSize(this.subject);
    this.sizes.add(size);
    if (this.subject.state != null) {
      Map<ChannelStats, Long> seen = new HashMap<>();
      for (ChannelStats channel : this.subject.state.channelLoad().channels()) {
        if (channel.state() == ChannelState.DRAINING) {
          Long before = this.drainingSince.get(channel);
          if (before != null) {
            this.callsWhileDraining += channel.calls() - before;
          }
          seen.put(channel, channel.calls());
        }
      }
      this.drainingSince.clear();
      this.drainingSince.putAll(seen);
    }
    return size;
  }

  synchronized List<Integer> sizes() {
    return new ArrayList<>(this.sizes);
  }

  synchronized long callsWhileDraining() {
    return this.callsWhileDraining;
  }

  @Override
  public void close() {
    this.timer.shutdownNow();
  }
}
