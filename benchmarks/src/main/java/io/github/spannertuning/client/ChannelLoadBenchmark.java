package io.github.spannertuning.client;

import com.google.cloud.grpc.GcpManagedChannel;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.pool.ChannelReservation;
import io.github.spannertuning.pool.PoolRouting;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the load-counting interceptor adds to every gRPC call, tuned or not, and what routing adds
 * to a single-use read (ns/op, and B/op with {@code -prof gc}). A call is created, started, handed
 * one response message and closed: through {@link ChannelLoad}'s real counting interceptor, which
 * counts it and times it for the channel's latency estimate ({@code channelCounted}), against the
 * same call without it ({@code channelStock}); and picked by {@link PoolRouting} among 8 counted
 * channels before that ({@code channelRouted}). The channels below are stand-ins that only keep the
 * listener, so the benchmark can answer the call; the pool in front of them sends a call to the
 * channel its context's affinity key names, by a map lookup, as grpc-gcp does.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class ChannelLoadBenchmark {

  private static final Metadata HEADERS = new Metadata();

  private static final MethodDescriptor<?, ?> METHOD = SpannerGrpc.getExecuteStreamingSqlMethod();

  private static final int CHANNELS = 8;

  private static final Object RESPONSE = new Object();

  private final RecordingChannel channel = new RecordingChannel();

  private final RecordingChannel[] pooled = new RecordingChannel[CHANNELS];

  private Channel countedChannel;

  private Channel pool;

  private PoolRouting picker;

  private RecordingChannel picked;

  @Setup(Level.Trial)
  public void setUp() {
    SpannerTuningState state =
        SpannerTuning.defaults().applyTo(com.google.cloud.spanner.SpannerOptions.newBuilder());
    ClientInterceptor counting = state.channelLoad().interceptor();
    this.countedChannel = counted(counting, this.channel);
    Map<String, Integer> byKey = new HashMap<>();
    Channel[] counted = new Channel[CHANNELS];
    for (int i = 0; i < CHANNELS; i++) {
      this.pooled[i] = new RecordingChannel();
      counted[i] = counted(counting, this.pooled[i]);
      byKey.put(String.valueOf(i), i);
      // Registers the channel with the load, in order: channel i is the i-th counted.
      callOnce(counted[i], this.pooled[i]);
    }
    this.picker =
        PoolRouting.over(
            state.channelLoad().channels(),
            io.github.spannertuning.routing.ChannelPicker.Rule.defaults(90));
    this.pool =
        new Channel() {
          @Override
          public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
              MethodDescriptor<ReqT, RespT> method, CallOptions callOptions) {
            int index = byKey.get(GcpManagedChannel.AFFINITY_CTX_KEY.get());
            ChannelLoadBenchmark.this.picked = ChannelLoadBenchmark.this.pooled[index];
            return counted[index].newCall(method, callOptions);
          }

          @Override
          public String authority() {
            return "127.0.0.1:1";
          }
        };
  }

  @Benchmark
  public Object channelStock() {
    return callOnce(this.channel, this.channel);
  }

  @Benchmark
  public Object channelCounted() {
    return callOnce(this.countedChannel, this.channel);
  }

  @Benchmark
  @SuppressWarnings({"unchecked", "rawtypes"})
  public Object channelRouted() {
    ClientCall call;
    try (ChannelReservation reservation = this.picker.reserve(null, null)) {
      call = this.pool.newCall(METHOD, CallOptions.DEFAULT);
    }
    NoopListener listener = new NoopListener();
    call.start(listener, HEADERS);
    answer(this.picked);
    return listener;
  }

  private static Channel counted(ClientInterceptor counting, Channel below) {
    return new Channel() {
      @Override
      public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
          MethodDescriptor<ReqT, RespT> method, CallOptions callOptions) {
        return counting.interceptCall(method, callOptions, below);
      }

      @Override
      public String authority() {
        return below.authority();
      }
    };
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Object callOnce(Channel through, RecordingChannel below) {
    ClientCall call = through.newCall(METHOD, CallOptions.DEFAULT);
    NoopListener listener = new NoopListener();
    call.start(listener, HEADERS);
    answer(below);
    return listener;
  }

  private static void answer(RecordingChannel below) {
    RecordingCall call = below.last;
    below.last = null;
    call.listener.onMessage(RESPONSE);
    call.listener.onClose(Status.OK, HEADERS);
  }

  private static final class NoopListener extends ClientCall.Listener<Object> {}

  private static final class RecordingChannel extends Channel {

    private RecordingCall last;

    @Override
    @SuppressWarnings("unchecked")
    public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
        MethodDescriptor<ReqT, RespT> method, CallOptions callOptions) {
      this.last = new RecordingCall();
      return (ClientCall<ReqT, RespT>) this.last;
    }

    @Override
    public String authority() {
      return "127.0.0.1:1";
    }
  }

  private static final class RecordingCall extends ClientCall<Object, Object> {

    private Listener<Object> listener;

    @Override
    public void start(Listener<Object> listener, Metadata headers) {
      this.listener = listener;
    }

    @Override
    public void request(int numMessages) {}

    @Override
    public void cancel(String message, Throwable cause) {}

    @Override
    public void halfClose() {}

    @Override
    public void sendMessage(Object message) {}
  }
}
