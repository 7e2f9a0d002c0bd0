package io.github.spannertuning.client;

import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.spanner.v1.TransactionSelector;
import java.util.EnumMap;
import java.util.Map;

/**
 * Which requests are single-use reads, and their options without the client's channel hint, on
 * clients that give single-use reads a sticky hint (google-cloud-spanner up to 6.113).
 *
 * <p>Such clients turn the hint into an affinity key {@code hint % numChannels}, shared with
 * read/write and read-only transactions: single-use reads then pile onto the few channels those
 * keys were first bound to. A single-use read needs no stickiness, so the hint is dropped and
 * {@link ChannelPicker} chooses the channel.
 */
final class LeastBusyRouting {

  private LeastBusyRouting() {}

  /**
   * Whether a request runs in a single-use read-only transaction. Strong single-use reads may
   * carry no transaction selector at all.
   */
  static boolean isSingleUse(boolean hasTransaction, TransactionSelector selector) {
    return !hasTransaction || (selector.hasSingleUse() && selector.getSingleUse().hasReadOnly());
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
