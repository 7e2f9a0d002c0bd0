package io.github.spannertuning.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * New JVMs on this JVM's class path, for checks of what a JVM leaves running when it exits, and
 * shell wrappers around a command, as gcloud starts the emulator: the process the caller starts is
 * then not the one that does the work.
 */
public final class ChildJvm {

  private static final Duration TIMEOUT = Duration.ofSeconds(120);

  private ChildJvm() {}

  /** The command that runs {@code mainClass} with {@code args} in a new JVM on this class path. */
  public static List<String> command(Class<?> mainClass, String... args) {
    String java =
        ProcessHandle.current()
            .info()
            .command()
            .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    String classPath =
        System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> command = new ArrayList<>(List.of(java, "-cp", classPath, mainClass.getName()));
    command.addAll(List.of(args));
    return command;
  }

  /**
   * Runs {@code mainClass} in a new JVM until it exits, which must be with status 0 within 120 s.
   *
   * @return the lines it wrote to its standard output and error
   */
  public static List<String> run(Class<?> mainClass, String... args)
      throws IOException, InterruptedException {
    Path output = Files.createTempFile("child-jvm", ".log");
    try (ChildProcess child =
        ChildProcess.start(
            new ProcessBuilder(command(mainClass, args))
                .redirectErrorStream(true)
                .redirectOutput(output.toFile()))) {
      Process process = child.process();
      if (!process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        throw new IllegalStateException(
            mainClass.getName() + " still running after " + TIMEOUT + ":\n" + read(output));
      }
      if (process.exitValue() != 0) {
        throw new IllegalStateException(
            mainClass.getName() + " exited with " + process.exitValue() + ":\n" + read(output));
      }
      return Files.readAllLines(output);
    } finally {
      Files.deleteIfExists(output);
    }
  }

  /**
   * Writes an executable shell script to {@code dir} that runs {@code command} with the script's
   * arguments as its child, not in its place, and waits for it.
   */
  public static Path wrapper(Path dir, List<String> command) throws IOException {
    String quoted =
        command.stream()
            .map((word) -> "'" + word.replace("'", "'\\''") + "'")
            .collect(Collectors.joining(" "));
    Path script = Files.createTempFile(dir, "wrapper", ".sh");
    Files.writeString(script, "#!/bin/sh\n" + quoted + " \"$@\" &\nwait\n");
    Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
    return script;
  }

  /** {@code pid <n>} lines, one per process of the tree under {@code root}, itself first. */
  public static List<String> describeTree(ProcessHandle root) {
    List<String> lines = new ArrayList<>();
    lines.add("pid " + root.pid());
    root.descendants().forEach((handle) -> lines.add("pid " + handle.pid()));
    return lines;
  }

  /** The process ids in the {@link #describeTree} lines among {@code lines}. */
  public static List<Long> pids(List<String> lines) {
    return lines.stream()
        .filter((line) -> line.startsWith("pid "))
        .map((line) -> Long.parseLong(line.substring(4).trim()))
        .toList();
  }

  /** Those of {@code pids} that are still running. */
  public static List<ProcessHandle> stillRunning(List<Long> pids) {
    return pids.stream()
        .flatMap((pid) -> ProcessHandle.of(pid).stream())
        .filter(ProcessHandle::isAlive)
        .toList();
  }

  private static String read(Path output) throws IOException {
    return Files.readString(output);
  }
}
