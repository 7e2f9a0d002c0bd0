package io.github.spannertuning.benchmarks;

import java.io.File;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The CPU-limited client: which cores the client JVM and the frontend JVM get, the {@code taskset}
 * prefix that pins a process to them, and what {@code /proc} says each process actually ran on.
 * Linux only; where {@code taskset} or the cores are missing, {@link #split} says why, and the
 * CPU-limited part of the run is skipped rather than run unpinned.
 */
final class CpuLimit {

  private CpuLimit() {}

  /** The client's cores and the frontend's, or why the machine cannot give them. */
  record Split(String clientCores, String frontendCores, String skipped) {}

  /**
   * The first {@code clientCpus} cores this process may use for the client, the rest for the
   * frontend.
   */
  static Split split(int clientCpus) {
    String taskset = taskset();
    if (taskset == null) {
      return new Split(
          null,
          null,
          "taskset (util-linux) is not on the PATH, so the client JVM cannot"
              + " be pinned; install util-linux or pass --client-cpus 0");
    }
    String allowed = allowed("self");
    if (allowed == null) {
      return new Split(null, null, "/proc/self/status has no Cpus_allowed_list (not Linux?)");
    }
    List<Integer> cores = parse(allowed);
    if (cores.size() <= clientCpus) {
      return new Split(
          null,
          null,
          "this process may use "
              + cores.size()
              + " core(s) ("
              + allowed
              + "), so "
              + clientCpus
              + " for the client leaves none for the frontend");
    }
    return new Split(
        format(cores.subList(0, clientCpus)),
        format(cores.subList(clientCpus, cores.size())),
        null);
  }

  /** The command prefix that runs a program on the given cores only. */
  static List<String> pinned(String cores) {
    return List.of(taskset(), "-c", cores);
  }

  private static String taskset() {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path candidate = Paths.get(dir, "taskset");
      if (Files.isExecutable(candidate)) {
        return candidate.toString();
      }
    }
    return null;
  }

  /** {@code Cpus_allowed_list} of {@code /proc/<pid>/status}, or {@code null}. */
  static String allowed(String pid) {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc", pid, "status"))) {
        if (line.startsWith("Cpus_allowed_list:")) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException | RuntimeException ex) {
      // Not Linux, or the process is gone: there is nothing to read.
    }
    return null;
  }

  /**
   * How many of the process's threads last ran on each core (field 39, {@code processor}, of {@code
   * /proc/<pid>/task/<tid>/stat}).
   */
  static Map<Integer, Integer> lastCores(String pid) {
    Map<Integer, Integer> counts = new TreeMap<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Paths.get("/proc", pid, "task"))) {
      for (Path task : tasks) {
        try {
          String stat = Files.readString(task.resolve("stat"));
          // The command name, in parentheses, may hold spaces: count fields after it (field 3 on).
          String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
          counts.merge(Integer.parseInt(fields[39 - 3]), 1, Integer::sum);
        } catch (IOException | RuntimeException ex) {
          // The thread ended between the listing and the read.
        }
      }
    } catch (IOException | RuntimeException ex) {
      // Not Linux, or the process is gone.
    }
    return counts;
  }

  /** "0-1,4" to [0, 1, 4]. */
  static List<Integer> parse(String list) {
    TreeSet<Integer> cores = new TreeSet<>();
    for (String part : list.split(",")) {
      String[] range = part.trim().split("-");
      int from = Integer.parseInt(range[0]);
      int to = (range.length > 1) ? Integer.parseInt(range[1]) : from;
      for (int core = from; core <= to; core++) {
        cores.add(core);
      }
    }
    return new ArrayList<>(cores);
  }

  static String format(List<Integer> cores) {
    return cores.stream().map(String::valueOf).collect(Collectors.joining(","));
  }

  /**
   * Where the client JVM (this one) and the frontend JVM ran, sampled at the end of every window:
   * each process's allowed cores, and per core how many thread samples found a thread last run
   * there.
   */
  static final class Watch {

    private final String frontendPid;

    private final Map<Integer, Integer> clientSamples = new TreeMap<>();

    private final Map<Integer, Integer> frontendSamples = new TreeMap<>();

    private final TreeSet<String> clientAllowed = new TreeSet<>();

    private final TreeSet<String> frontendAllowed = new TreeSet<>();

    Watch(long frontendPid) {
      this.frontendPid = Long.toString(frontendPid);
    }

    void sample() {
      sample("self", this.clientAllowed, this.clientSamples);
      sample(this.frontendPid, this.frontendAllowed, this.frontendSamples);
    }

    private static void sample(String pid, TreeSet<String> allowed, Map<Integer, Integer> samples) {
      String list = CpuLimit.allowed(pid);
      if (list != null) {
        allowed.add(list);
      }
      lastCores(pid).forEach((core, count) -> samples.merge(core, count, Integer::sum));
    }

    Map<String, Object> toJson() {
      return Map.of(
          "client",
          Map.of(
              "cpusAllowed", String.join(" / ", this.clientAllowed),
              "availableProcessors", Runtime.getRuntime().availableProcessors(),
              "threadSamplesByLastCore", this.clientSamples),
          "frontend",
          Map.of(
              "cpusAllowed",
              String.join(" / ", this.frontendAllowed),
              "threadSamplesByLastCore",
              this.frontendSamples));
    }
  }
}
