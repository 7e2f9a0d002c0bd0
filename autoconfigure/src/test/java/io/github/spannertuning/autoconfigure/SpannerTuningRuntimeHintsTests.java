package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.experiment.ExperimentResult;
import io.github.spannertuning.reflect.ClientReflection;
import io.github.spannertuning.reflect.ClientReflection.Access;
import io.github.spannertuning.reflect.ClientReflection.Member;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.annotation.ReflectiveRuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.beans.factory.aot.AotServices;

class SpannerTuningRuntimeHintsTests {

  /**
   * Members some tested client line lacks; everything else must exist on every line these tests run
   * on, so that a misspelt member cannot hide as "not on this line".
   */
  private static final Set<String> NOT_ON_EVERY_LINE =
      Set.of(
          // grpc-gcp 1.12+ (the 6.119 line) only.
          "com.google.cloud.grpc.GcpManagedChannel.CHANNEL_AFFINITY_REF_KEY",
          "com.google.cloud.grpc.GcpManagedChannel$ChannelAffinityRef.state",
          "com.google.cloud.grpc.GcpManagedChannel$ChannelAffinityRef.<init>",
          // grpc-gcp 1.20+ (6.125+) only: the dynamic pool's channel primer.
          "com.google.cloud.grpc.GcpManagedChannelOptions$GcpChannelPoolOptions.getChannelPrimer",
          // google-cloud-spanner 6.125+ only: the iterator that drops its call at last.
          "com.google.cloud.spanner.GrpcStreamIterator.clearCall",
          // Clients whose streaming methods take no request id (6.89 to 6.104): the compat lines.
          "com.google.cloud.spanner.spi.v1.GapicSpannerRpc.executeQuery(com.google.spanner.v1"
              + ".ExecuteSqlRequest, com.google.cloud.spanner.spi.v1.SpannerRpc$ResultStreamConsumer,"
              + " java.util.Map, boolean)",
          "com.google.cloud.spanner.spi.v1.GapicSpannerRpc.read(com.google.spanner.v1.ReadRequest,"
              + " com.google.cloud.spanner.spi.v1.SpannerRpc$ResultStreamConsumer, java.util.Map,"
              + " boolean)");

  /** Calls of the reflection API; only ClientReflection may make them. */
  private static final Pattern REFLECTION =
      Pattern.compile(
          "Class\\.forName\\(|\\.getDeclared(Field|Method|Constructor)s?\\("
              + "|\\.get(Field|Method|Constructor)s?\\((?!\\))|\\.setAccessible\\("
              + "|MethodHandles\\.|\\.getResources?(AsStream)?\\((?!\\))|\\.loadClass\\(");

  private final RuntimeHints hints = registeredHints();

  private static RuntimeHints registeredHints() {
    RuntimeHints hints = new RuntimeHints();
    AotServices.factories()
        .load(RuntimeHintsRegistrar.class)
        .forEach(registrar -> registrar.registerHints(hints, null));
    return hints;
  }

  @Test
  void registrarIsListedInAotFactories() {
    assertThat(AotServices.factories().load(RuntimeHintsRegistrar.class))
        .hasAtLeastOneElementOfType(SpannerTuningRuntimeHints.class);
  }

  @Test
  void everyReflectiveTargetOnThisClasspathHasItsHint() throws Exception {
    List<String> missing = new ArrayList<>();
    List<String> notFound = new ArrayList<>();
    for (Member member : ClientReflection.members()) {
      Object target = resolve(member);
      if (target == null) {
        notFound.add(
            member.type()
                + "."
                + member.name()
                + (member.parameterTypes().isEmpty()
                    ? ""
                    : "(" + String.join(", ", member.parameterTypes()) + ")"));
      } else if (!hinted(member, target)) {
        missing.add(member.toString());
      }
    }
    assertThat(missing).as("reflective targets without a runtime hint").isEmpty();
    assertThat(NOT_ON_EVERY_LINE).as("targets not found on this classpath").containsAll(notFound);
  }

