package io.github.spannertuning.advice;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The rules, and the properties they look at. Each rule names the client releases it holds on,
 * verified against the published jars ({@code javap} of the classes named, the client's pom inside
 * its jar), and its upstream source; docs/advice.md lists them.
 */
public final class AdviceRules {

  /**
   * The first google-cloud-spanner release without a session pool: {@code SpannerImpl}'s {@code
   * getDatabaseClient} builds a {@code MultiplexedSessionDatabaseClient} only, and {@code
   * SessionPool} is gone from the jar (java-spanner #4191, released in 6.108.0; read in the 6.113.0
   * and 6.119.0 jars). On 6.89.0 it still calls {@code SessionPool.createPool} and multiplexed
   * sessions are off by default, so the pool's settings matter there.
   */
  static final String NO_SESSION_POOL_SINCE = "6.108.0";

  /**
   * The first google-cloud-spanner release with grpc-gcp's dynamic channel pool: {@code
   * SpannerOptions.Builder.enableDynamicChannelPool()} (java-spanner #4265, released in 6.105.0;
   * read in the 6.113.0 and 6.119.0 jars, absent from 6.89.0). The {@code SpannerOptions}
   * constructor of both jars keeps the pool dynamic only while {@code numChannelsExplicitlySet} is
   * false, which {@code setNumChannels} sets.
   */
  static final String DYNAMIC_POOL_SINCE = "6.105.0";

  static final String MIN_SESSIONS = "spring.cloud.gcp.spanner.min-sessions";

  static final String MAX_SESSIONS = "spring.cloud.gcp.spanner.max-sessions";

  static final String MAX_IDLE_SESSIONS = "spring.cloud.gcp.spanner.max-idle-sessions";

  static final String WRITE_SESSIONS_FRACTION = "spring.cloud.gcp.spanner.write-sessions-fraction";

  static final String KEEP_ALIVE_INTERVAL_MINUTES =
      "spring.cloud.gcp.spanner.keep-alive-interval-minutes";

  static final String FAIL_IF_POOL_EXHAUSTED = "spring.cloud.gcp.spanner.fail-if-pool-exhausted";

  static final String NUM_RPC_CHANNELS = "spring.cloud.gcp.spanner.num-rpc-channels";

  static final String TUNING_CHANNELS = "spanner.tuning.channels";

  static final String GRPC_GCP = "com.google.cloud:grpc-gcp";

  /**
   * The session-pool properties spring-cloud-gcp maps into {@code SessionPoolOptions} ({@code
   * GcpSpannerAutoConfiguration.CoreSpannerAutoConfiguration} in spring-cloud-gcp-autoconfigure
   * 7.4.10 calls {@code setMinSessions}, {@code setMaxSessions}, {@code setMaxIdleSessions}, {@code
   * setWriteSessionsFraction}, {@code setKeepAliveIntervalMinutes} and {@code
   * setFailIfPoolExhausted}).
   */
  static final List<String> SESSION_POOL_PROPERTIES =
      List.of(
          MIN_SESSIONS,
          MAX_SESSIONS,
          MAX_IDLE_SESSIONS,
          WRITE_SESSIONS_FRACTION,
          KEEP_ALIVE_INTERVAL_MINUTES,
          FAIL_IF_POOL_EXHAUSTED);

  /**
   * Every property a rule looks at. The caller tells which of these are set, and no other: the
   * rules need no more, and so see no more.
   */
  public static final Set<String> PROPERTIES =
      Set.copyOf(concat(SESSION_POOL_PROPERTIES, List.of(NUM_RPC_CHANNELS, TUNING_CHANNELS)));

  private AdviceRules() {}

  /**
   * The advice for a configuration on a client line, in a stable order; empty for a clean one.
   *
   * @param line the client line
   * @param set which of {@link #PROPERTIES} the application set (names only, never values)
   * @return one entry per finding
   */
  public static List<Advice> advise(ClientLine line, Set<String> set) {
    List<Advice> advice = new ArrayList<>();
    sessionPool(line, set, advice);
    channelCount(line, set, advice);
    grpcGcpSkew(line, advice);
    return List.copyOf(advice);
  }

