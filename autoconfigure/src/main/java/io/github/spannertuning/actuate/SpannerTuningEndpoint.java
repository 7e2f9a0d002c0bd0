package io.github.spannertuning.actuate;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.github.spannertuning.advice.Advice;
import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.ClientVersions;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.FeatureState;
import io.github.spannertuning.client.SpannerTuningState;
import io.github.spannertuning.experiment.ExperimentPlan;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.experiment.ExperimentResult.KindResult;
import io.github.spannertuning.experiment.ExperimentResult.PerArm;
import io.github.spannertuning.experiment.ExperimentResult.Progress;
import io.github.spannertuning.experiment.ExperimentResult.SliceStart;
import io.github.spannertuning.experiment.InvalidExperimentPlanException;
import io.github.spannertuning.jdbc.TunedJdbcClient;
import io.github.spannertuning.pool.ChannelLoad.ChannelStats;
import io.github.spannertuning.routing.ChannelWarmth;
import io.github.spannertuning.routing.Hedging;
import java.security.Principal;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.lang.Nullable;

/**
 * {@code /actuator/spannertuning}: what spanner-tuning does to each Spanner client, and a switch
 * for single-use distribution and the stream-end guard at runtime (for A/B comparison without a
 * restart), and a switchback experiment per client ({@code POST} and {@code DELETE} on {@code
 * /actuator/spannertuning/{client}/experiment}). Read-only unless {@code
 * management.endpoint.spannertuning.access=unrestricted}. Shows no parameters or credentials: it
 * knows none. Of the statements hedging times, it shows by default a fingerprint only; their text,
 * with every literal replaced by {@code ?}, as {@code
 * management.endpoint.spannertuning.show-statements} allows ({@link Show}, as Boot's {@code env}
 * endpoint shows values). Over JMX, {@code when-authorized} shows them, as Boot's endpoints do;
 * over HTTP, {@link SpannerTuningEndpointWebExtension} asks the request's principal and roles.
 *
 * <p>A request it refuses throws {@link InvalidEndpointRequestException} with the reason; over HTTP
 * {@link SpannerTuningEndpointWebExtension} answers it with a 400 whose body carries that reason.
 *
 * <p>A client spanner-tuning could not tune is listed too, with the same fields: every feature
 * {@code unsupported} with the reason, for example a {@code Spanner} bean built from a {@code
 * SpannerOptions.Builder} that is not a bean ({@code "not tuned: built from a
 * SpannerOptions.Builder or SpannerOptions that is not a bean, ..."}). Its {@code pool} is the one
 * it was built with; its channels and counters stay empty, since its calls do not pass through
 * spanner-tuning, and nothing can be switched or compared on it.
 */
@Endpoint(id = "spannertuning", defaultAccess = Access.READ_ONLY)
public class SpannerTuningEndpoint {

  private static final Log logger = LogFactory.getLog(SpannerTuningEndpoint.class);

  private final Supplier<Map<String, SpannerTuningState>> clients;

  private final Function<String, Optional<TunedJdbcClient>> jdbcClients;

  private final Show showStatements;

  private final Supplier<List<Advice>> advice;

  /**
   * An endpoint that shows no statement's text.
   *
   * @param clients the open clients by name, tuned or with every feature unsupported, asked afresh
   *     on each request since clients come and go
   */
  public SpannerTuningEndpoint(Supplier<Map<String, SpannerTuningState>> clients) {
    this(clients, (name) -> Optional.empty(), Show.NEVER);
  }

  /**
   * @param clients the open clients by name, tuned or with every feature unsupported, asked afresh
   *     on each request since clients come and go
   * @param jdbcClients the JDBC driver's client recorded under a name, if that name is one
   * @param showStatements when the normalized text of the statements hedging times is shown
   */
  public SpannerTuningEndpoint(
      Supplier<Map<String, SpannerTuningState>> clients,
      Function<String, Optional<TunedJdbcClient>> jdbcClients,
      Show showStatements) {
    this(clients, jdbcClients, showStatements, List::of);
  }

  /**
   * @param clients the open clients by name, tuned or with every feature unsupported, asked afresh
   *     on each request since clients come and go
   * @param jdbcClients the JDBC driver's client recorded under a name, if that name is one
   * @param showStatements when the normalized text of the statements hedging times is shown
   * @param advice the advice on the application's Spanner configuration, one entry per finding
   */
  public SpannerTuningEndpoint(
      Supplier<Map<String, SpannerTuningState>> clients,
      Function<String, Optional<TunedJdbcClient>> jdbcClients,
      Show showStatements,
      Supplier<List<Advice>> advice) {
    this.clients = clients;
    this.jdbcClients = jdbcClients;
    this.showStatements = showStatements;
    this.advice = advice;
  }

