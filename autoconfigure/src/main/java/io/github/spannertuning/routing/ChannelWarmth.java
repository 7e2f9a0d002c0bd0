package io.github.spannertuning.routing;

/**
 * Whether one channel's connection is warm: connected, and primed with one cheap call since it
 * connected, so that a read sent there does not wait for the connection's set-up. Routing sends no
 * read to a cold channel while a warm one has room and is not hot ({@link Connection#isCold}); one
 * connected and being primed shares a burst that makes every warm one hot ({@link
 * Connection#isPriming}).
 *
 * <p>The decisions only: the hook into the client reports what its channel does ({@link #ready},
 * {@link #notReady}, {@link #primed}, {@link #primeFailed}) and carries out what each answer says:
 * connect the channel, send the priming call, or nothing. Times are the caller's clock, in
 * milliseconds.
 *
 * <ul>
 *   <li>A channel starts cold. Once it is connected and a session to prime with is known ({@link
 *       #sessionKnown}), it is primed; when the priming call answers, it is warm.
 *   <li>When its connection goes (a GOAWAY, as Google's frontends send about hourly, or a break),
 *       it is cold at once and is connected again at once, not when the next read needs it; its new
 *       connection is primed as the first one was.
 *   <li>A channel due for a refresh ({@link ConnectionRefresh}) is cold at once and lets its
 *       connection go ({@link Action#REFRESH}): its calls in flight finish there, and it connects
 *       again and is primed as after a GOAWAY. A connection lost otherwise tells the refresh the
 *       age at which the server retired it.
 *   <li>A priming call that fails is sent again, up to {@link #MAX_PRIME_ATTEMPTS} times since the
 *       channel connected; after that the channel is taken as warm, so that routing never keeps
 *       away from a connection it cannot prime (fail open).
 * </ul>
 *
 * <p>Thread-safe: the channel's state callbacks and the priming call's answer may come on different
 * threads.
 */
public final class ChannelWarmth {

  /** Priming calls sent per connection before the channel is taken as warm anyway. */
  public static final int MAX_PRIME_ATTEMPTS = 3;

  /** What the hook does next for this channel. */
  public enum Action {
    NONE,

    /** Ask the channel to connect now. */
    CONNECT,

    /** Send the priming call on this channel. */
    PRIME,

    /**
     * Let the channel's connection go, its calls in flight finishing there, and connect again: a
     * refresh before the server retires it.
     */
    REFRESH
  }

  /** Where the channel is. */
  public enum State {
    /** Not connected. */
    COLD,

    /** Connected; not primed yet (no session to prime with, or its priming call in flight). */
    CONNECTED,

    /** Connected and primed, or taken as warm after its priming attempts. */
    WARM
  }

  private final Connection connection;

  private final ConnectionRefresh refresh;

  /** The current connection's jitter, drawn when it connected. */
  private double refreshJitter;

  private long refreshes;

  private State state = State.COLD;

  private boolean priming;

  private int attempts;

  private boolean sessionKnown;

  private long connectedSinceMillis = -1;

  private long warmSinceMillis = -1;

  private long primed;

  private long failedPrimes;

  /** Whether the pool primed the channel before adding it: warm once first connected. */
  private boolean primedByPool;

  /** A channel not yet connected: cold from the start. */
  public ChannelWarmth(Connection connection) {
    this(connection, false, ConnectionRefresh.off());
  }

  /**
   * A channel cold from the start; {@code primedByPool} when the pool primed it itself before
   * adding it (grpc-gcp 1.20's dynamic pool): warm as soon as it is first connected, and primed
   * here only on later reconnects. Its connections are refreshed, and the server's age learned, by
   * {@code refresh}, which the pool's channels share.
   */
  public ChannelWarmth(Connection connection, boolean primedByPool, ConnectionRefresh refresh) {
    this.connection = connection;
    this.primedByPool = primedByPool;
    this.refresh = refresh;
    connection.markCold();
  }

