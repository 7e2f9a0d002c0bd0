package io.github.spannertuning.testing;

import java.util.Objects;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link MockSpannerServer} for the tests of a class: registered on a static field it serves the
 * whole class, on an instance field each test.
 *
 * <pre>{@code
 * @RegisterExtension
 * static final MockSpannerServerExtension server = new MockSpannerServerExtension();
 * }</pre>
 */
public final class MockSpannerServerExtension
    implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {

  /** Starts a server. */
  @FunctionalInterface
  public interface Starter {

    /**
     * Starts the server.
     *
     * @return the started server
     * @throws Exception if it cannot start
     */
    MockSpannerServer start() throws Exception;
  }

  private final Starter starter;

  private MockSpannerServer server;

  private boolean perClass;

  /** The production-like server of {@link MockSpannerServer#start()}. */
  public MockSpannerServerExtension() {
    this(MockSpannerServer::start);
  }

  /**
   * A server started by {@code starter}, for example {@code () ->
   * MockSpannerServer.builder().countFrames().start()}.
   *
   * @param starter what starts the server
   */
  public MockSpannerServerExtension(Starter starter) {
    this.starter = Objects.requireNonNull(starter, "starter");
  }

  /**
   * The running server.
   *
   * @return the server
   */
  public MockSpannerServer get() {
    if (this.server == null) {
      throw new IllegalStateException("the server runs only while a test of its class runs");
    }
    return this.server;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    this.perClass = true;
    this.server = this.starter.start();
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    stop();
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    if (!this.perClass) {
      this.server = this.starter.start();
    }
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    if (!this.perClass) {
      stop();
    }
  }

  private void stop() throws InterruptedException {
    MockSpannerServer running = this.server;
    this.server = null;
    if (running != null) {
      running.close();
    }
  }
}