  private ClientDescriptor describe(String name, SpannerTuningState state, boolean statements) {
    return ClientDescriptor.of(
        state, this.jdbcClients.apply(name).map(JdbcDescriptor::of).orElse(null), statements);
  }

  @ReadOperation
  public SpannerTuningDescriptor clients() {
    return clients(this.showStatements.isShown(true));
  }

  SpannerTuningDescriptor clients(boolean statements) {
    Map<String, ClientDescriptor> clients = new LinkedHashMap<>();
    this.clients
        .get()
        .forEach((name, state) -> clients.put(name, describe(name, state, statements)));
    return new SpannerTuningDescriptor(
        clients, this.advice.get().stream().map(AdviceDescriptor::of).toList());
  }

  @ReadOperation
  @Nullable
  public ClientDescriptor client(@Selector String client) {
    return client(client, this.showStatements.isShown(true));
  }

  @Nullable
  ClientDescriptor client(String client, boolean statements) {
    SpannerTuningState state = this.clients.get().get(client);
    return (state != null) ? describe(client, state, statements) : null;
  }

  /**
   * Switches a feature of one client, and logs who did. An unknown client or feature, or a feature
   * that cannot be switched on this client, is a bad request; its reason is logged at debug level.
   *
   * @param client the Spanner bean name, or the DataSource bean name of a JDBC driver's client
   * @param feature a feature that can be switched at runtime, such as {@code stream-end-guard}
   * @param enabled the new state
   * @param principal the caller, when the request was authenticated
   */
  @WriteOperation
  public ClientDescriptor switchFeature(
      @Selector String client, String feature, boolean enabled, @Nullable Principal principal) {
    return switchFeature(client, feature, enabled, principal, this.showStatements.isShown(true));
  }

  ClientDescriptor switchFeature(
      String client,
      String feature,
      boolean enabled,
      @Nullable Principal principal,
      boolean statements) {
    SpannerTuningState state = this.clients.get().get(client);
    if (state == null) {
      throw refused(client, feature, "Unknown Spanner client '" + client + "'", null);
    }
    Feature target;
    try {
      target = switchable(feature);
    } catch (IllegalArgumentException ex) {
      throw refused(client, feature, ex.getMessage(), "feature");
    }
    FeatureState before = state.feature(target);
    try {
      state.setEnabled(target, enabled);
    } catch (IllegalStateException ex) {
      throw refused(client, feature, ex.getMessage(), "feature");
    }
    logger.info(
        "spanner-tuning: "
            + feature
            + " switched "
            + (enabled ? "on" : "off")
            + " on Spanner client '"
            + client
            + "' by "
            + ((principal != null) ? principal.getName() : "anonymous")
            + " through the spannertuning endpoint (was "
            + before
            + ")");
    return describe(client, state, statements);
  }

  /**
   * The experiment of one client: running, or the last one; {@code null} (404) when the client is
   * unknown or none was started.
   */
  @ReadOperation
  @Nullable
  public ExperimentDescriptor experiment(@Selector String client, @Selector String experiment) {
    SpannerTuningState state = experimentClient(client, experiment, false);
    if (state == null) {
      return null;
    }
    return ExperimentDescriptor.of(state.experiment());
  }

