package io.github.spannertuning.benchmarks;

import com.google.spanner.v1.ExecuteSqlRequest;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServer.Call;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a frontend whose connections cost a set-up saw, with the client's priming queries ({@link
 * MockSpannerServer#PRIMING_QUERY}) kept apart from the application's reads: the calls that waited
 * for their connection's set-up, the priming queries, and the connections set up.
 *
 * <p>The server keeps no request for a call that waited: it is recorded as it arrives. Its request
 * is found among the calls by its connection and request id; without an id (a client line that
 * sends none), a unary {@code ExecuteSql} is taken for a priming query, since the benchmark's reads
 * are streaming ({@code ExecuteStreamingSql}) and the starter primes with a unary call.
 *
 * @param calls every call the frontend saw, session calls too
 * @param primingCalls the priming queries among them
 * @param readsThatWaited the application's reads that waited for a connection's set-up
 * @param primingThatWaited the priming queries that waited for one
 * @param othersThatWaited the other calls that waited for one (a session's)
 * @param connectionsSetUp the connections set up
 */
record SetUpWaits(
    long calls,
    long primingCalls,
    long readsThatWaited,
    long primingThatWaited,
    long othersThatWaited,
    long connectionsSetUp) {

  private static final String READ = "ExecuteStreamingSql";

  private static final String UNARY_QUERY = "ExecuteSql";

  static SetUpWaits of(List<Call> calls, List<Call> waited, long connectionsSetUp) {
    Map<String, String> sqlByRequest = new HashMap<>();
    long priming = 0;
    for (Call call : calls) {
      String sql = sqlOf(call);
      if (MockSpannerServer.PRIMING_QUERY.equals(sql)) {
        priming++;
      }
      if (sql != null && !call.requestId().isEmpty()) {
        sqlByRequest.put(key(call), sql);
      }
    }
    long reads = 0;
    long primingWaited = 0;
    long others = 0;
    for (Call call : waited) {
      String sql = call.requestId().isEmpty() ? null : sqlByRequest.get(key(call));
      if (MockSpannerServer.PRIMING_QUERY.equals(sql)
          || (sql == null && call.method().equals(UNARY_QUERY))) {
        primingWaited++;
      } else if (call.method().equals(READ) || call.method().equals(UNARY_QUERY)) {
        reads++;
      } else {
        others++;
      }
    }
    return new SetUpWaits(calls.size(), priming, reads, primingWaited, others, connectionsSetUp);
  }

  private static String sqlOf(Call call) {
    return (call.request() instanceof ExecuteSqlRequest sql) ? sql.getSql() : null;
  }

  private static String key(Call call) {
    return call.connection() + " " + call.requestId();
  }

  Map<String, Object> toMap() {
    Map<String, Object> map = new LinkedHashMap<>();
    map.put("calls", this.calls);
    map.put("primingCalls", this.primingCalls);
    map.put("readsThatWaited", this.readsThatWaited);
    map.put("primingThatWaited", this.primingThatWaited);
    map.put("othersThatWaited", this.othersThatWaited);
    map.put("connectionsSetUp", this.connectionsSetUp);
    return map;
  }
}
