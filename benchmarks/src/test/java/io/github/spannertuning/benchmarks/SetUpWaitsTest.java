package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The frontend's split of the calls that waited for a set-up: reads, priming, the rest. */
class SetUpWaitsTest {

  private static final SocketAddress ONE = new InetSocketAddress("127.0.0.1", 40001);

  private static final SocketAddress TWO = new InetSocketAddress("127.0.0.1", 40002);

  @Test
  void aPrimingQueryIsFoundByItsRequestIdAndCountedApartFromTheReads() {
    List<Call> calls =
        List.of(
            new Call("CreateSession", ONE, null, "1.1.1.1.1.1"),
            query("ExecuteSql", ONE, MockSpannerServer.PRIMING_QUERY, "1.1.1.1.2.1"),
            query("ExecuteStreamingSql", ONE, MockSpannerServer.POINT_SELECT, "1.1.1.1.3.1"),
            // The same request id on another connection is another call.
            query("ExecuteStreamingSql", TWO, MockSpannerServer.PRIMING_QUERY, "1.1.1.1.3.1"),
            query("ExecuteStreamingSql", TWO, MockSpannerServer.POINT_SELECT, "1.1.1.2.4.1"));
    List<Call> waited =
        List.of(
            new Call("CreateSession", ONE, null, "1.1.1.1.1.1"),
            new Call("ExecuteSql", ONE, null, "1.1.1.1.2.1"),
            new Call("ExecuteStreamingSql", ONE, null, "1.1.1.1.3.1"),
            new Call("ExecuteStreamingSql", TWO, null, "1.1.1.1.3.1"),
            new Call("ExecuteStreamingSql", TWO, null, "1.1.1.2.4.1"));

    SetUpWaits waits = SetUpWaits.of(calls, waited, 2);

    assertThat(waits.calls()).isEqualTo(5);
    assertThat(waits.primingCalls()).isEqualTo(2);
    assertThat(waits.readsThatWaited()).isEqualTo(2);
    assertThat(waits.primingThatWaited()).isEqualTo(2);
    assertThat(waits.othersThatWaited()).isEqualTo(1);
    assertThat(waits.connectionsSetUp()).isEqualTo(2);
  }

  @Test
  void withoutRequestIdsAUnaryQueryIsTakenForPrimingAndAStreamingOneForARead() {
    List<Call> calls =
        List.of(
            query("ExecuteSql", ONE, MockSpannerServer.PRIMING_QUERY, ""),
            query("ExecuteStreamingSql", ONE, MockSpannerServer.POINT_SELECT, ""),
            query("ExecuteStreamingSql", ONE, MockSpannerServer.POINT_SELECT, ""));
    List<Call> waited =
        List.of(
            new Call("ExecuteSql", ONE, null, ""), new Call("ExecuteStreamingSql", ONE, null, ""));

    SetUpWaits waits = SetUpWaits.of(calls, waited, 1);

    assertThat(waits.primingCalls()).isEqualTo(1);
    assertThat(waits.primingThatWaited()).isEqualTo(1);
    assertThat(waits.readsThatWaited()).isEqualTo(1);
    assertThat(waits.othersThatWaited()).isZero();
  }

  private static Call query(String method, SocketAddress connection, String sql, String id) {
    return new Call(method, connection, ExecuteSqlRequest.newBuilder().setSql(sql).build(), id);
  }
}