  /**
   * Starts a switchback experiment on one client, and logs who did. A bad duration, slice, feature
   * or fleet, an experiment already running, or a client with nothing to compare is a bad request.
   *
   * @param client the Spanner bean name, or the DataSource bean name of a JDBC driver's client
   * @param experiment the word {@code experiment}
   * @param duration how long it runs, in Boot's duration format ({@code 20m}); 20 minutes if absent
   * @param slice how long each slice lasts ({@code 60s}); 60 seconds if absent
   * @param feature a feature that can be switched at runtime, to compare it on against off with
   *     every other feature as it is; absent, the whole tuning against stock
   * @param fleet the id of a fleet whose instances run this experiment together, on slices aligned
   *     to the wall clock; absent, this client alone
   * @param principal the caller, when the request was authenticated
   */
  @WriteOperation
  public ExperimentDescriptor startExperiment(
      @Selector String client,
      @Selector String experiment,
      @Nullable String duration,
      @Nullable String slice,
      @Nullable String feature,
      @Nullable String fleet,
      @Nullable Principal principal) {
    SpannerTuningState state = experimentClient(client, experiment, true);
    ExperimentPlan plan;
    ExperimentResult started;
    try {
      if (feature != null) {
        switchable(feature);
      }
      plan =
          state
              .experimentPlan(duration("duration", duration), duration("slice", slice))
              .withFeature(feature)
              .inFleet(fleet);
      started = state.startExperiment(plan);
    } catch (InvalidExperimentPlanException ex) {
      throw refusedExperiment(client, ex.getMessage(), ex.field());
    } catch (IllegalArgumentException ex) {
      throw refusedExperiment(client, ex.getMessage(), "feature");
    } catch (IllegalStateException ex) {
      throw refusedExperiment(client, ex.getMessage(), null);
    }
    logger.info(
        "spanner-tuning: experiment of "
            + plan.pairs()
            + " pairs of "
            + started.slice()
            + " slices started on Spanner client '"
            + client
            + "' by "
            + ((principal != null) ? principal.getName() : "anonymous")
            + " through the spannertuning endpoint"
            + started.scope());
    return ExperimentDescriptor.of(started);
  }

  /**
   * Stops the experiment running on one client, as {@code stopped}, and logs who did; the client is
   * left tuned as configured. With none running, the last one is returned unchanged.
   */
  @DeleteOperation
  public ExperimentDescriptor stopExperiment(
      @Selector String client, @Selector String experiment, @Nullable Principal principal) {
    SpannerTuningState state = experimentClient(client, experiment, true);
    String who = (principal != null) ? principal.getName() : "anonymous";
    if (state.stopExperiment("stopped by " + who + " through the spannertuning endpoint")) {
      logger.info(
          "spanner-tuning: experiment stopped on Spanner client '"
              + client
              + "' by "
              + who
              + " through the spannertuning endpoint");
    }
    ExperimentResult last = state.experiment();
    if (last == null) {
      throw refusedExperiment(
          client, "no experiment was started on Spanner client '" + client + "'", null);
    }
    return ExperimentDescriptor.of(last);
  }

  private SpannerTuningState experimentClient(String client, String path, boolean write) {
    if (!"experiment".equals(path)) {
      if (write) {
        throw refusedExperiment(
            client, "Unknown operation '" + path + "'; the only one is 'experiment'", null);
      }
      return null;
    }
    SpannerTuningState state = this.clients.get().get(client);
    if (state == null && write) {
      throw refusedExperiment(client, "Unknown Spanner client '" + client + "'", null);
    }
    return state;
  }

  /** A duration in Boot's format, as properties take it: {@code 60s}, {@code 20m}, {@code PT1M}. */
  @Nullable
  private static Duration duration(String field, @Nullable String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    try {
      return DurationStyle.detectAndParse(value.trim());
    } catch (IllegalArgumentException ex) {
      throw new InvalidExperimentPlanException(
          field,
          field
              + " must be a duration such as 20m, 60s or 500ms (Boot's duration format), was '"
              + value
              + "'");
    }
  }

  /**
   * The value of a switch's {@code enabled} field, which JSON may give as a boolean or a string.
   *
   * @throws InvalidEndpointRequestException naming the field when it is absent or not a boolean
   */
  static boolean enabled(String client, @Nullable String feature, @Nullable String value) {
    if ("true".equalsIgnoreCase(value) || "false".equalsIgnoreCase(value)) {
      return Boolean.parseBoolean(value);
    }
    String reason =
        (value == null)
            ? "enabled is required: true or false"
            : "enabled must be true or false, was '" + value + "'";
    throw refused(client, feature, reason, "enabled");
  }

  private static InvalidEndpointRequestException refusedExperiment(
      String client, String reason, @Nullable String field) {
    logger.debug(
        "spanner-tuning: refused an experiment request on Spanner client '"
            + client
            + "': "
            + reason);
    return new RefusedRequestException(reason, field);
  }

