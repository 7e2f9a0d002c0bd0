package io.github.spannertuning.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A sub-channel whose calls go nowhere: each ends as soon as it starts, or stays open until the
 * test closes it.
 */
public final class FakeChannel extends Channel {

  private final boolean closeAtStart;

  private final List<ClientCall.Listener<?>> listeners = new CopyOnWriteArrayList<>();

  private FakeChannel(boolean closeAtStart) {
    this.closeAtStart = closeAtStart;
  }

  /** Calls that close with {@code OK} as they start. */
  public static FakeChannel closingAtStart() {
    return new FakeChannel(true);
  }

  /** Calls that stay open until {@link #close(int, Status)}. */
  public static FakeChannel holding() {
    return new FakeChannel(false);
  }

  /** Closes the call started {@code call}-th (from 0). */
  void close(int call, Status status) {
    this.listeners.get(call).onClose(status, new Metadata());
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions) {
    return new ClientCall<>() {
      @Override
      public void start(Listener<RespT> listener, Metadata headers) {
        if (FakeChannel.this.closeAtStart) {
          listener.onClose(Status.OK, new Metadata());
        } else {
          FakeChannel.this.listeners.add(listener);
        }
      }

      @Override
      public void request(int numMessages) {}

      @Override
      public void cancel(String message, Throwable cause) {}

      @Override
      public void halfClose() {}

      @Override
      public void sendMessage(ReqT message) {}
    };
  }

  @Override
  public String authority() {
    return "localhost";
  }
}
