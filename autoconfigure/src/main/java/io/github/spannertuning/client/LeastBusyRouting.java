package io.github.spannertuning.client;

import com.google.cloud.grpc.GcpManagedChannel;
import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.spanner.v1.TransactionSelector;
import io.grpc.Context;
import java.util.EnumMap;
import java.util.Map;

/**
 * Sends single-use reads to grpc-gcp's least busy channel on clients that give them a sticky
 * channel hint instead (google-cloud-spanner up to 6.113).
 *
 * <p>Such clients turn the hint into an affinity key {@code hint % numChannels}, shared with
 * read/write and read-only transactions: single-use reads then pile onto the few channels those
 * keys were first bound to, and anything that moves a key moves the transactions using it. A
 * single-use read needs no stickiness, so the hint is dropped (the call carries no key, and cannot
 * disturb a transaction's) and grpc-gcp is told to pick the least busy channel without binding.
 */
final class LeastBusyRouting {

  private static final Context.Key<Boolean> DISABLE_AFFINITY =
      GcpManagedChannel.DISABLE_AFFINITY_CTX_KEY;

  private LeastBusyRouting() {}

  /**
   * Whether a request runs in a single-use read-only transaction. Strong single-use reads may
   * carry no transaction selector at all.
   */
  static boolean isSingleUse(boolean hasTransaction, TransactionSelector selector) {
    return !hasTransaction || (selector.hasSingleUse() && selector.getSingleUse().hasReadOnly());
  }

  /**
   * Attaches a context in which grpc-gcp picks the least busy channel. grpc-gcp reads it in
   * {@code newCall}, which gax calls on this thread before the rpc method returns.
   */
  static Context enter() {
    return Context.current().withValue(DISABLE_AFFINITY, Boolean.TRUE).attach();
  }

  /** The given context, with grpc-gcp told to pick the least busy channel. */
  static Context within(Context context) {
    return context.withValue(DISABLE_AFFINITY, Boolean.TRUE);
  }

  static void exit(Context previous) {
    Context.current().detach(previous);
  }

  static Map<Option, ?> withoutChannelHint(Map<Option, ?> options) {
    if (options == null || !options.containsKey(Option.CHANNEL_HINT)) {
      return options;
    }
    Map<Option, Object> copy = new EnumMap<>(Option.class);
    copy.putAll(options);
    copy.remove(Option.CHANNEL_HINT);
    return copy;
  }
}