  /**
   * The feature of this id, if it can be switched at runtime.
   *
   * @throws IllegalArgumentException saying why not, and which can
   */
  private static Feature switchable(@Nullable String id) {
    if (id == null || id.isBlank()) {
      throw new IllegalArgumentException("feature is required; " + switchableFeatures());
    }
    Feature feature;
    try {
      feature = Feature.fromId(id);
    } catch (IllegalArgumentException ex) {
      throw new IllegalArgumentException("Unknown feature '" + id + "'; " + switchableFeatures());
    }
    if (!feature.isSwitchableAtRuntime()) {
      throw new IllegalArgumentException(
          id
              + " is chosen when the channels are built and cannot be switched at runtime; "
              + switchableFeatures());
    }
    return feature;
  }

  private static String switchableFeatures() {
    return "features that can be switched: "
        + Arrays.stream(Feature.values())
            .filter(Feature::isSwitchableAtRuntime)
            .map(Feature::id)
            .collect(Collectors.joining(", "));
  }

  private static InvalidEndpointRequestException refused(
      String client, @Nullable String feature, String reason, @Nullable String field) {
    logger.debug(
        "spanner-tuning: refused to switch '"
            + feature
            + "' on Spanner client '"
            + client
            + "': "
            + reason);
    return new RefusedRequestException(reason, field);
  }

  /** A refused request, with the request's field it concerns, if one. */
  static final class RefusedRequestException extends InvalidEndpointRequestException {

    private static final long serialVersionUID = 1L;

    @Nullable private final String field;

    RefusedRequestException(String reason, @Nullable String field) {
      super(reason, reason);
      this.field = field;
    }

    /** The field of the request's body the refusal concerns, or {@code null}. */
    @Nullable
    String field() {
      return this.field;
    }
  }

  /**
   * Every client, tuned or not, by bean name, and the advice on the application's Spanner
   * configuration (empty when there is none).
   */
  public record SpannerTuningDescriptor(
      Map<String, ClientDescriptor> clients, List<AdviceDescriptor> advice)
      implements OperationResponseBody {}

  /**
   * One finding: a setting that does nothing or harms on this client line. Names the property,
   * never its value.
   */
  public record AdviceDescriptor(String property, String reason, String fix) {

    static AdviceDescriptor of(Advice advice) {
      return new AdviceDescriptor(advice.property(), advice.reason(), advice.fix());
    }
  }

  /** One client. */
  public record ClientDescriptor(
      Map<String, FeatureDescriptor> features,
      VersionsDescriptor versions,
      PoolDescriptor pool,
      List<ChannelDescriptor> channels,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable Double imbalance,
      long singleUseRouted,
      long transactionsRouted,
      long warmUpReads,
      long streamEndGuardSkipped,
      long streamEndGuardDrained,
      long streamEndGuardDrainTimeouts,
      long streamEndGuardCancelledAtLimit,
      HedgingDescriptor hedging,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable ExperimentDescriptor experiment,
      @JsonInclude(JsonInclude.Include.NON_NULL) @Nullable JdbcDescriptor jdbc,
      ObservationsDescriptor observations)
      implements OperationResponseBody {

    static ClientDescriptor of(
        SpannerTuningState state, @Nullable JdbcDescriptor jdbc, boolean statements) {
      Map<String, FeatureDescriptor> features = new LinkedHashMap<>();
      state
          .features()
          .forEach(
              (feature, value) -> features.put(feature.id(), FeatureDescriptor.of(feature, value)));
      List<ChannelDescriptor> channels =
          state.channelLoad().channels().stream().map(ChannelDescriptor::of).toList();
      return new ClientDescriptor(
          features,
          VersionsDescriptor.of(state.versions()),
          new PoolDescriptor(state.poolKind(), state.poolSize(), state.isPoolDynamic()),
          channels,
          SpannerTuningEndpoint.orNull(state.channelLoad().imbalance()),
          state.singleUseRoutedCount(),
          state.transactionsRoutedCount(),
          state.warmUpReadCount(),
          state.streamEndGuardSkippedCount(),
          state.streamEndGuardDrainedCount(),
          state.streamEndGuardDrainTimeoutCount(),
          state.streamEndGuardCancelledAtLimitCount(),
          HedgingDescriptor.of(state.hedging(), statements),
          ExperimentDescriptor.of(state.experiment()),
          jdbc,
          ObservationsDescriptor.of(state));
    }
  }

