package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.testing.GuardLine;
import io.github.spannertuning.testing.LogCapture;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.security.cert.Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.logging.Level;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.commons.ClassRemapper;
import net.bytebuddy.jar.asm.commons.Remapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A client version where a hook spanner-tuning needs is missing, for each hook. Each case runs an
 * application ({@link HookProbe}) in a class loader of its own, built from the test classpath, so
 * that spanner-tuning's detection runs from scratch, as in a fresh JVM, against the classes that
 * loader serves:
 *
 * <ul>
 *   <li>grpc-gcp absent: its jar is left out of the loader's classpath (the application excluded
 *       the dependency and switched the extension off);
 *   <li>no {@code DISABLE_AFFINITY_CTX_KEY}: grpc-gcp's per-call affinity keys ({@code
 *       DISABLE_AFFINITY*}, {@code AFFINITY_CTX_KEY}, {@code CHANNEL_AFFINITY_REF_KEY}) are renamed
 *       in every class of the client and of grpc-gcp, as in a grpc-gcp that lacks them;
 *   <li>another {@code GapicSpannerRpc} signature: the client's streaming query method is renamed
 *       in every class of the client, as in a client whose method changed;
 *   <li>an application's own {@code SpannerRpcFactory}: real, no rewriting.
 * </ul>
 *
 * <p>spanner-tuning's classes are not rewritten: they are what was compiled against the client this
 * build uses. The server is the test server, in this class loader, over TCP.
 */
class MissingHookTest {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  /**
   * google-cloud-spanner 6.113 and 6.119 cannot build their options without grpc-gcp, extension off
   * or not: an application cannot run these lines without it. What is checked is that
   * spanner-tuning detects the absence, warns once, reports it, and changes nothing: the client
   * fails exactly as the stock client does.
   */
  @Test
  void grpcGcpAbsent() throws Exception {
    Predicate<String> withoutGrpcGcp = (entry) -> !entry.contains("/grpc-gcp/");
    Outcome stock = run(withoutGrpcGcp, null, false, false, false);
    Outcome outcome = run(withoutGrpcGcp, null, false, false, true);
    outcome.assertOneWarning("grpc-gcp is not on the classpath");
    assertThat(outcome.features().get("grpc-gcp"))
        .isEqualTo("unsupported (grpc-gcp is not on the classpath)");
    assertThat(outcome.features().get("single-use-distribution"))
        .isEqualTo("unsupported (grpc-gcp is not on the classpath)");
    // GapicSpannerRpc's methods name grpc-gcp's types, so they cannot be looked up either.
    assertThat(outcome.features().get("stream-end-guard")).startsWith("unsupported (");
    assertThat(stock.features().get("error"))
        .as("the stock client without grpc-gcp")
        .contains("com/google/cloud/grpc/");
    assertThat(outcome.features().get("error"))
        .as("the tuned client fails as the stock one does")
        .isEqualTo(stock.features().get("error"));
  }

  @Test
  void noDisableAffinityKey() throws Exception {
    Outcome outcome =
        runWithTraffic(WITHOUT_AFFINITY_KEYS, false, "cannot take an affinity key per call");
    assertThat(outcome.features().get("single-use-distribution"))
        .startsWith("unsupported (grpc-gcp ")
        .endsWith(" cannot take an affinity key per call)");
    assertThat(outcome.features().get("stream-end-guard")).startsWith(GuardLine.expectedName());
  }

  @Test
  void anotherGapicSpannerRpcSignature() throws Exception {
    String reason = "GapicSpannerRpc in this client version does not have the methods";
    Outcome outcome = runWithTraffic(ANOTHER_STREAMING_QUERY, false, reason);
    assertThat(outcome.features().get("stream-end-guard")).startsWith("unsupported (" + reason);
  }

  @Test
  void applicationsOwnRpcFactory() throws Exception {
    String reason = "the application set its own SpannerRpcFactory";
    Outcome outcome = runWithTraffic(null, true, reason);
    assertThat(outcome.features().get("stream-end-guard"))
        .isEqualTo("unsupported (" + reason + ")");
  }

  /**
   * grpc-gcp's per-call affinity keys, renamed in every class, as in a grpc-gcp that lacks them.
   */
  private static final Renaming WITHOUT_AFFINITY_KEYS =
      Renaming.fields(
          (owner, name, descriptor) ->
              (owner.equals("com/google/cloud/grpc/GcpManagedChannel")
                      && (name.startsWith("DISABLE_AFFINITY")
                          || name.equals("AFFINITY_CTX_KEY")
                          || name.equals("CHANNEL_AFFINITY_REF_KEY")))
                  ? name + "_RENAMED"
                  : null);

  /** The client's streaming query method, renamed, as in a client whose method changed. */
  private static final Renaming ANOTHER_STREAMING_QUERY =
      Renaming.methods(
          (owner, name, descriptor) ->
              (owner.startsWith("com/google/cloud/spanner/")
                      && name.equals("executeQuery")
                      && descriptor.startsWith(
                          "(Lcom/google/spanner/v1/ExecuteSqlRequest;"
                              + "Lcom/google/cloud/spanner/spi/v1/SpannerRpc$ResultStreamConsumer;"))
                  ? "executeStreamingQuery"
                  : null);

  /**
   * A tuned client with grpc-gcp whose hook is missing: its 20 point selects work, and
   * spanner-tuning warns once, for {@code reason}.
   */
  private static Outcome runWithTraffic(Remapper remapper, boolean ownRpcFactory, String reason)
      throws Exception {
    Outcome outcome = run((entry) -> true, remapper, ownRpcFactory, true);
    outcome.assertTrafficWorks();
    outcome.assertOneWarning(reason);
    return outcome;
  }

