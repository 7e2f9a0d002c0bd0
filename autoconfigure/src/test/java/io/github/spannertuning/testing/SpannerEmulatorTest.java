package io.github.spannertuning.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link SpannerEmulator} leaves running: nothing, once it is closed or its JVM has exited,
 * even when the binary is a wrapper that starts the emulator as its child. The stand-in emulator (a
 * JVM listening on the port) runs everywhere; the official one where the machine has it.
 *
 * <p>Tagged {@code default-line}: no Spanner client takes part, so the suite runs it once.
 */
@Tag("default-line")
class SpannerEmulatorTest {

  @TempDir Path dir;

  private final List<Long> started = new ArrayList<>();

  @AfterEach
  void stopLeftovers() {
    // So that a failing check does not leave its processes running either.
    ChildJvm.stillRunning(this.started).forEach(ProcessHandle::destroyForcibly);
  }

  @Test
  void closeStopsTheWrapperAndTheEmulatorItStarted() throws Exception {
    SpannerEmulator emulator = SpannerEmulator.start(standIn());
    this.started.addAll(ChildJvm.pids(ChildJvm.describeTree(emulator.process())));
    assertThat(this.started).as("wrapper and emulator").hasSize(2);

    emulator.close();

    assertThat(ChildJvm.stillRunning(this.started)).isEmpty();
  }

  @Test
  void aJvmThatExitsWithoutClosingTheStandInLeavesNothingRunning() throws Exception {
    assertNothingLeftAfterExit(standIn());
  }

  @Test
  void aJvmThatExitsWithoutClosingTheEmulatorLeavesNothingRunning() throws Exception {
    assumeTrue(SpannerEmulator.find().isPresent(), SpannerEmulator.notFoundMessage());
    assertNothingLeftAfterExit(
        ChildJvm.wrapper(this.dir, List.of(SpannerEmulator.find().get().toString())));
  }

  private void assertNothingLeftAfterExit(Path binary) throws Exception {
    this.started.addAll(ChildJvm.pids(ChildJvm.run(StartsAndExits.class, binary.toString())));
    assertThat(this.started).as("wrapper and emulator").hasSizeGreaterThanOrEqualTo(2);
    // The hook has waited for them to exit; init may take a moment to reap the orphaned one.
    await()
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(ChildJvm.stillRunning(this.started)).isEmpty());
  }

  private Path standIn() throws Exception {
    return ChildJvm.wrapper(this.dir, ChildJvm.command(StandInEmulator.class));
  }

  /** Starts the emulator binary it is given, prints its process tree, and exits without close. */
  static final class StartsAndExits {

    public static void main(String[] args) throws Exception {
      SpannerEmulator emulator = SpannerEmulator.start(Path.of(args[0]));
      ChildJvm.describeTree(emulator.process()).forEach(System.out::println);
    }
  }
}
