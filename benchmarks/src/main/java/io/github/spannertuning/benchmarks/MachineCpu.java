package io.github.spannertuning.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;

/**
 * A reading of the machine's CPU time ({@code /proc/stat}'s {@code cpu} line) and this process's:
 * two of them give a window's CPU steal, and the CPU time other processes took, as shares of the
 * machine. Steal is time the hypervisor gave another guest while this one had work; a round with
 * much of it measured a slower machine.
 */
record MachineCpu(long[] jiffies, long processNanos) {

  /** Steal, and other processes' CPU, as shares of the machine's time over a window. */
  record Share(double steal, double others) {

    /** Rounds whose steal is over this are marked in the reports. */
    static final double MARK = 0.05;
  }

  /** The CPU's model name from {@code /proc/cpuinfo}, for a report's machine line. */
  static String model() {
    try {
      return Files.readAllLines(Paths.get("/proc/cpuinfo")).stream()
          .filter((l) -> l.startsWith("model name"))
          .map((l) -> l.substring(l.indexOf(':') + 1).trim())
          .findFirst()
          .orElse("unknown CPU");
    } catch (IOException ex) {
      return "unknown CPU";
    }
  }

  static MachineCpu now() {
    long[] values = new long[8];
    try {
      String cpu =
          Files.readAllLines(Paths.get("/proc/stat")).stream()
              .filter((l) -> l.startsWith("cpu "))
              .findFirst()
              .orElse("");
      String[] fields = cpu.trim().split("\\s+");
      for (int i = 0; i < values.length && i + 1 < fields.length; i++) {
        values[i] = Long.parseLong(fields[i + 1]);
      }
    } catch (IOException | RuntimeException ex) {
      Arrays.fill(values, 0);
    }
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    return new MachineCpu(values, os.getProcessCpuTime());
  }

  /**
   * From this reading to a later one: user nice system idle iowait irq softirq steal, in USER_HZ
   * (100 a second); {@code accountedNanos} is CPU time of other known processes (the frontend's)
   * not to count as others'. NaN where {@code /proc/stat} cannot be read.
   */
  Share until(MachineCpu later, long accountedNanos) {
    long total = 0;
    long[] delta = new long[8];
    for (int i = 0; i < 8; i++) {
      delta[i] = later.jiffies[i] - this.jiffies[i];
      total += delta[i];
    }
    if (total <= 0) {
      return new Share(Double.NaN, Double.NaN);
    }
    long busy = total - delta[3] - delta[4] - delta[7];
    double knownJiffies = (later.processNanos - this.processNanos + accountedNanos) / 1e7;
    return new Share(delta[7] / (double) total, Math.max(0, busy - knownJiffies) / total);
  }
}
