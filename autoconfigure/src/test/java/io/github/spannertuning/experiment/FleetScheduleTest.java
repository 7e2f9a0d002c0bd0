package io.github.spannertuning.experiment;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/** The schedule a fleet's instances derive each on its own, from fed instants. */
class FleetScheduleTest {

  private static final long MINUTE = Duration.ofMinutes(1).toNanos();

  private final FleetSchedule schedule = new FleetSchedule("checkout-2026-12", MINUTE);

  @Test
  void slicesStartAtMultiplesOfTheSliceSinceTheEpoch() {
    long noon = nanos("2026-12-03T12:00:00Z");
    long slice = noon / MINUTE;
    assertThat(this.schedule.sliceAt(noon)).isEqualTo(slice);
    assertThat(this.schedule.sliceAt(noon - 1)).isEqualTo(slice - 1);
    assertThat(this.schedule.sliceAt(noon + MINUTE - 1)).isEqualTo(slice);
    assertThat(this.schedule.startOf(slice)).isEqualTo(noon);
    assertThat(this.schedule.startOf(slice + 1)).isEqualTo(nanos("2026-12-03T12:01:00Z"));
  }

  @Test
  void eachPairsFirstArmIsTheParityOfTheFirstByteOfSha256OfIdSlashPair() {
    // printf 'checkout-2026-12/<p>' | sha256sum: c4 49 7a 39 13 1e 84 96 27 cc for p = 0..9
    List<Arm> firsts = new ArrayList<>();
    for (long pair = 0; pair < 10; pair++) {
      firsts.add(FleetSchedule.firstArm("checkout-2026-12", pair));
    }
    assertThat(firsts)
        .containsExactly(
            Arm.TUNED, Arm.STOCK, Arm.TUNED, Arm.STOCK, Arm.STOCK, Arm.TUNED, Arm.TUNED, Arm.TUNED,
            Arm.STOCK, Arm.TUNED);
  }

  @Test
  void eachPairHoldsOneSliceOfEachArmAndTheSameIdGivesTheSameOrder() {
    FleetSchedule again = new FleetSchedule("checkout-2026-12", MINUTE);
    FleetSchedule other = new FleetSchedule("checkout-2026-11", MINUTE);
    long from = nanos("2026-12-03T12:00:00Z") / MINUTE;
    boolean differs = false;
    for (long slice = from; slice < from + 40; slice += 2) {
      assertThat(this.schedule.armOf(slice + 1)).isEqualTo(this.schedule.armOf(slice).other());
      assertThat(again.armOf(slice)).isEqualTo(this.schedule.armOf(slice));
      differs |= other.armOf(slice) != this.schedule.armOf(slice);
    }
    assertThat(differs).as("another fleet's order differs somewhere in 20 pairs").isTrue();
  }

  @Test
  void theCoinIsFair() {
    long tunedFirst =
        LongStream.range(0, 10_000)
            .filter((pair) -> FleetSchedule.firstArm("fleet-a", pair) == Arm.TUNED)
            .count();
    assertThat(tunedFirst).isBetween(4_700L, 5_300L);
  }

  @Test
  void anInstanceRecordsFromThePairAfterTheSliceItJoinedIn() {
    assertThat(FleetSchedule.firstRecorded(10)).as("joined in a pair's first slice").isEqualTo(12);
    assertThat(FleetSchedule.firstRecorded(11)).as("joined in its second").isEqualTo(12);
  }

  private static long nanos(String instant) {
    Instant at = Instant.parse(instant);
    return at.getEpochSecond() * 1_000_000_000L + at.getNano();
  }
}
