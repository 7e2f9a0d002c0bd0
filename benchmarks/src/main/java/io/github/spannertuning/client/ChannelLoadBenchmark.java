package io.github.spannertuning.client;

import com.google.spanner.v1.SpannerGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
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
 * What the load-counting interceptor adds to every gRPC call, tuned or not (ns/op, and B/op with
 * {@code -prof gc}): a call created, started and closed through {@link ChannelLoad}'s real
 * interceptor ({@code channelCounted}) against the same call without it ({@code channelStock}).
 * The channel below is a stand-in that only keeps the listener, so the benchmark can close the
 * call.
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

  private final RecordingChannel channel = new RecordingChannel();

  private Channel countedChannel;

  @Setup(Level.Trial)
  public void setUp() {
    SpannerTuningState state =
        SpannerTuning.defaults().applyTo(com.google.cloud.spanner.SpannerOptions.newBuilder());
    ClientInterceptor counting = state.channelLoad().interceptor();
    RecordingChannel below = this.channel;
    this.countedChannel =
        new Channel() {
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

  @Benchmark
  public Object channelStock() {
    return callOnce(this.channel);
  }

  @Benchmark
  public Object channelCounted() {
    return callOnce(this.countedChannel);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private Object callOnce(Channel through) {
    ClientCall call = through.newCall(METHOD, CallOptions.DEFAULT);
    NoopListener listener = new NoopListener();
    call.start(listener, HEADERS);
    this.channel.last.listener.onClose(Status.OK, HEADERS);
    return listener;
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
