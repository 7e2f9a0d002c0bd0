package io.github.spannertuning.sample;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * Headless Chromium driven by Selenium, for the tests of the page. A test that needs it is skipped,
 * saying so, where {@code chromium} or {@code chromedriver} is missing ({@code apt-get install
 * chromium chromium-driver}).
 */
final class Chromium {

  private Chromium() {}

  /** Skips the calling test where chromium or chromedriver is not on the PATH. */
  static void assumeInstalled() {
    assumeTrue(
        chromium().isPresent() && chromedriver().isPresent(),
        "chromium and chromedriver not found on PATH (Debian: apt-get install chromium"
            + " chromium-driver); skipping the browser test");
  }

  /** A headless Chromium with its profile in {@code profile}; quit it when done. */
  static ChromeDriver start(Path profile) {
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium().orElseThrow().toFile());
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--user-data-dir=" + profile,
        "--window-size=1280,1250");
    ChromeDriverService service =
        new ChromeDriverService.Builder()
            .usingDriverExecutable(chromedriver().orElseThrow().toFile())
            .usingAnyFreePort()
            .build();
    return new ChromeDriver(service, options);
  }

  private static Optional<Path> chromium() {
    return onPath("chromium", "chromium-browser", "google-chrome");
  }

  private static Optional<Path> chromedriver() {
    return onPath("chromedriver");
  }

  private static Optional<Path> onPath(String... names) {
    List<String> dirs =
        Arrays.asList(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator));
    for (String name : names) {
      for (String dir : dirs) {
        Path candidate = Path.of(dir, name);
        if (Files.isExecutable(candidate)) {
          return Optional.of(candidate);
        }
      }
    }
    return Optional.empty();
  }
}
