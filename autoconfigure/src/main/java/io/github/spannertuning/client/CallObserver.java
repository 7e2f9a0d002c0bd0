package io.github.spannertuning.client;

import java.util.List;
import java.util.function.Supplier;

/**
 * Times one client's calls for an application that observes them: each operation (one call of an
 * RPC method, with its retries, a stream's resumes and a hedged read's second call) and each of its
 * attempts (one gRPC call), and the frontend's own time that Spanner reports on each response. The
 * hooks of {@code client} and {@code pool} call it; {@code io.github.spannertuning.observation}
 * implements it with Micrometer's Observation API. It names no Micrometer type, so a client built
 * without one (a plain-Java client with no observer) loads none and does nothing of this per call.
 */
public interface CallObserver {

  /** What the operation or attempt ended with where it ended without an error. */
  String NO_ERROR = "none";

  /** An operation or attempt being timed. */
  interface Call {

    /**
     * Ends the call.
     *
     * @param errorType the name of the gRPC status code it ended with, or {@link #NO_ERROR}
     */
    void stop(String errorType);
  }

  /** One gRPC call. */
  interface Attempt extends Call {

    /**
     * The session (or database) the call is on, by its resource name, once its request names it:
     * the attempt is timed from then.
     */
    void on(String session);

    /**
     * The frontend's times from the response's {@code server-timing} header, told before {@link
     * #stop}: {@code gfeNanos} is {@link ServerTiming#MISSING} where the header or its {@code
     * gfet4t7} entry was missing or malformed, {@code afeNanos} where Spanner sent no {@code afe}.
     */
    void serverTiming(long gfeNanos, long afeNanos);
  }

  /**
   * Starts timing an operation of an RPC method (its bare name, e.g. {@code Commit}) on a session
   * or database, by its resource name.
   */
  Call operation(String method, String session);

  /** An attempt of an RPC method, timed once its request names its session ({@link Attempt#on}). */
  Attempt attempt(String method);

  /** The operations timed so far, per RPC method, for the endpoint. */
  List<OperationSummary> operations();

  /** Makes the observer of each client. */
  interface Factory {

    /**
     * The observer of one client.
     *
     * @param clientName the client's name as the endpoint names it, read when a call ends: a client
     *     is named once it is registered, after it is built
     */
    CallObserver forClient(Supplier<String> clientName);
  }

  /**
   * The operations of one RPC method: how many ended, their median and 99th percentile over the
   * recent ones, and the frontend's share of their time ({@code null} where Spanner reported none).
   */
  record OperationSummary(
      String method, long count, double p50Seconds, double p99Seconds, Double frontendShare) {}

  /** An observer that times nothing. */
  CallObserver NONE =
      new CallObserver() {

        @Override
        public Call operation(String method, String session) {
          return NoCall.INSTANCE;
        }

        @Override
        public Attempt attempt(String method) {
          return NoCall.INSTANCE;
        }

        @Override
        public List<OperationSummary> operations() {
          return List.of();
        }
      };

  /** The call of {@link #NONE}. */
  enum NoCall implements Attempt {
    INSTANCE;

    @Override
    public void stop(String errorType) {}

    @Override
    public void on(String session) {}

    @Override
    public void serverTiming(long gfeNanos, long afeNanos) {}
  }
}
