package io.github.spannertuning.client;

import com.google.spanner.v1.ExecuteSqlRequest;
import com.google.spanner.v1.SpannerGrpc;
import com.google.spanner.v1.TransactionOptions;
import com.google.spanner.v1.TransactionSelector;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.GuardRail;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.time.Duration;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What a switchback experiment adds to a call (ns/op, and B/op with {@code -prof gc}): a single-use
 * query made, started, sent its request, answered one message and closed through the real counting
 * interceptor, on a client with no experiment ({@code noExperiment}: one volatile read more than
 * before the experiment existed) and on one whose experiment is recording ({@code
 * experimentRecording}: the method's kind, the request's selector and one histogram record). The
 * experiment's arm switch does nothing, and its plan has no carry-over, so every call is recorded.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class ExperimentBenchmark {

  private static final Metadata HEADERS = new Metadata();

  private static final MethodDescriptor<?, ?> METHOD = SpannerGrpc.getExecuteStreamingSqlMethod();

  private static final ExecuteSqlRequest REQUEST =
      ExecuteSqlRequest.newBuilder()
          .setSql("SELECT 1")
          .setTransaction(
              TransactionSelector.newBuilder()
                  .setSingleUse(
                      TransactionOptions.newBuilder()
                          .setReadOnly(TransactionOptions.ReadOnly.getDefaultInstance())))
          .build();

  private static final Object RESPONSE = new Object();

  private final RecordingChannel below = new RecordingChannel();

  private SpannerTuningState idleState;

  private SpannerTuningState recordingState;

  private Channel idle;

  private Channel recording;

  @Setup(Level.Trial)
  public void setUp() {
    this.idleState =
        SpannerTuning.defaults().applyTo(com.google.cloud.spanner.SpannerOptions.newBuilder());
    this.recordingState =
        SpannerTuning.defaults().applyTo(com.google.cloud.spanner.SpannerOptions.newBuilder());
    this.idle = counted(this.idleState.channelLoad().interceptor(), this.below);
    this.recording = counted(this.recordingState.channelLoad().interceptor(), this.below);
    this.recordingState.startExperiment(
        new ExperimentPlan(
            Duration.ofHours(4), Duration.ofHours(2), Duration.ZERO, GuardRail.DEFAULT),
        (arm) -> {});
    // The window opens on the timer thread as soon as it runs.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!this.recordingState.experiment().progress().recording()
        && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    if (!this.recordingState.experiment().progress().recording()) {
      throw new IllegalStateException("the experiment's window did not open");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    this.recordingState.stopExperiment("benchmark over");
  }

  @Benchmark
  public Object noExperiment() {
    return callOnce(this.idle, this.below);
  }

  @Benchmark
  public Object experimentRecording() {
    return callOnce(this.recording, this.below);
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
    call.sendMessage(REQUEST);
    RecordingCall made = below.last;
    below.last = null;
    made.listener.onMessage(RESPONSE);
    made.listener.onClose(Status.OK, HEADERS);
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
