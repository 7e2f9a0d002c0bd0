package io.github.spannertuning.testing;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A process a test starts, stopped with every process it started in turn on {@link #close()} and,
 * at the latest, when the JVM exits.
 *
 * <p>A JVM may load a test class without running its tests, and so without its {@code @AfterAll}:
 * Spring's test AOT processing does, and a static initializer that starts a process there leaves it
 * running. The shutdown hook covers every way a JVM exits normally (the last thread ends, {@code
 * System.exit}, SIGTERM, SIGINT); nothing in the JVM runs on SIGKILL.
 */
public final class ChildProcess implements AutoCloseable {

  private static final Duration GRACE = Duration.ofSeconds(10);

  private final Process process;

  private final Thread shutdownHook;

  private ChildProcess(Process process) {
    this.process = process;
    this.shutdownHook = new Thread(this::stopQuietly, "stop process " + process.pid());
  }

  /**
   * Starts a process, stopped with its descendants when the JVM exits unless {@link #close()}
   * stopped it before.
   */
  public static ChildProcess start(ProcessBuilder builder) throws IOException {
    ChildProcess child = new ChildProcess(builder.start());
    try {
      Runtime.getRuntime().addShutdownHook(child.shutdownHook);
    } catch (IllegalStateException exiting) {
      child.stopQuietly();
      throw exiting;
    }
    return child;
  }

  public Process process() {
    return this.process;
  }

  /**
   * Stops the process and its descendants (SIGTERM, then SIGKILL after 10 s) and waits until they
   * have exited.
   */
  @Override
  public void close() throws InterruptedException {
    try {
      Runtime.getRuntime().removeShutdownHook(this.shutdownHook);
    } catch (IllegalStateException exiting) {
      // The JVM is exiting: the hook stops the processes too; this waits for them as well.
    }
    stop();
  }

  private synchronized void stop() throws InterruptedException {
    // Listed before any is stopped: a wrapper's children pass to init when it exits, and are then
    // no longer among its descendants.
    List<ProcessHandle> tree = new ArrayList<>();
    tree.add(this.process.toHandle());
    this.process.descendants().forEach(tree::add);
    tree.forEach(ProcessHandle::destroy);
    if (!awaitExit(tree)) {
      tree.forEach(ProcessHandle::destroyForcibly);
      awaitExit(tree);
    }
  }

  private void stopQuietly() {
    try {
      stop();
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
    }
  }

  private static boolean awaitExit(List<ProcessHandle> tree) throws InterruptedException {
    long deadline = System.nanoTime() + GRACE.toNanos();
    while (tree.stream().anyMatch(ProcessHandle::isAlive)) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }
}
