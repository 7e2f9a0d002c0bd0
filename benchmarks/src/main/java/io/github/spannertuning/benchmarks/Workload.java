package io.github.spannertuning.benchmarks;

import java.util.List;

/**
 * One reference workload, scaled to this machine: a base arrival rate with periodic bursts, a
 * number of client threads, and optionally one degraded connection.
 *
 * @param referenceRate the reference result's base rate, for the report's scale column
 */
record Workload(
    String name,
    String description,
    double referenceRate,
    double baseRate,
    double burstMultiplier,
    double burstPeriodSeconds,
    double burstLengthSeconds,
    int threads,
    long degradeMillis,
    List<Variant> variants) {

  /** Arrivals per second at this many seconds into a window. */
  double rateAt(double seconds) {
    return inBurst(seconds) ? this.baseRate * this.burstMultiplier : this.baseRate;
  }

  /** Bursts start half a period in, so every window sees base load first. */
  boolean inBurst(double seconds) {
    if (this.burstMultiplier <= 1.0 || this.burstLengthSeconds <= 0) {
      return false;
    }
    double phase = (seconds + this.burstPeriodSeconds / 2) % this.burstPeriodSeconds;
    return phase >= this.burstPeriodSeconds - this.burstLengthSeconds;
  }

  /** The same shape at another base rate, with the given threads and variants. */
  Workload rebased(double rate, int threads, List<Variant> variants) {
    return new Workload(
        this.name,
        this.description,
        this.referenceRate,
        rate,
        this.burstMultiplier,
        this.burstPeriodSeconds,
        this.burstLengthSeconds,
        threads,
        this.degradeMillis,
        variants);
  }

  double scale() {
    return this.baseRate / this.referenceRate;
  }
}
