package io.github.spannertuning.routing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What the connections of one pool share ({@link PoolLevel}): the level that moves every estimate
 * alike, and the noise of one answer, which bounds a lone answer's weight and widens the picker's
 * band. On a clock the test sets, with latencies it feeds: a seeded sequence stands for the noise a
 * client short of CPU adds to every answer (a fresh JVM compiling, two cores for 200 threads).
 */
class PoolLevelTest {

  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  private static final int CHANNELS = 8;

  /** Spanner's 100 streams per connection less the stream-end guard's margin of a tenth. */
  private static final ChannelPicker.Rule RULE = ChannelPicker.Rule.defaults(90);

  private final PoolLevel pool = new PoolLevel();

  private long now = System.nanoTime();

  /**
   * A connection measured before every answer of the pool grew 10 ms slower (a burst on a client
   * short of CPU) is expected to take what one measured since takes, not 10 ms less: it would draw
   * the burst as the fastest.
   */
  @Test
  void anEstimateMovesWithThePoolsLevel() {
    ChannelLatency before = new ChannelLatency(this.now, this.pool);
    ChannelLatency since = new ChannelLatency(this.now, this.pool);
    ChannelLatency alone = new ChannelLatency(this.now);
    // A first answer a half-life after the estimate was made replaces it.
    this.now += 300 * MS;
    answer(before, 5 * MS);
    answer(alone, 5 * MS);
    for (int i = 0; i < 100; i++) {
      this.now += MS;
      answer(since, 15 * MS);
    }
    assertThat(since.estimateNanos()).isBetween(15 * MS, 15 * MS + MS / 10);
    assertThat(before.estimateNanos())
        .as("measured at 5 ms before every answer of its pool rose to 15 ms")
        .isBetween(since.estimateNanos() - MS, since.estimateNanos());
    assertThat(alone.estimateNanos()).as("a channel of no pool").isEqualTo(5 * MS);
  }

  /**
   * One answer 40 ms above answers of 4 to 6 ms (a pause of the client's that one call met) moves
   * its connection's estimate by at most four noises of a weight; a second such answer counts
   * whole, as a connection that slowed gives it.
   */
  @Test
  void aLoneAnswerFarAboveCountsOnlyAsFarAsTheNoise() {
    Connection[] pool = pool(CHANNELS);
    for (int i = 0; i < 4000; i++) {
      this.now += MS / 2;
      answer(pool[i % CHANNELS].latency(), ((i / CHANNELS) % 2 == 0) ? 4 * MS : 6 * MS);
    }
    assertThat(this.pool.noiseNanos())
        .as("noise of answers 1 ms off")
        .isBetween(MS / 2, 3 * MS / 2);
    ChannelLatency paused = pool[0].latency();
    ChannelLatency other = pool[1].latency();
    long apart = paused.estimateNanos() - other.estimateNanos();
    this.now += 4 * MS;
    answer(paused, 45 * MS);
    long once = paused.estimateNanos() - other.estimateNanos() - apart;
    this.now += 4 * MS;
    answer(paused, 45 * MS);
    long twice = paused.estimateNanos() - other.estimateNanos() - apart;
    assertThat(once).as("the estimate's rise after one answer at 45 ms").isLessThan(MS);
    assertThat(twice).as("after a second one").isGreaterThan(4 * MS);
  }

  /**
   * Eight connections alike, each answer 4 to 20 ms (a client's noise dwarfs the server's): their
   * estimates spread by more than a quarter, and a burst of 400 calls, 16 in flight at a time, goes
   * to every one of them alike, not to the two or three whose estimates happen to be lowest.
   */
  @Test
  void connectionsAlikeShareABurstWhateverTheNoiseOfTheirAnswers() {
    Connection[] pool = pool(CHANNELS);
    Random noise = new Random(45);
    warm(pool, noise);
    int[] calls = burst(pool, noise, -1, 0);
    int busiest = Arrays.stream(calls).max().getAsInt();
    assertThat(busiest * CHANNELS / 400.0)
        .as("busiest over mean, calls per connection %s", Arrays.toString(calls))
        .isLessThanOrEqualTo(1.25);
  }

  /**
   * The same pool, with one connection 20 ms slower on every answer from the burst's start, the
   * others' answers still 4 to 20 ms: it is found within a few of its answers, noise or not. The
   * picker breaks ties among connections alike at random, which moves the few calls it takes before
   * it is found: 100 bursts, each on a fresh pool, give its mean share (the most in 2,000 bursts
   * was 0.2).
   */
  @Test
  void aConnectionSlowerByMoreThanTheNoiseIsFoundThroughIt() {
    double shares = 0;
    int most = 0;
    for (int run = 0; run < 100; run++) {
      Connection[] pool = pool(CHANNELS);
      Random noise = new Random(45);
      warm(pool, noise);
      int[] calls = burst(pool, noise, 3, 20 * MS);
      shares += calls[3] * CHANNELS / 400.0;
      most = Math.max(most, calls[3]);
    }
    System.out.printf(
        "[pool level] slowed connection's mean share %.3f, most calls %d%n", shares / 100, most);
    assertThat(shares / 100)
        .as("the slowed connection's mean share of its even share (most calls in a burst %d)", most)
        .isLessThanOrEqualTo(0.15);
  }

