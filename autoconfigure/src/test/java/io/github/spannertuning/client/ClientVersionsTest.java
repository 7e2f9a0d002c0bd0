package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * grpc-gcp 1.9.0 has no version in its jar, only in the jar's name; these are the locations a
 * class's jar has on a plain classpath and in Boot's executable jars. The compat module's
 * executable-jar test checks the same from a real {@code java -jar}.
 */
class ClientVersionsTest {

  @Test
  void readsTheVersionFromAJarOnTheClasspath() {
    assertThat(
            ClientVersions.versionFromJarLocation(
                "grpc-gcp",
                "file:/home/me/.m2/repository/com/google/cloud/grpc-gcp/1.9.0/grpc-gcp-1.9.0.jar"))
        .isEqualTo("1.9.0");
  }

  @Test
  void readsTheVersionFromANestedJarOfBoot32AndLater() {
    assertThat(
            ClientVersions.versionFromJarLocation(
                "grpc-gcp", "jar:nested:/srv/app.jar/!BOOT-INF/lib/grpc-gcp-1.9.0.jar!/"))
        .isEqualTo("1.9.0");
  }

  @Test
  void readsTheVersionFromANestedJarOfOlderBoot() {
    assertThat(
            ClientVersions.versionFromJarLocation(
                "grpc-gcp", "jar:file:/srv/app.jar!/BOOT-INF/lib/grpc-gcp-1.9.0.jar!/"))
        .isEqualTo("1.9.0");
  }

  @Test
  void answersUnknownForADirectoryOrAnotherJar() {
    assertThat(ClientVersions.versionFromJarLocation("grpc-gcp", "file:/work/target/classes/"))
        .isEqualTo("unknown");
    assertThat(
            ClientVersions.versionFromJarLocation(
                "grpc-gcp", "jar:nested:/srv/app.jar/!BOOT-INF/lib/google-cloud-core-2.50.0.jar!/"))
        .isEqualTo("unknown");
  }
}
