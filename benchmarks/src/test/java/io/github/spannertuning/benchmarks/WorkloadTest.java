package io.github.spannertuning.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.RecordComponent;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Each of the workload's copy methods changes the fields it names and keeps every other one, and
 * the mixed workload is the degraded one with its reports, compared stock, tuned and tuned +
 * hedging on either pool's variants.
 */
class WorkloadTest {

  /** A workload with no field at its default, so that a copy that lost one would show it. */
  private static final Workload FULL =
      new Workload("a", "a workload", 600, 300, 3, 5, 1, 100, 20, List.of(Variant.STOCK))
          .withFault(Workload.Fault.RECOVERED, 20, 300)
          .freshClient(5, 1)
          .withPhases(new Workload.Phases(1, 2, 3))
          .viaJdbc()
          .withStragglers(0.1, 50)
          .withConnections(new Workload.Connections(100, 10, 1))
          .freshInstance(new Workload.Instance(5, 1, 5))
          .withReports(10);

  @Test
  void everyCopyChangesOnlyTheFieldsItNames() {
    List<Variant> tuned = List.of(Variant.TUNED);
    Workload.Phases phases = new Workload.Phases(4, 8, 8);
    Workload.Connections connections = new Workload.Connections(50, 0, 0);
    Workload.Instance instance = new Workload.Instance(2, 1, 2);

    changes(
        (w) -> w.withFault(Workload.Fault.STALLED, 0, 1000),
        Map.of("fault", Workload.Fault.STALLED, "degradeMillis", 0L, "deadlineMs", 1000L));
    changes((w) -> w.named("b", "another"), Map.of("name", "b", "description", "another"));
    changes((w) -> w.withPhases(phases), Map.of("phases", phases));
    changes((w) -> w.withConnections(connections), Map.of("connections", connections));
    changes((w) -> w.withReports(5), Map.of("reportEvery", 5));
    changes(
        (w) -> w.rebased(150, 50, tuned),
        Map.of("baseRate", 150.0, "threads", 50, "variants", tuned));
    Workload warm =
        new Workload("w", "warm", 600, 300, 3, 5, 1, 100, 0, List.of(Variant.STOCK)).withReports(7);
    changes(warm, (w) -> w.viaJdbc(), Map.of("jdbc", true));
    changes(warm, (w) -> w.freshInstance(instance), Map.of("warmUp", false, "instance", instance));
    assertThat(warm.withStragglers(0.02, 40).stragglers()).containsExactly(0.02, 40.0);
    assertThat(fieldsBut(warm.withStragglers(0.02, 40), Set.of("stragglers")))
        .isEqualTo(fieldsBut(warm, Set.of("stragglers")));
    Workload fresh = warm.freshClient(400, 25);
    assertThat(fresh.serviceMs()).containsExactly(400.0, 25.0);
    assertThat(fresh.warmUp()).isFalse();
    assertThat(fieldsBut(fresh, Set.of("serviceMs", "warmUp")))
        .isEqualTo(fieldsBut(warm, Set.of("serviceMs", "warmUp")));
  }

  @Test
  void aClosedLoopIsTheOpenLoopDefaultsWithItsThreadsChannelsAndTrailers() {
    Workload closed = Workload.closedLoop("c", "closed", 128, 8, 200, List.of(Variant.STOCK));
    Workload open = new Workload("c", "closed", 0, 0, 1, 1, 0, 128, 0, List.of(Variant.STOCK));

    assertThat(closed.closedLoop()).isTrue();
    assertThat(closed.channels()).isEqualTo(8);
    assertThat(closed.trailersDelayMs()).isEqualTo(200.0);
    assertThat(closed.fault()).isEqualTo(Workload.Fault.NONE);
    Set<String> changed = Set.of("closedLoop", "channels", "trailersDelayMs");
    assertThat(fieldsBut(closed, changed)).isEqualTo(fieldsBut(open, changed));
    assertThat(open.trailersDelayMs()).as("the frontend's own trailers").isEqualTo(-1.0);
    assertThat(open.reportEvery()).as("point selects only").isZero();
  }

  @Test
  void theMixedWorkloadIsTheDegradedOneWithAReportInTenOnStockTunedAndHedging() {
    Flags flags = Flags.parse();
    List<Variant> fixedPool =
        List.of(
            Variant.STOCK,
            Variant.TUNED,
            Variant.DISTRIBUTION_ONLY,
            Variant.GUARD_ONLY,
            Variant.ROUND_ROBIN);
    List<Variant> dynamicPool = List.of(Variant.STOCK, Variant.TUNED, Variant.HEDGED);
    for (List<Variant> variants : List.of(fixedPool, dynamicPool)) {
      Workload spiky = BenchmarkMain.spiky(flags, 1, 5, 1, variants);
      Workload degraded = BenchmarkMain.degraded(spiky, 20);

      Workload mixed = BenchmarkMain.mixed(flags, spiky, 20, variants);

      assertThat(mixed.name()).isEqualTo(BenchmarkMain.MIXED);
      assertThat(mixed.reportEvery()).isEqualTo(10);
      assertThat(mixed.variants()).containsExactly(Variant.STOCK, Variant.TUNED, Variant.HEDGED);
      Set<String> changed = Set.of("name", "description", "variants", "reportEvery");
      assertThat(fieldsBut(mixed, changed)).isEqualTo(fieldsBut(degraded, changed));
    }
    assertThat(BenchmarkMain.DEFAULT_WORKLOADS.split(",")).doesNotContain(BenchmarkMain.MIXED);
    assertThat(BenchmarkMain.DYNAMIC_POOL_WORKLOADS.split(",")).doesNotContain(BenchmarkMain.MIXED);
    assertThat(BenchmarkMain.NOT_ON_DYNAMIC_POOL).doesNotContainKey(BenchmarkMain.MIXED);
  }

  private static void changes(UnaryOperator<Workload> copy, Map<String, Object> changed) {
    changes(FULL, copy, changed);
  }

  private static void changes(
      Workload original, UnaryOperator<Workload> copy, Map<String, Object> changed) {
    Workload copied = copy.apply(original);
    Map<String, Object> fields = fieldsBut(copied, Set.of());
    changed.forEach((name, value) -> assertThat(fields).containsEntry(name, value));
    assertThat(fieldsBut(copied, changed.keySet()))
        .isEqualTo(fieldsBut(original, changed.keySet()));
  }

  /** The workload's fields by name, but those named; arrays as lists, to compare by content. */
  private static Map<String, Object> fieldsBut(Workload workload, Set<String> left) {
    Map<String, Object> fields = new LinkedHashMap<>();
    for (RecordComponent component : Workload.class.getRecordComponents()) {
      if (left.contains(component.getName())) {
        continue;
      }
      try {
        Object value = component.getAccessor().invoke(workload);
        fields.put(
            component.getName(),
            (value instanceof double[] array) ? Arrays.stream(array).boxed().toList() : value);
      } catch (ReflectiveOperationException ex) {
        throw new IllegalStateException(ex);
      }
    }
    return fields;
  }
}
