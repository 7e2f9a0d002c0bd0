package io.github.spannertuning.benchmarks;

import com.google.cloud.grpc.GcpManagedChannelOptions.GcpChannelPoolOptions;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.GapicSpannerRpc;
import io.github.spannertuning.pool.PoolRouting;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The clients' channel pool in a run ({@code --pool}): grpc-gcp's fixed pool of {@code --channels}
 * channels, as the benchmark ran before the flag, or grpc-gcp's dynamic pool, which adds a channel
 * when its channels are busy and removes channels when they are idle.
 *
 * <p>The dynamic pool has Spanner's defaults ({@link
 * SpannerOptions#createDefaultDynamicChannelPoolOptions()}: 4 channels to start, 2 to 10, one added
 * past 25 calls in flight per channel, removed below 15). The grow-shrink workload has its timing
 * shortened so that a window of seconds sees it grow and shrink ({@link #withProductionTiming()}
 * gives the other workloads Spanner's own): the scale-down interval ({@code --dcp-scale-down-s}, 3
 * minutes in production) and, on grpc-gcp 1.20, the cooldown between two scale-ups ({@code
 * --dcp-scale-up-cooldown-s}, 10 s) and the grace before a removed idle channel is closed ({@code
 * --dcp-drain-grace-s}, a minute). grpc-gcp 1.12 has neither of the last two.
 *
 * @param dynamic whether the pool is grpc-gcp's dynamic pool
 * @param channels the fixed pool's size; on the dynamic pool, its largest
 * @param scaleDown the dynamic pool's scale-down interval; {@code null} on a fixed pool
 * @param scaleUpCooldown the dynamic pool's cooldown between scale-ups, where grpc-gcp has one
 * @param drainIdleGrace how long the dynamic pool keeps a removed idle channel open, where grpc-gcp
 *     has that setting
 */
record ClientPool(
    boolean dynamic,
    int channels,
    Duration scaleDown,
    Duration scaleUpCooldown,
    Duration drainIdleGrace) {

  static final String STATIC = "static";

  static final String DYNAMIC = "dynamic";

  /** Spanner's scale-down interval, which a window of seconds would never see. */
  static final Duration PRODUCTION_SCALE_DOWN =
      SpannerOptions.createDefaultDynamicChannelPoolOptions().getScaleDownInterval();

  /** The flags that set the dynamic pool's timing; an error on a fixed pool. */
  private static final List<String> DYNAMIC_FLAGS =
      List.of("dcp-scale-down-s", "dcp-scale-up-cooldown-s", "dcp-drain-grace-s");

  /** A fixed pool of this many channels. */
  static ClientPool fixed(int channels) {
    return new ClientPool(false, channels, null, null, null);
  }

  /** The pool that {@code --pool} and its flags ask for. */
  static ClientPool from(Flags flags) {
    String kind = flags.string("pool", STATIC);
    if (kind.equals(STATIC)) {
      for (String name : DYNAMIC_FLAGS) {
        if (flags.optional(name) != null) {
          throw new IllegalArgumentException(
              "--" + name + " sets the dynamic pool's timing; it needs --pool dynamic");
        }
      }
      return fixed(flags.integer("channels", 8, 1, 256));
    }
    if (!kind.equals(DYNAMIC)) {
      throw new IllegalArgumentException(
          "--pool must be " + STATIC + " or " + DYNAMIC + ", was '" + kind + "'");
    }
    if (flags.optional("channels") != null) {
      throw new IllegalArgumentException(
          "--channels sets a fixed pool's size; with --pool dynamic the pool sizes itself"
              + " (Spanner's defaults: 4 channels to start, 2 to 10)");
    }
    if (!PoolRouting.hasChannelReferences()) {
      throw new IllegalArgumentException(
          "--pool dynamic: this client line names a call's channel by affinity keys, which the"
              + " dynamic pool binds and unbinds, so the starter leaves its pool unrouted; run the"
              + " dynamic pool on google-cloud-spanner 6.119 or later (LINES=\"6.119 6.127\")");
    }
    return new ClientPool(
        true,
        SpannerOptions.createDefaultDynamicChannelPoolOptions().getMaxSize(),
        seconds(flags.positive("dcp-scale-down-s", 0.5)),
        seconds(flags.positive("dcp-scale-up-cooldown-s", 0.5)),
        seconds(flags.positive("dcp-drain-grace-s", 1)));
  }

  private static Duration seconds(double seconds) {
    return Duration.ofNanos((long) (seconds * 1e9));
  }

  /**
   * This dynamic pool with Spanner's own timing (a scale-down every 3 minutes; on grpc-gcp 1.20 a
   * scale-up cooldown of 10 s and a minute's grace): a window of seconds sees the pool as a
   * production client has it between two scale-downs. A fixed pool is returned as it is.
   */
  ClientPool withProductionTiming() {
    return this.dynamic
        ? new ClientPool(true, this.channels, PRODUCTION_SCALE_DOWN, null, null)
        : this;
  }

  /** This pool with another size where it is fixed; the dynamic pool sizes itself. */
  ClientPool withChannels(int channels) {
    return this.dynamic ? this : new ClientPool(false, channels, null, null, null);
  }

  /** Sets the pool on a client's options. */
  SpannerOptions.Builder apply(SpannerOptions.Builder builder) {
    return this.dynamic
        ? builder.enableDynamicChannelPool().setGcpChannelPoolOptions(options())
        : builder.setNumChannels(this.channels);
  }

  /** The dynamic pool's options: Spanner's defaults, on the run's time scale. */
  GcpChannelPoolOptions options() {
    GcpChannelPoolOptions defaults = SpannerOptions.createDefaultDynamicChannelPoolOptions();
    GcpChannelPoolOptions.Builder builder =
        GcpChannelPoolOptions.newBuilder(defaults)
            .setDynamicScaling(
                defaults.getMinRpcPerChannel(), defaults.getMaxRpcPerChannel(), this.scaleDown);
    // grpc-gcp 1.20's settings, absent from 1.12.
    invokeIfPresent(builder, "setScaleUpCooldown", this.scaleUpCooldown);
    invokeIfPresent(builder, "setDrainIdleGrace", this.drainIdleGrace);
    return builder.build();
  }

  /** What the clients' pool was, for the report: the options as the built pool has them. */
  Map<String, Object> describe() {
    Map<String, Object> pool = new LinkedHashMap<>();
    pool.put("kind", this.dynamic ? DYNAMIC : STATIC);
    if (!this.dynamic) {
      pool.put("channels", this.channels);
      return pool;
    }
    GcpChannelPoolOptions options = options();
    pool.put("initSize", options.getInitSize());
    pool.put("minSize", options.getMinSize());
    pool.put("maxSize", options.getMaxSize());
    pool.put("maxRpcPerChannel", options.getMaxRpcPerChannel());
    pool.put("minRpcPerChannel", options.getMinRpcPerChannel());
    pool.put("scaleDownIntervalS", options.getScaleDownInterval().toMillis() / 1000.0);
    pool.put("productionScaleDownIntervalS", PRODUCTION_SCALE_DOWN.toMillis() / 1000.0);
    GcpChannelPoolOptions production = SpannerOptions.createDefaultDynamicChannelPoolOptions();
    for (String getter :
        List.of(
            "getScaleUpCooldown",
            "getDrainIdleGrace",
            "getScaleDownConsecutiveLowLoadChecks",
            "getMaxScaleUpPercent",
            "getMaxScaleDownChannels")) {
      Object value = invokeIfPresent(options, getter);
      if (value != null) {
        String name = Character.toLowerCase(getter.charAt(3)) + getter.substring(4);
        if (value instanceof Duration duration) {
          pool.put(name + "S", duration.toMillis() / 1000.0);
          pool.put(
              "production" + getter.substring(3) + "S",
              ((Duration) invokeIfPresent(production, getter)).toMillis() / 1000.0);
        } else {
          pool.put(name, value);
        }
      }
    }
    return pool;
  }

  private static Object invokeIfPresent(Object target, String method, Object... args) {
    if (args.length == 1 && args[0] == null) {
      return null;
    }
    try {
      Class<?>[] types = new Class<?>[args.length];
      for (int i = 0; i < args.length; i++) {
        types[i] = args[i].getClass();
      }
      return target.getClass().getMethod(method, types).invoke(target, args);
    } catch (NoSuchMethodException ex) {
      return null;
    } catch (ReflectiveOperationException ex) {
      throw new IllegalStateException("grpc-gcp's " + method + " failed", ex);
    }
  }

  /** The channels the client's grpc-gcp pool has now, as grpc-gcp counts them. */
  static int size(Spanner spanner) {
    return PoolRouting.pool((GapicSpannerRpc) spanner.getOptions().getRpc()).getNumberOfChannels();
  }

  /** Samples a client's pool size at a fixed period from when it starts until it is closed. */
  static final class Sampler implements AutoCloseable {

    private final List<Integer> sizes = Collections.synchronizedList(new ArrayList<>());

    private final ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            (runnable) -> {
              Thread thread = new Thread(runnable, "bench-pool-sampler");
              thread.setDaemon(true);
              return thread;
            });

    Sampler(BenchClient client, double periodSeconds) {
      long periodNanos = (long) (periodSeconds * 1e9);
      this.timer.scheduleAtFixedRate(
          () -> this.sizes.add(client.poolSize()), 0, periodNanos, TimeUnit.NANOSECONDS);
    }

    /** Stops sampling, with one last sample; the sizes, one a period from the first. */
    List<Integer> stop(BenchClient client) throws InterruptedException {
      this.timer.shutdownNow();
      this.timer.awaitTermination(5, TimeUnit.SECONDS);
      this.sizes.add(client.poolSize());
      synchronized (this.sizes) {
        return List.copyOf(this.sizes);
      }
    }

    @Override
    public void close() {
      this.timer.shutdownNow();
    }
  }
}