  /**
   * The observations of a client's calls: whether they are made, or why not; per RPC method the
   * operations that ended, their median and 99th percentile of late, and the frontend's share of
   * their time; and whether the client exports Google's built-in metrics to Cloud Monitoring.
   *
   * @param builtInMetricsExport {@code null} before the client is built, or where its version does
   *     not say
   */
  public record ObservationsDescriptor(
      String state,
      @Nullable String reason,
      List<OperationDescriptor> operations,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable Boolean builtInMetricsExport) {

    static ObservationsDescriptor of(SpannerTuningState state) {
      FeatureState value = state.observations();
      return new ObservationsDescriptor(
          value.status().name().toLowerCase(Locale.ROOT),
          value.reason(),
          state.operations().stream().map(OperationDescriptor::of).toList(),
          state.builtInMetricsExport());
    }
  }

  /**
   * The operations of one RPC method.
   *
   * @param frontendShare the Google front end's time over the operations' time; {@code null} where
   *     no response carried it
   */
  public record OperationDescriptor(
      String method,
      long count,
      double p50Seconds,
      double p99Seconds,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable Double frontendShare) {

    static OperationDescriptor of(CallObserver.OperationSummary summary) {
      return new OperationDescriptor(
          summary.method(),
          summary.count(),
          summary.p50Seconds(),
          summary.p99Seconds(),
          summary.frontendShare());
    }
  }

  /**
   * Hedged reads on one client, whatever the feature's state now: the hedges sent, won, denied for
   * want of budget, and the losers cancelled (the resets hedging sent); the budget; and the delay
   * reads wait before a hedge.
   *
   * @param maxExtra the extra calls hedging may add, as a share of hedgeable reads
   * @param budgetLeft the hedges the budget holds now
   * @param extraCallRate hedges sent per hedgeable read over about the last minute
   * @param delaySeconds the delay learned over every hedgeable read; {@code null} until enough
   *     reads were timed
   * @param shapes the shapes of read (statements, or reads of a table) read most often of late,
   *     with their own delays
   */
  public record HedgingDescriptor(
      long sent,
      long won,
      long denied,
      long losersCancelled,
      double maxExtra,
      double budgetLeft,
      double extraCallRate,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable Double delaySeconds,
      List<ShapeDescriptor> shapes) {

    static HedgingDescriptor of(Hedging hedging, boolean statements) {
      return new HedgingDescriptor(
          hedging.sent(),
          hedging.won(),
          hedging.denied(),
          hedging.losersCancelled(),
          hedging.maxExtra(),
          hedging.budgetLeft(),
          hedging.extraRate(),
          hedging.delay().map(SpannerTuningEndpoint::seconds).orElse(null),
          hedging.busiestShapes().stream()
              .map((shape) -> ShapeDescriptor.of(shape, statements))
              .toList());
    }
  }

  /**
   * One statement, or the reads of one table, index and columns, and its hedge delay.
   *
   * @param shape what names it without a value: {@code query} and the fingerprint of its normalized
   *     statement, or {@code read}, the table, the index if one, and the columns; cut at {@value
   *     #SHAPE_CHARACTERS} characters
   * @param statement a query's statement with every literal replaced by {@code ?} and no comment,
   *     cut at {@value #SHAPE_CHARACTERS} characters; absent unless {@code
   *     management.endpoint.spannertuning.show-statements} allows it, for a read, and for a
   *     statement that could not be read unambiguously
   * @param delaySeconds its own delay; {@code null} while it has too few samples and uses the
   *     shared one
   * @param samples its times to first response in the recent windows
   */
  public record ShapeDescriptor(
      String shape,
      @JsonInclude(JsonInclude.Include.NON_NULL) @Nullable String statement,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable Double delaySeconds,
      int samples) {

    static final int SHAPE_CHARACTERS = 120;

    static ShapeDescriptor of(Hedging.ShapeFigures shape, boolean statements) {
      return new ShapeDescriptor(
          cut(shape.shape()),
          statements ? shape.statement().map(ShapeDescriptor::cut).orElse(null) : null,
          shape.delay().map(SpannerTuningEndpoint::seconds).orElse(null),
          shape.samples());
    }

    private static String cut(String text) {
      return (text.length() > SHAPE_CHARACTERS) ? text.substring(0, SHAPE_CHARACTERS) + "…" : text;
    }
  }

  private static double seconds(Duration duration) {
    return duration.toNanos() / 1e9;
  }

