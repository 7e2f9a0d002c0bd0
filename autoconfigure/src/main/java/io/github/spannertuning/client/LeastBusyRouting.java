package io.github.spannertuning.client;

import com.google.cloud.spanner.spi.v1.SpannerRpc.Option;
import com.google.spanner.v1.TransactionSelector;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * Which requests are single-use reads, and their options without the client's own channel choice,
 * so that {@link ChannelPicker} makes it.
 *
 * <p>google-cloud-spanner up to 6.113 gives a single-use read a random hint that it turns into an
 * affinity key {@code hint % numChannels}, shared with read/write and read-only transactions:
 * single-use reads then pile onto the few channels those keys were first bound to. 6.119 and later
 * give each one a channel reference of its own ({@code CHANNEL_ID_AFFINITY}), which grpc-gcp sends
 * to its least busy channel. A single-use read needs no stickiness, so either is dropped.
 */
final class LeastBusyRouting {

  /** The options by which the client chooses a call's channel, those of this client version. */
  private static final Option[] CHANNEL_OPTIONS = channelOptions();

  private static final Map<Option, ?> NONE = Map.of();

  private LeastBusyRouting() {}

  /**
   * Whether a request runs in a single-use read-only transaction. Strong single-use reads may carry
   * no transaction selector at all.
   */
  static boolean isSingleUse(boolean hasTransaction, TransactionSelector selector) {
    return !hasTransaction || (selector.hasSingleUse() && selector.getSingleUse().hasReadOnly());
  }

  /**
   * The options without the client's channel choice. A single-use read's options usually hold
   * nothing else, and then no copy is made.
   */
  static Map<Option, ?> withoutChannelHint(Map<Option, ?> options) {
    if (options == null) {
      return null;
    }
    int channelOptions = 0;
    for (Option option : CHANNEL_OPTIONS) {
      if (options.containsKey(option)) {
        channelOptions++;
      }
    }
    if (channelOptions == 0) {
      return options;
    }
    if (channelOptions == options.size()) {
      return NONE;
    }
    Map<Option, Object> copy = new EnumMap<>(Option.class);
    copy.putAll(options);
    for (Option option : CHANNEL_OPTIONS) {
      copy.remove(option);
    }
    return copy;
  }

  /** Whether this client version chooses channels by a reference per call (6.119 and later). */
  static boolean hasChannelReferences() {
    return CHANNEL_OPTIONS.length > 1;
  }

  private static Option[] channelOptions() {
    Set<Option> options = EnumSet.of(Option.CHANNEL_HINT);
    for (Option option : Option.values()) {
      // Not referenced by name: the constant is missing in clients before 6.119.
      if (option.name().equals("CHANNEL_ID_AFFINITY")) {
        options.add(option);
      }
    }
    return options.toArray(new Option[0]);
  }
}
