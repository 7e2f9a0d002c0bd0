package io.github.spannertuning.pool;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.spanner.admin.database.v1.DatabaseAdminGrpc;
import com.google.spanner.v1.SpannerGrpc;
import io.github.spannertuning.client.FakeChannel;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The imbalance figure, its window and which calls are counted, with the interceptor handed
 * sub-channels that answer every call at once. Each expectation follows from how the calls are
 * spread by the test, and the window is moved by the test alone.
 */
class ChannelLoadTest {

  private static final int POOL = 8;

  @Test
  void allCallsOnOneChannelOfEightReadsEight() {
    ChannelLoad load = newLoad(POOL);
    Channel only = FakeChannel.closingAtStart();
    for (int i = 0; i < 40; i++) {
      call(load, only, SpannerGrpc.getExecuteStreamingSqlMethod());
    }
    assertThat(load.channels()).hasSize(1);
    assertThat(load.imbalance()).isEqualTo(8.0);
  }

  @Test
  void evenCallsReadOne() {
    ChannelLoad load = newLoad(POOL);
    for (Channel channel : channels(POOL)) {
      for (int i = 0; i < 5; i++) {
        call(load, channel, SpannerGrpc.getExecuteStreamingSqlMethod());
      }
    }
    assertThat(load.channels()).hasSize(POOL);
    assertThat(load.imbalance()).isEqualTo(1.0);
  }

  @Test
  void halfThePoolEvenlyReadsTwo() {
    ChannelLoad load = newLoad(POOL);
    for (Channel channel : channels(POOL / 2)) {
      for (int i = 0; i < 5; i++) {
        call(load, channel, SpannerGrpc.getExecuteStreamingSqlMethod());
      }
    }
    assertThat(load.imbalance()).isEqualTo(2.0);
  }

  @Test
  void noCallsReadNaN() {
    assertThat(newLoad(POOL).imbalance()).isNaN();
  }

  @Test
  void adminCallsAreNotCounted() {
    ChannelLoad load = newLoad(POOL);
    Channel admin = FakeChannel.closingAtStart();
    call(load, admin, DatabaseAdminGrpc.getUpdateDatabaseDdlMethod());
    call(load, admin, DatabaseAdminGrpc.getGetDatabaseDdlMethod());
    assertThat(load.channels()).isEmpty();
    assertThat(load.imbalance()).isNaN();
    Channel data = FakeChannel.closingAtStart();
    call(load, data, SpannerGrpc.getCreateSessionMethod());
    assertThat(load.channels())
        .singleElement()
        .extracting(ChannelLoad.ChannelStats::calls)
        .isEqualTo(1L);
  }

  @Test
  void readingTheImbalanceMovesNoWindowWhileARollDoes() {
    ChannelLoad load = newLoad(2);
    List<Channel> channels = channels(2);
    calls(load, channels.get(0), 6);
    load.roll();
    calls(load, channels.get(1), 2);
    load.roll();
    // Counted from the first roll: none on channel 0, 2 on channel 1.
    double first = load.imbalance();
    double second = load.imbalance();
    assertThat(first).isEqualTo(2.0);
    assertThat(second).as("read again at once").isEqualTo(first);
    calls(load, channels.get(0), 2);
    assertThat(load.imbalance())
        .as("2 and 2 since the first roll: the reads left the window where it was")
        .isEqualTo(1.0);
    load.roll();
    assertThat(load.imbalance()).as("since the second roll: 2 on channel 0 only").isEqualTo(2.0);
  }

  private static ChannelLoad newLoad(int poolSize) {
    ChannelLoad load = new ChannelLoad(null);
    load.poolSize(poolSize);
    return load;
  }

  private static List<Channel> channels(int count) {
    List<Channel> channels = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      channels.add(FakeChannel.closingAtStart());
    }
    return channels;
  }

  private static void calls(ChannelLoad load, Channel channel, int count) {
    for (int i = 0; i < count; i++) {
      call(load, channel, SpannerGrpc.getExecuteStreamingSqlMethod());
    }
  }

  private static <ReqT, RespT> void call(
      ChannelLoad load, Channel channel, MethodDescriptor<ReqT, RespT> method) {
    ClientCall<ReqT, RespT> call =
        load.interceptor().interceptCall(method, CallOptions.DEFAULT, channel);
    call.start(new ClientCall.Listener<>() {}, new Metadata());
  }
}
