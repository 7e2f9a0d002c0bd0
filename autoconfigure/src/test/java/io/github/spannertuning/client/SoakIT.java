package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerException;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import io.github.spannertuning.metrics.SpannerChannelMetrics;
import io.github.spannertuning.pool.ChannelLoad;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.ResultSets;
import io.github.spannertuning.testing.StatementResult;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadInfo;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A tuned client under a steady mixed load against the production-like {@link MockSpannerServer}
 * ({@code last} on the final message, trailers 1 ms later, 2-5 ms per call): single-use point
 * selects read to the end, point selects closed after their row (the guard's case), queries of 500
 * rows closed after 10 (unfinished streams, whose cancel must go through) and read/write
 * transactions. It runs for {@code -Dspanner.tuning.soak.duration} (ISO-8601, default {@code
 * PT30S}; {@code PT30M} for the long run) and samples, a dozen times: queries sent, succeeded and
 * failed; grpc-gcp's affinity maps (read by reflection, read-only); every structure spanner-tuning
 * keeps per client; the heap after a GC; the meters; and the threads of gRPC, Netty and gax that
 * are blocked or waiting inside spanner-tuning's code.
 *
 * <p>Tagged {@code any-line}: what it checks does not depend on the client line, so the suite runs
 * it on 6.119 and 6.113 only.
 */
@Tag("any-line")
@Tag("shares-machine")
class SoakIT {

  static final String DURATION_PROPERTY = "spanner.tuning.soak.duration";

  private static final DatabaseId DATABASE = DatabaseId.of("test-project", "i", "d");

  private static final int CHANNELS = 8;

  private static final String UPDATE = "UPDATE Counters SET value = value + 1 WHERE id = 1";

  /** Operations started per tick of 10 ms: 200 a second. */
  private static final int PER_TICK = 2;

  /** A query of 500 rows that the soak closes after 10. */
  private static final String LONG_QUERY = "SELECT id FROM Numbers LIMIT 500";

  private static final int SAMPLES = 12;

  /** Packages of threads that run callbacks: they must never wait in spanner-tuning's code. */
  private static final List<String> CALLBACK_THREADS =
      List.of("grpc-", "Gax-", "netty", "epoll", "nio");

  private final LongAdder sent = new LongAdder();

  private final LongAdder succeeded = new LongAdder();

  private final Map<String, LongAdder> failed = new ConcurrentHashMap<>();

  private final AtomicLong tick = new AtomicLong();

  private final Set<String> stuckInCallbacks = ConcurrentHashMap.newKeySet();

  @Test
  void steadyMixedLoadKeepsEveryStructureBoundedAndLosesNoQuery() throws Exception {
    Duration duration = Duration.parse(System.getProperty(DURATION_PROPERTY, "PT30S"));
    Duration interval = duration.dividedBy(SAMPLES);
    try (MockSpannerServer server = MockSpannerServer.start()) {
      server.mock().putStatementResult(StatementResult.update(Statement.of(UPDATE), 1L));
      server
          .mock()
          .putStatementResult(
              StatementResult.query(Statement.of(LONG_QUERY), ResultSets.numbers(500)));
      SpannerOptions.Builder builder = server.clientOptions(CHANNELS);
      SpannerTuningState state = SpannerTuning.defaults().applyTo(builder);
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      new SpannerChannelMetrics(state, "soak", Tags.empty()).bindTo(registry);
      List<Sample> samples = new ArrayList<>();
      try (Spanner spanner = builder.build().getService()) {
        DatabaseClient client = spanner.getDatabaseClient(DATABASE);
        List<Object> grpcGcpChannels = find(spanner, ClientSupport.grpcGcpChannelClass());
        assertThat(grpcGcpChannels).as("grpc-gcp channels reachable from the client").isNotEmpty();

        ThreadPoolExecutor workers = (ThreadPoolExecutor) Executors.newFixedThreadPool(32);
        ScheduledExecutorService pacer = Executors.newSingleThreadScheduledExecutor();
        pacer.scheduleAtFixedRate(
            () -> {
              for (int i = 0; i < PER_TICK; i++) {
                long n = this.tick.getAndIncrement();
                this.sent.increment();
                workers.execute(() -> operation(client, n));
              }
            },
            0,
            10,
            TimeUnit.MILLISECONDS);
        long start = System.nanoTime();
        try {
          for (int i = 1; i <= SAMPLES; i++) {
            Thread.sleep(interval.toMillis());
            // The test server records every request; drop them so the heap shows the client's.
            server.reset();
            checkCallbackThreads();
            Sample sample =
                Sample.take(
                    (System.nanoTime() - start) / 1e9,
                    this,
                    workers,
                    grpcGcpChannels,
                    state,
                    registry);
            samples.add(sample);
          }
        } finally {
          pacer.shutdown();
          assertThat(pacer.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
          workers.shutdown();
          assertThat(workers.awaitTermination(60, TimeUnit.SECONDS))
              .as("every operation finished (none hangs)")
              .isTrue();
        }
        checkCallbackThreads();
        Sample end =
            Sample.take(
                (System.nanoTime() - start) / 1e9, this, workers, grpcGcpChannels, state, registry);
        String figures =
            String.format(
                Locale.ROOT,
                "%s: sent=%d succeeded=%d failed=%d %s, %.0f operations/s, end %s",
                duration,
                this.sent.sum(),
                this.succeeded.sum(),
                failedTotal(),
                this.failed,
                this.sent.sum() / end.seconds(),
                end);

        assertThat(this.succeeded.sum() + failedTotal())
            .as("succeeded + failed: " + figures)
            .isEqualTo(this.sent.sum());
        assertThat(this.failed)
            .as("failed operations against a healthy server: " + figures)
            .isEmpty();
        List<Sample> steady = samples.subList(1, samples.size());
        Sample first = samples.get(0);
        for (Sample sample : steady) {
          assertThat(sample.affinityKeys())
              .as(
                  "grpc-gcp affinity keys at %.0f s, against %d at the first sample, after %d operations",
                  sample.seconds(), first.affinityKeys(), sample.sent())
              .isLessThanOrEqualTo(Math.max(2 * first.affinityKeys(), 64));
          assertThat(sample.loadChannels())
              .as("ChannelLoad: channels counted")
              .isLessThanOrEqualTo(CHANNELS);
          assertThat(sample.loadKeys())
              .as("ChannelLoad: channel keys")
              .isLessThanOrEqualTo(CHANNELS);
          assertThat(sample.loadListeners())
              .as("ChannelLoad: listeners")
              .isEqualTo(first.loadListeners());
          assertThat(sample.closeListeners())
              .as("close listeners")
              .isEqualTo(first.closeListeners());
          assertThat(sample.channelMeters())
              .as("per-channel meter sets: one per channel counted")
              .isEqualTo(sample.loadChannels());
          assertThat(sample.meters() - 2 * sample.loadChannels())
              .as("the client's own meters")
              .isEqualTo(first.meters() - 2 * first.loadChannels());
          assertThat(sample.heapMb())
              .as(
                  "heap after GC at %.0f s against %d MB at the first sample",
                  sample.seconds(), first.heapMb())
              .isLessThanOrEqualTo(first.heapMb() + 64);
        }
        assertThat(this.stuckInCallbacks)
            .as("gRPC, Netty or gax threads blocked or waiting in spanner-tuning's code")
            .isEmpty();
      }
    }
  }

  private long failedTotal() {
    return this.failed.values().stream().mapToLong(LongAdder::sum).sum();
  }

  private void operation(DatabaseClient client, long n) {
    try {
      switch ((int) (n % 20)) {
        case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 -> readPointSelect(client);
        case 11, 12, 13, 14, 15 -> closePointSelectAfterRow(client);
        case 16 -> closeBigQueryEarly(client);
        default ->
            client
                .readWriteTransaction()
                .run(
                    (tx) -> {
                      try (ResultSet rs =
                          tx.executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
                        while (rs.next()) {
                          rs.getLong(0);
                        }
                      }
                      return tx.executeUpdate(Statement.of(UPDATE));
                    });
      }
      this.succeeded.increment();
    } catch (SpannerException ex) {
      this.failed.computeIfAbsent(ex.getErrorCode().name(), (k) -> new LongAdder()).increment();
    } catch (RuntimeException ex) {
      this.failed
          .computeIfAbsent(ex.getClass().getSimpleName(), (k) -> new LongAdder())
          .increment();
    }
  }

  private static void readPointSelect(DatabaseClient client) {
    try (ResultSet rs =
        client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
      int rows = 0;
      while (rs.next()) {
        rows++;
      }
      if (rows != 1) {
        throw new IllegalStateException("point select returned " + rows + " rows");
      }
    }
  }

  private static void closePointSelectAfterRow(DatabaseClient client) {
    try (ResultSet rs =
        client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
      if (!rs.next()) {
        throw new IllegalStateException("point select returned no row");
      }
    }
  }

  private static void closeBigQueryEarly(DatabaseClient client) {
    try (ResultSet rs = client.singleUse().executeQuery(Statement.of(LONG_QUERY))) {
      for (int i = 0; i < 10; i++) {
        if (!rs.next() || rs.getLong(0) != i) {
          throw new IllegalStateException("big query row " + i + " missing or out of order");
        }
      }
    }
  }

  /**
   * Records every thread of gRPC, Netty or gax that is blocked or waiting with spanner-tuning's
   * code on its stack: a callback holding a transport or executor thread. The test server's own
   * frames do not count: its threads share the client's names in this JVM.
   */
  private void checkCallbackThreads() {
    for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
      String name = info.getThreadName();
      if (CALLBACK_THREADS.stream().noneMatch(name::contains)) {
        continue;
      }
      Thread.State threadState = info.getThreadState();
      if (threadState != Thread.State.BLOCKED
          && threadState != Thread.State.WAITING
          && threadState != Thread.State.TIMED_WAITING) {
        continue;
      }
      for (StackTraceElement frame : info.getStackTrace()) {
        String className = frame.getClassName();
        if (className.startsWith("io.github.spannertuning.")
            && !className.startsWith("io.github.spannertuning.testing.")
            && !className.startsWith(SoakIT.class.getName())) {
          this.stuckInCallbacks.add(name + " " + threadState + " at " + frame);
          break;
        }
      }
    }
  }

  /** One look at the client and the JVM during the soak. */
  record Sample(
      double seconds,
      long sent,
      long succeeded,
      long failed,
      int backlog,
      int affinityKeys,
      int affinityLastUsed,
      int loadChannels,
      int loadKeys,
      int loadListeners,
      int closeListeners,
      int meters,
      int channelMeters,
      long heapMb,
      int threads) {

    static Sample take(
        double seconds,
        SoakIT soak,
        ThreadPoolExecutor workers,
        List<Object> grpcGcpChannels,
        SpannerTuningState state,
        SimpleMeterRegistry registry) {
      ChannelLoad load = state.channelLoad();
      MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
      System.gc();
      return new Sample(
          seconds,
          soak.sent.sum(),
          soak.succeeded.sum(),
          soak.failedTotal(),
          workers.getQueue().size(),
          sizeOfField(grpcGcpChannels, "affinityKeyToChannelRef"),
          sizeOfField(grpcGcpChannels, "affinityKeyLastUsed"),
          load.channels().size(),
          sizeOfField(List.of(load), "byChannel"),
          sizeOfField(List.of(load), "listeners"),
          sizeOfField(List.of(state), "closeListeners"),
          registry.getMeters().size(),
          registry.find("spanner.tuning.channel.active.streams").gauges().size(),
          memory.getHeapMemoryUsage().getUsed() >> 20,
          Thread.activeCount());
    }

    @Override
    public String toString() {
      return String.format(
          Locale.ROOT,
          "t=%4.0fs sent=%d succeeded=%d failed=%d backlog=%d | grpc-gcp affinity keys=%d"
              + " (last-used %d) | ChannelLoad channels=%d keys=%d listeners=%d | close"
              + " listeners=%d | meters=%d (per-channel sets %d) | heap after GC=%d MB | threads=%d",
          this.seconds,
          this.sent,
          this.succeeded,
          this.failed,
          this.backlog,
          this.affinityKeys,
          this.affinityLastUsed,
          this.loadChannels,
          this.loadKeys,
          this.loadListeners,
          this.closeListeners,
          this.meters,
          this.channelMeters,
          this.heapMb,
          this.threads);
    }
  }

  /** The summed size of a collection or map field, read by reflection, on each of the objects. */
  static int sizeOfField(List<?> owners, String name) {
    int size = 0;
    for (Object owner : owners) {
      Object value = read(fieldNamed(owner.getClass(), name), owner);
      size += (value instanceof Map<?, ?> map) ? map.size() : ((Collection<?>) value).size();
    }
    return size;
  }

  private static Field fieldNamed(Class<?> type, String name) {
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      try {
        Field field = c.getDeclaredField(name);
        field.setAccessible(true);
        return field;
      } catch (NoSuchFieldException ex) {
        // look in the superclass
      }
    }
    throw new IllegalStateException(type.getName() + " has no field " + name);
  }

  private static Object read(Field field, Object owner) {
    try {
      return field.get(owner);
    } catch (IllegalAccessException ex) {
      throw new IllegalStateException(ex);
    }
  }

  /**
   * Every object of the given type reachable from the root through fields, collections, maps and
   * arrays; JDK objects are looked into only when they hold others, telemetry and Netty not at all.
   */
  static List<Object> find(Object root, Class<?> type) {
    List<Object> found = new ArrayList<>();
    Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    ArrayDeque<Object> queue = new ArrayDeque<>();
    queue.add(root);
    while (!queue.isEmpty() && seen.size() < 200_000) {
      Object object = queue.poll();
      if (object == null || !seen.add(object)) {
        continue;
      }
      if (type.isInstance(object)) {
        found.add(object);
        continue;
      }
      Class<?> c = object.getClass();
      String name = c.getName();
      if (c.isArray()) {
        if (!c.getComponentType().isPrimitive()) {
          for (int i = 0; i < Array.getLength(object); i++) {
            Object element = Array.get(object, i);
            if (element != null) {
              queue.add(element);
            }
          }
        }
      } else if (object instanceof Collection<?> collection) {
        try {
          for (Object element : collection.toArray()) {
            if (element != null) {
              queue.add(element);
            }
          }
        } catch (RuntimeException ex) {
          // a collection that cannot be copied now; skip it
        }
      } else if (object instanceof Map<?, ?> map) {
        try {
          map.values().stream().filter((e) -> e != null).forEach(queue::add);
        } catch (RuntimeException ex) {
          // as above
        }
      } else if (object instanceof AtomicReference<?> reference) {
        if (reference.get() != null) {
          queue.add(reference.get());
        }
      } else if (!name.startsWith("java.")
          && !name.startsWith("javax.")
          && !name.startsWith("jdk.")
          && !name.startsWith("sun.")
          && !name.contains(".netty.")
          && !name.startsWith("io.opentelemetry.")
          && !name.startsWith("io.opencensus.")
          && !name.startsWith("com.google.protobuf.")) {
        for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass()) {
          for (Field field : k.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers()) || field.getType().isPrimitive()) {
              continue;
            }
            try {
              field.setAccessible(true);
              Object value = field.get(object);
              if (value != null) {
                queue.add(value);
              }
            } catch (RuntimeException | IllegalAccessException ex) {
              // not readable; skip it
            }
          }
        }
      }
    }
    return found;
  }
}
