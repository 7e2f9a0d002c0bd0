package io.github.spannertuning.testing;

import java.nio.file.Files;
import java.nio.file.Path;

/** Files of the repository that tests check the documentation against or write it to. */
public final class ProjectFiles {

  private ProjectFiles() {}

  /**
   * The repository's root: the nearest directory above the working directory (a module's, under
   * Maven) that holds the README and the docs.
   */
  public static Path root() {
    Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
    while (dir != null) {
      if (Files.isRegularFile(dir.resolve("README.md")) && Files.isDirectory(dir.resolve("docs"))) {
        return dir;
      }
      dir = dir.getParent();
    }
    throw new IllegalStateException(
        "No README.md and docs/ above " + System.getProperty("user.dir"));
  }
}