  private static void sessionPool(ClientLine line, Set<String> set, List<Advice> advice) {
    if (!Versions.atLeast(line.spanner(), NO_SESSION_POOL_SINCE)) {
      return;
    }
    for (String property : SESSION_POOL_PROPERTIES) {
      if (set.contains(property)) {
        advice.add(
            new Advice(
                property,
                "google-cloud-spanner "
                    + line.spanner()
                    + " has no session pool: every operation runs on one multiplexed session"
                    + " (java-spanner #4191, from "
                    + NO_SESSION_POOL_SINCE
                    + "), so this setting, which spring-cloud-gcp passes to SessionPoolOptions,"
                    + " has no effect",
                "remove "
                    + property
                    + "; one multiplexed session serves any number of"
                    + " concurrent transactions, so there is no pool to size or keep alive"));
      }
    }
  }

  private static void channelCount(ClientLine line, Set<String> set, List<Advice> advice) {
    boolean numRpcChannels = set.contains(NUM_RPC_CHANNELS);
    boolean tuningChannels = set.contains(TUNING_CHANNELS);
    if (numRpcChannels && tuningChannels) {
      // spanner-tuning sets the count on the builder after spring-cloud-gcp has (its bean post
      // processor tunes the finished builder bean), so the later setNumChannels wins on any line.
      advice.add(
          new Advice(
              NUM_RPC_CHANNELS,
              TUNING_CHANNELS
                  + " is set too, and spanner-tuning applies it after spring-cloud-gcp applies "
                  + NUM_RPC_CHANNELS
                  + ", so this setting has no effect",
              "set the pool size in one place: remove "
                  + NUM_RPC_CHANNELS
                  + " or "
                  + TUNING_CHANNELS));
    }
    if (!Versions.atLeast(line.spanner(), DYNAMIC_POOL_SINCE)) {
      return;
    }
    // The property that decides the count: the dynamic-pool advice is about that one.
    String deciding = tuningChannels ? TUNING_CHANNELS : (numRpcChannels ? NUM_RPC_CHANNELS : null);
    if (deciding != null) {
      advice.add(
          new Advice(
              deciding,
              "it calls SpannerOptions.Builder.setNumChannels, and on google-cloud-spanner "
                  + line.spanner()
                  + " a channel count set on the builder turns grpc-gcp's dynamic channel pool"
                  + " off, even where the application enables it with"
                  + " enableDynamicChannelPool() (java-spanner #4265, from "
                  + DYNAMIC_POOL_SINCE
                  + "): the pool then neither grows under load nor shrinks when idle",
              "remove "
                  + deciding
                  + " to let the dynamic channel pool size the pool (enable it with"
                  + " enableDynamicChannelPool() in a SpannerOptionsCustomizer); keep it only"
                  + " for a fixed pool of that size"));
    }
  }

  private static void grpcGcpSkew(ClientLine line, List<Advice> advice) {
    if (Versions.older(line.grpcGcp(), line.grpcGcpRequired())) {
      advice.add(
          new Advice(
              GRPC_GCP,
              "grpc-gcp "
                  + line.grpcGcp()
                  + " is on the classpath, but google-cloud-spanner "
                  + line.spanner()
                  + " was built against grpc-gcp "
                  + line.grpcGcpRequired()
                  + " (its pom): a call into a method the older grpc-gcp lacks fails at run time"
                  + " with NoSuchMethodError (java-spanner-jdbc #2327)",
              "let the client's grpc-gcp win: remove the version pin on "
                  + GRPC_GCP
                  + " or raise it to "
                  + line.grpcGcpRequired()
                  + " or later, or import the libraries-bom that matches google-cloud-spanner "
                  + line.spanner()));
    }
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
