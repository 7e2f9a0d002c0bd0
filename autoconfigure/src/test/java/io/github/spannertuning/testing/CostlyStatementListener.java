package io.github.spannertuning.testing;

import com.google.spanner.v1.ExecuteSqlRequest;
import io.grpc.ServerCall;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Serves one statement later than the others on every connection, as a report or a scan is: the
 * call's events are held for the statement's extra cost once its request shows which statement it
 * is, after whatever delay its connection and the server's pace gave it already.
 */
final class CostlyStatementListener<ReqT> extends ServerCall.Listener<ReqT> {

  private final ServerCall.Listener<ReqT> delegate;

  private final ScheduledExecutorService scheduler;

  private final String statement;

  private final long extraNanos;

  /** Where the call's events go, once its request has told: the service, or a delay before it. */
  private ServerCall.Listener<ReqT> target;

  CostlyStatementListener(
      ServerCall.Listener<ReqT> delegate,
      ScheduledExecutorService scheduler,
      String statement,
      long extraNanos) {
    this.delegate = delegate;
    this.scheduler = scheduler;
    this.statement = statement;
    this.extraNanos = extraNanos;
  }

  private ServerCall.Listener<ReqT> target() {
    return (this.target != null) ? this.target : this.delegate;
  }

  @Override
  public void onMessage(ReqT message) {
    if (this.target == null) {
      this.target =
          (message instanceof ExecuteSqlRequest sql && this.statement.equals(sql.getSql()))
              ? new DelayedListener<>(this.delegate, this.extraNanos, this.scheduler)
              : this.delegate;
    }
    this.target.onMessage(message);
  }

  @Override
  public void onHalfClose() {
    target().onHalfClose();
  }

  @Override
  public void onCancel() {
    target().onCancel();
  }

  @Override
  public void onComplete() {
    target().onComplete();
  }

  @Override
  public void onReady() {
    target().onReady();
  }
}