  /**
   * A client's experiment, running or the last one: {@link ExperimentResult}, with {@code reason},
   * {@code feature}, {@code fleet}, {@code arm} and {@code sliceIndex} always present ({@code null}
   * when they do not apply). Figures that need more pairs than there are are left out.
   */
  public record ExperimentDescriptor(
      String state,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable String reason,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable String feature,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable String fleet,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable String arm,
      @JsonInclude(JsonInclude.Include.ALWAYS) @Nullable Long sliceIndex,
      int pairs,
      String slice,
      String duration,
      String carryOver,
      Progress progress,
      PerArm<Long> cancelsOfFinishedStreams,
      PerArm<Long> goAways,
      Map<String, KindResult> results,
      List<SliceStart> sliceStarts,
      List<String> warnings)
      implements OperationResponseBody {

    @Nullable
    static ExperimentDescriptor of(@Nullable ExperimentResult result) {
      if (result == null) {
        return null;
      }
      return new ExperimentDescriptor(
          result.state(),
          result.reason(),
          result.feature(),
          result.fleet(),
          result.arm(),
          result.sliceIndex(),
          result.pairs(),
          result.slice(),
          result.duration(),
          result.carryOver(),
          result.progress(),
          result.cancelsOfFinishedStreams(),
          result.goAways(),
          result.results(),
          result.sliceStarts(),
          result.warnings());
    }
  }

  /**
   * The JDBC driver's client of a DataSource: the database of its URL (no host, options or
   * credentials) and the driver's version.
   */
  public record JdbcDescriptor(String database, String googleCloudSpannerJdbc) {

    static JdbcDescriptor of(TunedJdbcClient client) {
      return new JdbcDescriptor(client.database(), client.driverVersion());
    }
  }

  /** JSON has no NaN: no calls in the window shows as null, and the key stays. */
  private static Double orNull(double value) {
    return Double.isNaN(value) ? null : value;
  }

  /**
   * A feature's effective state: {@code on}, {@code native}, {@code off} (with the property that
   * turned it off) or {@code unsupported} (with the reason).
   */
  public record FeatureDescriptor(
      String state, @Nullable String reason, @Nullable String property) {

    static FeatureDescriptor of(Feature feature, FeatureState value) {
      String state = value.status().name().toLowerCase(Locale.ROOT);
      if (value.byConfiguration()) {
        String property = "spanner.tuning." + feature.id() + ".enabled";
        return new FeatureDescriptor(state, property + "=false", property);
      }
      return new FeatureDescriptor(state, value.reason(), null);
    }
  }

  /** Versions of the client libraries on the classpath. */
  public record VersionsDescriptor(
      String googleCloudSpanner, @Nullable String grpcGcp, String gax, String grpcJava) {

    static VersionsDescriptor of(ClientVersions versions) {
      return new VersionsDescriptor(
          versions.spanner(), versions.grpcGcp(), versions.gax(), versions.grpc());
    }
  }

  /**
   * The client's channel pool.
   *
   * @param kind {@code grpc-gcp} or {@code gax}
   * @param size the channels that take new calls now: a fixed pool's size, or what grpc-gcp's
   *     dynamic pool has grown or shrunk to
   * @param dynamic whether the pool's channels come and go with its load
   */
  public record PoolDescriptor(String kind, int size, boolean dynamic) {}

  /**
   * One sub-channel's load.
   *
   * @param state {@code active} while it takes new calls; {@code draining} once grpc-gcp's dynamic
   *     pool removed it and it ends the calls it has before the pool closes it
   * @param drainingStreams streams closed at their last message that wait for their trailers
   * @param latencyEstimateSeconds the time-decayed average of its time to first response, failed
   *     calls counted as a penalty
   * @param connectedSince when its current connection came up (ISO-8601), or {@code null} while it
   *     has none or where warm-up is off
   * @param primed whether its current connection is primed, so that routing sends it reads; {@code
   *     null} where warm-up is off
   */
  public record ChannelDescriptor(
      int channel,
      String state,
      int activeStreams,
      int drainingStreams,
      long calls,
      double latencyEstimateSeconds,
      String connectedSince,
      Boolean primed) {

    static ChannelDescriptor of(ChannelStats stats) {
      ChannelWarmth warmth = stats.warmth();
      long connected = (warmth != null) ? warmth.connectedSinceMillis() : -1;
      return new ChannelDescriptor(
          stats.index(),
          stats.state().id(),
          stats.activeStreams(),
          stats.drainingStreams(),
          stats.calls(),
          stats.latencyEstimateNanos() / 1e9,
          (connected >= 0) ? Instant.ofEpochMilli(connected).toString() : null,
          (warmth != null) ? warmth.isWarm() : null);
    }
  }
}
