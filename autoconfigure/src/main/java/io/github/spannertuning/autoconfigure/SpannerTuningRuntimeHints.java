package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.reflect.ClientReflection;
import io.github.spannertuning.reflect.ClientReflection.Member;
import java.util.List;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

/**
 * Native-image hints for every member of the Spanner client, gax and grpc-gcp the starter reaches
 * by reflection ({@link ClientReflection#members()}). Types are named, not loaded: a member that
 * the application's client line lacks costs nothing, and the starter finds it missing at run time
 * as it does on the JVM.
 */
public class SpannerTuningRuntimeHints implements RuntimeHintsRegistrar {

  /** Creates the registrar; Spring AOT finds it through {@code META-INF/spring/aot.factories}. */
  public SpannerTuningRuntimeHints() {}

  @Override
  public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
    for (Member member : ClientReflection.members()) {
      TypeReference type = TypeReference.of(member.type());
      switch (member.access()) {
        case TYPE -> hints.reflection().registerType(type);
        case FIELD -> hints.reflection().registerType(type, hint -> hint.withField(member.name()));
        case INTROSPECT, INVOKE -> {
          ExecutableMode mode =
              member.access() == ClientReflection.Access.INVOKE
                  ? ExecutableMode.INVOKE
                  : ExecutableMode.INTROSPECT;
          List<TypeReference> parameters =
              member.parameterTypes().stream().map(TypeReference::of).toList();
          if (member.name().equals("<init>")) {
            hints.reflection().registerType(type, hint -> hint.withConstructor(parameters, mode));
          } else {
            hints
                .reflection()
                .registerType(type, hint -> hint.withMethod(member.name(), parameters, mode));
          }
        }
      }
    }
    ClientReflection.resources().forEach(hints.resources()::registerPattern);
    for (List<String> interfaces : ClientReflection.proxies()) {
      hints
          .proxies()
          .registerJdkProxy(
              interfaces.stream().map(TypeReference::of).toArray(TypeReference[]::new));
    }
  }
}