  /**
   * The experiment's answer is serialized by Jackson in a native image too: Boot's operation
   * annotations register binding hints for each operation's return type, down to the records it
   * holds (the per-kind result, the per-arm figures, the progress).
   */
  @Test
  void theExperimentsAnswerHasBindingHints() {
    RuntimeHints endpoint = new RuntimeHints();
    new ReflectiveRuntimeHintsRegistrar()
        .registerRuntimeHints(endpoint, SpannerTuningEndpoint.class);
    for (Class<?> type :
        List.of(
            SpannerTuningEndpoint.ExperimentDescriptor.class,
            ExperimentResult.KindResult.class,
            ExperimentResult.PerArm.class,
            ExperimentResult.Progress.class)) {
      assertThat(RuntimeHintsPredicates.reflection().onType(type))
          .as(type.getName())
          .accepts(endpoint);
    }
  }

  @Test
  void resourcesTheStarterReadsHaveTheirHint() {
    assertThat(ClientReflection.resources()).isNotEmpty();
    for (String resource : ClientReflection.resources()) {
      assertThat(RuntimeHintsPredicates.resource().forResource(resource))
          .as(resource)
          .accepts(hints);
    }
  }

  @Test
  void theStockRuntimeHasNoneOfTheseHints() throws Exception {
    RuntimeHints none = new RuntimeHints();
    for (Member member : ClientReflection.members()) {
      Object target = resolve(member);
      if (target != null) {
        assertThat(hinted(member, target, none)).as(member.toString()).isFalse();
      }
    }
  }

  @Test
  void onlyClientReflectionCallsTheReflectionApi() throws IOException {
    List<String> calls = new ArrayList<>();
    try (Stream<Path> sources = Files.walk(Path.of("src/main/java"))) {
      for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
        if (source.getFileName().toString().equals("ClientReflection.java")) {
          continue;
        }
        List<String> lines = Files.readAllLines(source);
        for (int i = 0; i < lines.size(); i++) {
          String line = lines.get(i).strip();
          if (line.startsWith("*") || line.startsWith("//") || line.startsWith("/*")) {
            continue;
          }
          Matcher matcher = REFLECTION.matcher(line);
          if (matcher.find()) {
            calls.add(source.getFileName() + ":" + (i + 1) + ": " + line);
          }
        }
      }
    }
    assertThat(calls)
        .as("reflection outside ClientReflection has no runtime hint: declare the member there")
        .isEmpty();
  }

  private boolean hinted(Member member, Object target) {
    return hinted(member, target, hints);
  }

  private static boolean hinted(Member member, Object target, RuntimeHints hints) {
    var reflection = RuntimeHintsPredicates.reflection();
    return switch (member.access()) {
      case TYPE -> reflection.onType((Class<?>) target).test(hints);
      case FIELD -> reflection.onField((Field) target).test(hints);
      case INVOKE ->
          target instanceof Constructor<?> constructor
              ? reflection.onConstructor(constructor).invoke().test(hints)
              : reflection.onMethod((Method) target).invoke().test(hints);
      case INTROSPECT ->
          target instanceof Constructor<?> constructor
              ? reflection.onConstructor(constructor).introspect().test(hints)
              : reflection.onMethod((Method) target).introspect().test(hints);
    };
  }

  /** The member on this classpath, found the way a plain JVM finds it, or null. */
  private static Object resolve(Member member) throws Exception {
    Class<?> type;
    try {
      type = Class.forName(member.type(), false, ClientReflection.class.getClassLoader());
    } catch (ClassNotFoundException ex) {
      return null;
    }
    try {
      if (member.access() == Access.TYPE) {
        return type;
      }
      if (member.access() == Access.FIELD) {
        return type.getDeclaredField(member.name());
      }
      List<Class<?>> parameters = new ArrayList<>();
      for (String name : member.parameterTypes()) {
        parameters.add(
            name.equals("boolean")
                ? boolean.class
                : Class.forName(name, false, ClientReflection.class.getClassLoader()));
      }
      Class<?>[] array = parameters.toArray(Class<?>[]::new);
      return member.name().equals("<init>")
          ? type.getDeclaredConstructor(array)
          : type.getDeclaredMethod(member.name(), array);
    } catch (NoSuchFieldException | NoSuchMethodException | ClassNotFoundException ex) {
      return null;
    }
  }
}
