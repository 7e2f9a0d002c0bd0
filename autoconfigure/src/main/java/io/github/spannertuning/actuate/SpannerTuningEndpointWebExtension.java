package io.github.spannertuning.actuate;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ClientDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.RefusedRequestException;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.SpannerTuningDescriptor;
import java.security.Principal;
import java.util.Set;
import java.util.function.Supplier;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;
import org.springframework.lang.Nullable;

/**
 * The endpoint over HTTP: write operations where a refused request answers 400 with its reason in
 * the body ({@code {"status":400,"error":"Bad Request","message":"...","field":"slice"}}), and read
 * operations that show the statements' text only to whom the configuration allows.
 *
 * <p>Why an extension: Actuator turns the {@link InvalidEndpointRequestException} the endpoint
 * throws into a 400 whose body Boot's error handling fills, and with its defaults ({@code
 * server.error.include-message=never}) that body has no message. Answering with a {@link
 * WebEndpointResponse} that carries the reason puts it where the caller reads it, whatever the
 * application's error settings. Doing it in a web extension, as Boot does for its health and
 * environment endpoints, keeps the endpoint itself free of HTTP: over JMX a refusal stays the
 * exception, whose message JMX shows. Its operations replace the endpoint's on the same paths;
 * successful answers are the endpoint's, unchanged. Each field of a body is taken as text, so that
 * a missing or malformed one is refused here with its reason, not by Actuator's conversion before
 * the operation runs.
 *
 * <p>Its read operations replace the endpoint's too: they decide, per request, whether the
 * statements hedging times are shown with their text, as Boot's {@code
 * EnvironmentEndpointWebExtension} decides whether values are: {@code
 * management.endpoint.spannertuning.show-statements} ({@link Show}) against the request's principal
 * and {@code management.endpoint.spannertuning.roles}.
 */
@EndpointWebExtension(endpoint = SpannerTuningEndpoint.class)
public class SpannerTuningEndpointWebExtension {

  private static final int BAD_REQUEST = WebEndpointResponse.STATUS_BAD_REQUEST;

  private final SpannerTuningEndpoint endpoint;

  private final Show showStatements;

  private final Set<String> roles;

  /**
   * @param showStatements when the normalized text of the statements hedging times is shown
   * @param roles the roles a principal needs for {@link Show#WHEN_AUTHORIZED}; empty, any
   *     authenticated principal
   */
  public SpannerTuningEndpointWebExtension(
      SpannerTuningEndpoint endpoint, Show showStatements, Set<String> roles) {
    this.endpoint = endpoint;
    this.showStatements = showStatements;
    this.roles = roles;
  }

  /** See {@link SpannerTuningEndpoint#clients()}. */
  @ReadOperation
  public SpannerTuningDescriptor clients(SecurityContext securityContext) {
    return this.endpoint.clients(statements(securityContext));
  }

  /** See {@link SpannerTuningEndpoint#client(String)}. */
  @ReadOperation
  @Nullable
  public ClientDescriptor client(SecurityContext securityContext, @Selector String client) {
    return this.endpoint.client(client, statements(securityContext));
  }

  private boolean statements(SecurityContext securityContext) {
    return this.showStatements.isShown(securityContext, this.roles);
  }

  /** See {@link SpannerTuningEndpoint#switchFeature}. */
  @WriteOperation
  public WebEndpointResponse<Object> switchFeature(
      SecurityContext securityContext,
      @Selector String client,
      @Nullable String feature,
      @Nullable String enabled,
      @Nullable Principal principal) {
    return answer(
        () ->
            this.endpoint.switchFeature(
                client,
                feature,
                SpannerTuningEndpoint.enabled(client, feature, enabled),
                principal,
                statements(securityContext)));
  }

  /** See {@link SpannerTuningEndpoint#startExperiment}. */
  @WriteOperation
  public WebEndpointResponse<Object> startExperiment(
      @Selector String client,
      @Selector String experiment,
      @Nullable String duration,
      @Nullable String slice,
      @Nullable String feature,
      @Nullable String fleet,
      @Nullable Principal principal) {
    return answer(
        () ->
            this.endpoint.startExperiment(
                client, experiment, duration, slice, feature, fleet, principal));
  }

  /** See {@link SpannerTuningEndpoint#stopExperiment}. */
  @DeleteOperation
  public WebEndpointResponse<Object> stopExperiment(
      @Selector String client, @Selector String experiment, @Nullable Principal principal) {
    return answer(() -> this.endpoint.stopExperiment(client, experiment, principal));
  }

  private static WebEndpointResponse<Object> answer(Supplier<Object> operation) {
    try {
      return new WebEndpointResponse<>(operation.get());
    } catch (InvalidEndpointRequestException ex) {
      String field = (ex instanceof RefusedRequestException refused) ? refused.field() : null;
      return new WebEndpointResponse<>(
          new Refusal(BAD_REQUEST, "Bad Request", ex.getReason(), field), BAD_REQUEST);
    }
  }

  /**
   * The body of a refused request, shaped as Boot's error responses are.
   *
   * @param status the HTTP status, 400
   * @param error the status's reason phrase
   * @param message why the request was refused, and what the field accepts
   * @param field the request body's field the refusal concerns, when it concerns one
   */
  public record Refusal(
      int status,
      String error,
      String message,
      @JsonInclude(JsonInclude.Include.NON_NULL) @Nullable String field)
      implements OperationResponseBody {}
}