  /** What the application saw and what spanner-tuning logged. */
  private record Outcome(Map<String, String> features, List<String> warnings) {

    void assertTrafficWorks() {
      assertThat(this.features.get("rows")).as("rows of 20 point selects").isEqualTo("20");
    }

    void assertOneWarning(String reason) {
      assertThat(this.warnings)
          .as("spanner-tuning's warnings (features %s)", this.features)
          .hasSize(1);
      assertThat(this.warnings.get(0)).contains(reason);
    }
  }

  private static Outcome run(
      Predicate<String> classpathEntries, Remapper remapper, boolean ownRpcFactory, boolean grpcGcp)
      throws Exception {
    return run(classpathEntries, remapper, ownRpcFactory, grpcGcp, true);
  }

  @SuppressWarnings("unchecked")
  private static Outcome run(
      Predicate<String> classpathEntries,
      Remapper remapper,
      boolean ownRpcFactory,
      boolean grpcGcp,
      boolean tuned)
      throws Exception {
    try (LogCapture warnings =
        LogCapture.start(
            "io.github.spannertuning", (level) -> level.intValue() >= Level.WARNING.intValue())) {
      // Not closed: the client's Netty threads outlive the test and still load classes from it.
      IsolatingClassLoader loader = new IsolatingClassLoader(classpathEntries, remapper);
      Thread thread = Thread.currentThread();
      ClassLoader contextLoader = thread.getContextClassLoader();
      // The isolated application's own, as a separate application's would be: OpenTelemetry finds
      // its context storage through it (opentelemetry-sdk-testing's, on the test classpath), and
      // one from the test's loader is not a subtype of the isolated client's interface.
      thread.setContextClassLoader(loader);
      try {
        Class<?> probe = loader.loadClass(HookProbe.class.getName());
        assertThat(probe.getClassLoader()).isSameAs(loader);
        Map<String, String> features =
            (Map<String, String>)
                probe
                    .getMethod("run", int.class, boolean.class, boolean.class, boolean.class)
                    .invoke(null, server.get().port(), ownRpcFactory, grpcGcp, tuned);
        return new Outcome(features, List.copyOf(warnings.messages()));
      } finally {
        thread.setContextClassLoader(contextLoader);
      }
    }
  }

  /** A member's new name, or {@code null} where it keeps its own. */
  @FunctionalInterface
  private interface Rename {
    String of(String owner, String name, String descriptor);
  }

  /** Renames the fields or the methods a case picks, as a client or grpc-gcp without them. */
  private static final class Renaming extends Remapper {

    private static final Rename NONE = (owner, name, descriptor) -> null;

    private final Rename fields;

    private final Rename methods;

    private Renaming(Rename fields, Rename methods) {
      this.fields = fields;
      this.methods = methods;
    }

    static Renaming fields(Rename fields) {
      return new Renaming(fields, NONE);
    }

    static Renaming methods(Rename methods) {
      return new Renaming(NONE, methods);
    }

    @Override
    public String mapFieldName(String owner, String name, String descriptor) {
      return renamed(this.fields.of(owner, name, descriptor), name);
    }

    @Override
    public String mapMethodName(String owner, String name, String descriptor) {
      return renamed(this.methods.of(owner, name, descriptor), name);
    }

    private static String renamed(String to, String name) {
      return (to != null) ? to : name;
    }
  }

  /**
   * Serves the test classpath, less the entries the predicate rejects, child-first: only the JDK
   * comes from the parent. The client's and grpc-gcp's classes are rewritten with the remapper.
   */
  private static final class IsolatingClassLoader extends URLClassLoader {

    private final Remapper remapper;

    IsolatingClassLoader(Predicate<String> classpathEntries, Remapper remapper)
        throws MalformedURLException {
      super(classpath(classpathEntries), ClassLoader.getPlatformClassLoader());
      this.remapper = remapper;
    }

    private static URL[] classpath(Predicate<String> classpathEntries)
        throws MalformedURLException {
      String path =
          System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
      List<URL> urls = new ArrayList<>();
      for (String entry : path.split(File.pathSeparator)) {
        if (!entry.isEmpty() && classpathEntries.test(entry)) {
          urls.add(new File(entry).toURI().toURL());
        }
      }
      return urls.toArray(URL[]::new);
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
      if (this.remapper == null || !rewritten(name)) {
        return super.findClass(name);
      }
      String resource = name.replace('.', '/') + ".class";
      URL url = findResource(resource);
      if (url == null) {
        throw new ClassNotFoundException(name);
      }
      try (InputStream in = url.openStream()) {
        ClassWriter writer = new ClassWriter(0);
        new ClassReader(in).accept(new ClassRemapper(writer, this.remapper), 0);
        byte[] bytes = writer.toByteArray();
        // The jar's code source, so that the client's version is still read from its jar.
        String location = url.toString();
        URL jar =
            location.startsWith("jar:")
                ? new URL(location.substring(4, location.indexOf("!/")))
                : url;
        return defineClass(
            name,
            bytes,
            0,
            bytes.length,
            new ProtectionDomain(new CodeSource(jar, (Certificate[]) null), null));
      } catch (IOException ex) {
        throw new ClassNotFoundException(name, ex);
      }
    }

    private static boolean rewritten(String name) {
      return name.startsWith("com.google.cloud.spanner.")
          || name.startsWith("com.google.cloud.grpc.");
    }
  }
}
