package io.github.spannertuning.testing;

import com.google.protobuf.ByteString;
import com.google.spanner.v1.PartialResultSet;
import com.google.spanner.v1.ResultSet;
import com.google.spanner.v1.ResultSetMetadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

/**
 * One streaming query or read of {@link MockSpannerService}: a result set sent as {@code
 * PartialResultSet} messages, one row each, the metadata on the first and the stats on the last.
 * Each message carries a resume token, the number of rows sent so far; a stream resumed from a
 * token starts after that row. It stops sending when the client cancels. The {@code last} flag and
 * the trailers' timing are {@link MockSpannerServer}'s.
 */
final class ResultStream {

  private final ServerCallStreamObserver<PartialResultSet> call;

  private volatile boolean cancelled;

  /** Must be created while the call's handler runs: gRPC takes a cancel handler only then. */
  ResultStream(StreamObserver<PartialResultSet> observer) {
    this.call = (ServerCallStreamObserver<PartialResultSet>) observer;
    this.call.setOnCancelHandler(() -> this.cancelled = true);
  }

  /** The row a stream resumed from {@code token} starts at: 0 for a stream not resumed. */
  static int firstRow(ByteString token) {
    try {
      return token.isEmpty() ? 0 : Integer.parseInt(token.toStringUtf8());
    } catch (NumberFormatException ex) {
      throw Status.INVALID_ARGUMENT
          .withDescription("not a resume token of this server: " + token.toStringUtf8())
          .asRuntimeException();
    }
  }

  /** Sends the rows from {@code firstRow} on, then ends the stream. */
  void send(
      ResultSet result,
      ResultSetMetadata metadata,
      int firstRow,
      SimulatedExecutionTime time,
      Freeze freeze) {
    new Sender(result, metadata, firstRow, time, freeze).run();
  }

  /** Sends one message and ends the stream. */
  void sendOnly(PartialResultSet message) {
    this.call.onNext(message);
    this.call.onCompleted();
  }

  void fail(StatusRuntimeException error) {
    this.call.onError(error);
  }

  /** Sends messages until the end, an error, a cancel, or a freeze, after which it runs again. */
  private final class Sender implements Runnable {

    private final ResultSet result;

    private final ResultSetMetadata metadata;

    private final SimulatedExecutionTime time;

    private final Freeze freeze;

    private int row;

    private long sent;

    Sender(
        ResultSet result,
        ResultSetMetadata metadata,
        int firstRow,
        SimulatedExecutionTime time,
        Freeze freeze) {
      this.result = result;
      this.metadata = metadata;
      this.row = firstRow;
      this.time = time;
      this.freeze = freeze;
    }

    @Override
    public void run() {
      while (!ResultStream.this.cancelled) {
        if (this.sent > 0 && this.row >= this.result.getRowsCount()) {
          ResultStream.this.call.onCompleted();
          return;
        }
        StatusRuntimeException error = this.time.takeStreamException(this.sent);
        if (error != null) {
          fail(error);
          return;
        }
        ResultStream.this.call.onNext(next());
        if (this.freeze.rowSent()) {
          this.freeze.whenUnfrozen(this);
          return;
        }
      }
    }

    private PartialResultSet next() {
      PartialResultSet.Builder message = PartialResultSet.newBuilder();
      if (this.sent == 0) {
        message.setMetadata(this.metadata);
      }
      if (this.row < this.result.getRowsCount()) {
        message.addAllValues(this.result.getRows(this.row).getValuesList());
        this.row++;
        message.setResumeToken(ByteString.copyFromUtf8(Integer.toString(this.row)));
      }
      if (this.row >= this.result.getRowsCount() && this.result.hasStats()) {
        message.setStats(this.result.getStats());
      }
      this.sent++;
      return message.build();
    }
  }
}
