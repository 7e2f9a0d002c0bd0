package io.github.spannertuning.autoconfigure;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of the {@code spannertuning} endpoint beyond Boot's own keys for every endpoint
 * ({@code access}, {@code cache.time-to-live}), as {@code management.endpoint.env.show-values} and
 * {@code roles} are for Boot's {@code env} endpoint.
 */
@ConfigurationProperties(prefix = "management.endpoint.spannertuning")
public class SpannerTuningEndpointProperties {

  static final String PREFIX = "management.endpoint.spannertuning";

  static final String SHOW_STATEMENTS_ALLOWED = "never, when-authorized or always";

  /** What each key accepts: the failure analyzer's advice. */
  static final Map<String, String> ACCEPTS =
      Map.of(
          PREFIX + ".show-statements",
          SHOW_STATEMENTS_ALLOWED,
          PREFIX + ".roles",
          "a comma-separated list of role names");

  /**
   * When the endpoint shows the text of the statements hedging times, with every literal replaced
   * by ?: never (the default: a fingerprint of each only), when-authorized or always. A statement's
   * text can hold an application's data where it writes values into its SQL.
   */
  private Show showStatements = Show.NEVER;

  /**
   * Roles a user needs for show-statements=when-authorized; empty, any authenticated user. With
   * Spring Security, a role is checked as an authority too.
   */
  private final Set<String> roles = new HashSet<>();

  public Show getShowStatements() {
    return this.showStatements;
  }

  public void setShowStatements(Show showStatements) {
    this.showStatements = showStatements;
  }

  public Set<String> getRoles() {
    return this.roles;
  }
}
