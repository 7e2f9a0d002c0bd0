package io.github.spannertuning.testing;

import io.grpc.ServerCall;
import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Holds a server call's events until its delay has passed, then replays them in order. The delay is
 * scheduled: no server thread is held while the call waits.
 */
final class DelayedListener<ReqT> extends ServerCall.Listener<ReqT> {

  private final ServerCall.Listener<ReqT> delegate;

  private final Queue<Runnable> pending = new ArrayDeque<>();

  private boolean released;

  /** A delay of {@link Long#MAX_VALUE} holds the call's events for as long as the server runs. */
  DelayedListener(
      ServerCall.Listener<ReqT> delegate, long nanos, ScheduledExecutorService scheduler) {
    this.delegate = delegate;
    if (nanos != Long.MAX_VALUE) {
      scheduler.schedule(this::release, nanos, TimeUnit.NANOSECONDS);
    }
  }

  private void release() {
    synchronized (this) {
      Runnable event;
      while ((event = this.pending.poll()) != null) {
        event.run();
      }
      this.released = true;
    }
  }

  private synchronized void submit(Runnable event) {
    if (this.released) {
      event.run();
    } else {
      this.pending.add(event);
    }
  }

  @Override
  public void onMessage(ReqT message) {
    submit(() -> this.delegate.onMessage(message));
  }

  @Override
  public void onHalfClose() {
    submit(this.delegate::onHalfClose);
  }

  @Override
  public void onCancel() {
    submit(this.delegate::onCancel);
  }

  @Override
  public void onComplete() {
    submit(this.delegate::onComplete);
  }

  @Override
  public void onReady() {
    submit(this.delegate::onReady);
  }
}
