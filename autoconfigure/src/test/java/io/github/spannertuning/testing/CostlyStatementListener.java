package io.github.spannertuning.testing;

import static io.github.spannertuning.testing.MockSpannerServer.REPORT;

import com.google.spanner.v1.ExecuteSqlRequest;
import io.grpc.ForwardingServerCallListener;
import io.grpc.ServerCall;
import java.util.function.UnaryOperator;

/**
 * Serves the {@link MockSpannerServer#REPORT} later than the other statements on every connection,
 * as a report or a scan is: the call's events are held for the statement's extra cost once its
 * request shows which statement it is, after whatever delay its connection and the server's pace
 * gave it already.
 */
final class CostlyStatementListener<ReqT> extends ForwardingServerCallListener<ReqT> {

  private final ServerCall.Listener<ReqT> delegate;

  /** The delegate behind the statement's extra cost. */
  private final UnaryOperator<ServerCall.Listener<ReqT>> delayed;

  /** Where the call's events go, once its request has told: the service, or a delay before it. */
  private ServerCall.Listener<ReqT> target;

  CostlyStatementListener(
      ServerCall.Listener<ReqT> delegate, UnaryOperator<ServerCall.Listener<ReqT>> delayed) {
    this.delegate = delegate;
    this.delayed = delayed;
  }

  @Override
  protected ServerCall.Listener<ReqT> delegate() {
    return (this.target != null) ? this.target : this.delegate;
  }

  @Override
  public void onMessage(ReqT message) {
    if (this.target == null) {
      this.target =
          (message instanceof ExecuteSqlRequest sql && REPORT.equals(sql.getSql()))
              ? this.delayed.apply(this.delegate)
              : this.delegate;
    }
    this.target.onMessage(message);
  }
}