  /** The channel's connection is up. */
  public synchronized Action ready(long nowMillis) {
    if (this.state == State.COLD) {
      this.state = State.CONNECTED;
      this.connectedSinceMillis = nowMillis;
      this.attempts = 0;
      this.refreshJitter = this.refresh.drawJitter();
      if (this.primedByPool) {
        this.primedByPool = false;
        warm(nowMillis);
        return Action.NONE;
      }
      this.connection.markPriming();
    }
    return primeIfDue();
  }

  /**
   * The channel's connection is not up: it went (GOAWAY or break) or is being set up. {@code idle}
   * when the channel is waiting for a call to connect, as grpc-java leaves it after a GOAWAY.
   */
  public synchronized Action notReady(boolean idle, long nowMillis) {
    if (this.state != State.COLD) {
      // Lost, not let go by a refresh (which made the channel cold already): the server's age.
      this.refresh.retired(nowMillis - this.connectedSinceMillis);
      this.state = State.COLD;
      this.connectedSinceMillis = -1;
      this.warmSinceMillis = -1;
      this.connection.markCold();
    }
    return idle ? Action.CONNECT : Action.NONE;
  }

  /**
   * A session to prime with is known now: every connected channel that is not warm is primed.
   *
   * @return {@link Action#PRIME} when this channel is to be primed now
   */
  public synchronized Action sessionKnown() {
    this.sessionKnown = true;
    return primeIfDue();
  }

  /** The priming call sent when the channel was connected answered. */
  public synchronized Action primed(long nowMillis) {
    this.priming = false;
    this.primed++;
    if (this.state == State.CONNECTED) {
      warm(nowMillis);
    }
    return Action.NONE;
  }

  /** The priming call failed: sent again, or after the last attempt the channel is warm anyway. */
  public synchronized Action primeFailed(long nowMillis) {
    this.priming = false;
    this.failedPrimes++;
    if (this.state != State.CONNECTED) {
      return Action.NONE;
    }
    if (this.attempts >= MAX_PRIME_ATTEMPTS) {
      warm(nowMillis);
      return Action.NONE;
    }
    return primeIfDue();
  }

  /**
   * The refresh picked this channel ({@link ConnectionRefresh#next}): cold from now, its connection
   * to be let go.
   *
   * @return {@link Action#REFRESH}, or {@link Action#NONE} when it is no longer warm
   */
  public synchronized Action refresh() {
    if (this.state != State.WARM) {
      return Action.NONE;
    }
    this.state = State.COLD;
    this.refreshes++;
    this.connectedSinceMillis = -1;
    this.warmSinceMillis = -1;
    this.connection.markCold();
    return Action.REFRESH;
  }

  /**
   * When this channel's connection is due for a refresh {@code afterMillis} after it connected,
   * less its jitter; {@code -1} while it is not warm.
   */
  synchronized long refreshDueMillis(long afterMillis) {
    if (this.state != State.WARM) {
      return -1;
    }
    return this.connectedSinceMillis + (long) (afterMillis * (1 - this.refreshJitter));
  }

  /** Connections refreshed before the server retired them, over the channel's life. */
  public synchronized long refreshCount() {
    return this.refreshes;
  }

  private Action primeIfDue() {
    if (this.state != State.CONNECTED || !this.sessionKnown || this.priming) {
      return Action.NONE;
    }
    this.priming = true;
    this.attempts++;
    return Action.PRIME;
  }

  private void warm(long nowMillis) {
    this.state = State.WARM;
    this.warmSinceMillis = nowMillis;
    this.connection.markWarm();
  }

  public synchronized State state() {
    return this.state;
  }

  /** When the current connection came up, or {@code -1} while there is none. */
  public synchronized long connectedSinceMillis() {
    return this.connectedSinceMillis;
  }

  /** When the channel became warm on its current connection, or {@code -1} while cold. */
  public synchronized long warmSinceMillis() {
    return this.warmSinceMillis;
  }

  /** Priming calls that answered, over the channel's life. */
  public synchronized long primedCount() {
    return this.primed;
  }

  /** Priming calls that failed, over the channel's life. */
  public synchronized long failedPrimes() {
    return this.failedPrimes;
  }

  public boolean isWarm() {
    return state() == State.WARM;
  }
}