  /**
   * A pool idle for a second, then a burst of 200 calls of which the first two answer at once and
   * the rest are still in flight: no connection's estimate is in doubt for being as old as every
   * other, so none is held to one call while the two that answered take the burst.
   */
  @Test
  void aBurstAfterThePoolWasIdleIsSpread() {
    Connection[] pool = pool(CHANNELS);
    warm(pool, new Random(45));
    this.now += 1000 * MS;
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] calls = new int[CHANNELS];
    for (int i = 0; i < 200; i++) {
      this.now += MS / 10;
      int picked = picker.pick(pool, this.now);
      calls[picked]++;
      if (i < 2) {
        pool[picked].latency().answered(this.now - MS / 10, this.now);
        pool[picked].callClosed();
      }
    }
    assertThat(Arrays.stream(calls).max().getAsInt() * CHANNELS / 200.0)
        .as("busiest over mean, calls per connection %s", Arrays.toString(calls))
        .isLessThanOrEqualTo(1.5);
  }

  /**
   * A connection left alone for its 40 ms while the others answered in 5 ms for 300 ms is in doubt:
   * it is tried again with one call, not with every call made before that call answers.
   */
  @Test
  void aConnectionLeftAloneWhileTheOthersAnsweredCarriesOneCall() {
    Connection[] pool = pool(CHANNELS);
    this.now += 300 * MS;
    answer(pool[3].latency(), 40 * MS);
    for (int i = 0; i < 300; i++) {
      this.now += MS;
      int channel = (i % (CHANNELS - 1) < 3) ? i % (CHANNELS - 1) : i % (CHANNELS - 1) + 1;
      answer(pool[channel].latency(), 5 * MS);
    }
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] calls = new int[CHANNELS];
    for (int i = 0; i < 400; i++) {
      calls[picker.pick(pool, this.now)]++;
    }
    assertThat(calls[3])
        .as("calls on the connection left alone, of 400: %s", Arrays.toString(calls))
        .isEqualTo(1);
  }

  /**
   * A fresh JVM compiling while it takes its first traffic: answers of 2-5 ms queries take 10-30
   * ms, and the pool's level, which rises by a quarter and falls by a sixteenth, settles near 23
   * ms, above the estimates (near 20 ms, the answers' mean). Once compiled, answers take 2-5 ms and
   * the level falls to about 4 ms. A connection not measured since (here, carrying no call) had its
   * estimate shifted down by the level's whole fall, 19 ms, to 0.3 ms, and to 1 ns from a lower
   * one: the endpoint's 1.0E-9 s, below any answer, and the fastest to the picker. Moved in
   * proportion to the level when it falls, it stays where the others are.
   */
  @Test
  void anEstimateSetWhileThePoolWasSlowStaysWithTheOthersAsTheLevelFalls() {
    Connection[] pool = pool(CHANNELS);
    Random noise = new Random(45);
    for (int i = 0; i < 400; i++) {
      this.now += MS;
      answer(pool[i % CHANNELS].latency(), 10 * MS + noise.nextLong(20 * MS));
    }
    for (int i = 0; i < 200; i++) {
      this.now += MS;
      answer(pool[1 + i % (CHANNELS - 1)].latency(), 2 * MS + noise.nextLong(3 * MS));
    }
    long[] estimates = new long[CHANNELS];
    for (int i = 0; i < CHANNELS; i++) {
      estimates[i] = pool[i].latency().estimateNanos();
    }
    long least = Arrays.stream(estimates, 1, CHANNELS).min().getAsLong();
    long most = Arrays.stream(estimates, 1, CHANNELS).max().getAsLong();
    assertThat(estimates[0])
        .as(
            "estimate of the connection last measured at a level of 23 ms, the level now %d ns,"
                + " the others' %s",
            this.pool.nanos(), Arrays.toString(estimates))
        .isGreaterThanOrEqualTo(2 * MS)
        .isBetween(least - least / 4, most + most / 4);
  }

  private Connection[] pool(int n) {
    Connection[] pool = new Connection[n];
    for (int i = 0; i < n; i++) {
      pool[i] = new Connection(this.now, this.pool);
    }
    return pool;
  }

  /** 400 answers round the pool, 1 ms apart. */
  private void warm(Connection[] pool, Random noise) {
    for (int i = 0; i < 400; i++) {
      this.now += MS;
      answer(pool[i % pool.length].latency(), 4 * MS + noise.nextLong(16 * MS));
    }
  }

  /**
   * 400 calls picked one after another, 0.5 ms apart; each answers and closes 16 picks later, with
   * 4 to 20 ms, and {@code extra} more on connection {@code slowed}.
   */
  private int[] burst(Connection[] pool, Random noise, int slowed, long extra) {
    ChannelPicker picker = new ChannelPicker(RULE);
    int[] calls = new int[pool.length];
    Deque<long[]> inFlight = new ArrayDeque<>();
    for (int i = 0; i < 400; i++) {
      this.now += MS / 2;
      if (inFlight.size() == 16) {
        long[] call = inFlight.poll();
        int channel = (int) call[0];
        long latency = 4 * MS + noise.nextLong(16 * MS) + ((channel == slowed) ? extra : 0);
        pool[channel].latency().answered(this.now - latency, this.now);
        pool[channel].callClosed();
      }
      int picked = picker.pick(pool, this.now);
      calls[picked]++;
      inFlight.add(new long[] {picked});
    }
    return calls;
  }

  private void answer(ChannelLatency latency, long latencyNanos) {
    latency.answered(this.now - latencyNanos, this.now);
  }
}
