package io.github.spannertuning.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.client.Feature;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The page in a real browser: headless Chromium driven by Selenium, against the sample on its
 * embedded fake backend (so it runs wherever Chromium does). Skipped, saying so, where {@code
 * chromium} or {@code chromedriver} is missing ({@code apt-get install chromium chromium-driver}).
 */
@SpringBootTest(
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {"sample.backend=embedded", "sample.seed-singers=500"})
class SamplePageBrowserTests {

  @LocalServerPort private int port;

  @Autowired private SpannerTuningRegistry registry;

  private ChromeDriver driver;

  @BeforeAll
  static void findChromium() {
    Chromium.assumeInstalled();
  }

  @AfterEach
  void quit() {
    if (this.driver != null) {
      this.driver.quit();
    }
  }

  @Test
  void burstShowsOnSeveralChannelsAndTheGuardSwitchesOff(@TempDir Path profile) throws IOException {
    this.driver = Chromium.start(profile);
    // The page redraws every second: elements found before a redraw go stale.
    WebDriverWait wait = new WebDriverWait(this.driver, Duration.ofSeconds(30));
    wait.ignoring(StaleElementReferenceException.class);
    this.driver.get("http://localhost:" + this.port + "/");
    wait.until((d) -> "on".equals(guardState()));
    assertThat(this.driver.findElement(By.id("backend")).getText()).contains("FAKE");
    wait.until((d) -> "embedded-fake".equals(backendKind()));
    assertThat(this.driver.findElement(By.id("emulator-note")).isDisplayed()).isFalse();
    // The sample's configuration is clean: the Advice card says so rather than staying blank.
    wait.until((d) -> !d.findElements(By.id("advice-none")).isEmpty());

    click(wait, "burst");
    wait.until((d) -> channelsWithCalls() >= 2);
    wait.until((d) -> burstDone());
    assertThat(script("return document.getElementById('burst-result').textContent"))
        .asString()
        .contains("0 errors");
    assertThat(counter("streamEndGuardSkipped")).isPositive();
    // The burst's reads, timed as observations, on the Operations card with the frontend's share.
    wait.until((d) -> operations("StreamingRead") > 0);
    assertThat(
            script(
                "return document.querySelector(\"#operations-table tr[data-method='StreamingRead']"
                    + " td:nth-child(5)\").textContent"))
        .asString()
        .endsWith("%");
    // The first burst warmed the JVM; the two compared below run warm.
    click(wait, "burst");
    wait.until((d) -> burstDone());

    click(wait, "switch-stream-end-guard");
    wait.until((d) -> "off".equals(guardState()));
    assertThat(
            script("return document.querySelector('#feature-stream-end-guard .state').textContent"))
        .isEqualTo("off");
    assertThat(this.registry.client("spanner").orElseThrow().isActive(Feature.STREAM_END_GUARD))
        .isFalse();

    click(wait, "burst");
    wait.until((d) -> burstDone());
    // Newest burst first: guard off skipped nothing; the burst before, guard on, skipped some.
    assertThat(historyCell(1, 2)).isEqualTo("off");
    assertThat(historyCell(1, 7)).isEqualTo("0");
    assertThat(historyCell(2, 2)).isEqualTo("on");
    assertThat(Long.parseLong(historyCell(2, 7))).isPositive();
  }

  @Test
  void anExperimentStartsFromThePageShowsItsProgressAndStops(@TempDir Path profile) {
    this.driver = Chromium.start(profile);
    WebDriverWait wait = new WebDriverWait(this.driver, Duration.ofSeconds(30));
    wait.ignoring(StaleElementReferenceException.class);
    this.driver.get("http://localhost:" + this.port + "/");
    wait.until((d) -> "none".equals(experimentState()));
    click(wait, "experiment-start");
    wait.until((d) -> "running".equals(experimentState()));
    assertThat(this.registry.client("spanner").orElseThrow().isExperimentRunning()).isTrue();
    // The page's plan: 2m of 10s slices.
    assertThat(script("return document.getElementById('experiment-head').textContent"))
        .asString()
        .contains("pairs of 10s slices recorded · ")
        .contains(" of 12 slices done");
    assertThat(script("return document.querySelectorAll('#experiment tr[data-kind]').length"))
        .isEqualTo(3L);
    click(wait, "experiment-stop");
    wait.until((d) -> "stopped".equals(experimentState()));
    assertThat(this.registry.client("spanner").orElseThrow().isExperimentRunning()).isFalse();
    assertThat(script("return document.getElementById('experiment-head').textContent"))
        .asString()
        .startsWith("stopped (stopped by anonymous through the spannertuning endpoint)");
  }

  /**
   * The warm-up card: the client's channels were connected and primed before the app reported
   * ready, how long that took, the priming calls and the cold reads, and per channel its
   * connection's time and priming.
   */
  @Test
  @SuppressWarnings("unchecked")
  void theWarmUpCardShowsEveryChannelConnectedAndPrimed(@TempDir Path profile) {
    this.driver = Chromium.start(profile);
    WebDriverWait wait = new WebDriverWait(this.driver, Duration.ofSeconds(30));
    wait.ignoring(StaleElementReferenceException.class);
    this.driver.get("http://localhost:" + this.port + "/");
    wait.until(
        (d) -> "warm".equals(script("return document.getElementById('warm-up').dataset.state")));
    int channels = this.registry.client("spanner").orElseThrow().poolSize();

    assertThat(warmUpValue("channelsWarm")).isEqualTo(channels + " of " + channels);
    assertThat(warmUpValue("warmUpTook")).matches("\\d+\\.\\d\\d s");
    assertThat(Long.parseLong(warmUpValue("primed").replaceAll("[^0-9]", "")))
        .isGreaterThanOrEqualTo(channels);
    assertThat(warmUpValue("coldReads")).matches("[0-9,]+");
    // In one script: the once-a-second redraw replaces the rows between two driver calls.
    assertThat(
            (List<String>)
                script(
                    "return [...document.querySelectorAll('#warm-channels tr[data-channel]')]"
                        + ".map((row) => row.dataset.primed + ' ' + row.cells[1].textContent"
                        + " + ' ' + row.cells[2].textContent);"))
        .hasSize(channels)
        .allSatisfy(
            (row) ->
                assertThat(row)
                    .startsWith("true ")
                    .matches(".* \\(\\d+(\\.\\d)? (s|min|h) ago\\) primed"));
  }

  /**
   * A refusal of the endpoint, with its reason, stays in view while the page polls every second,
   * until the user dismisses it or does something else.
   */
  @Test
  void aRefusalStaysInViewUntilTheUserActs(@TempDir Path profile) throws InterruptedException {
    this.driver = Chromium.start(profile);
    WebDriverWait wait = new WebDriverWait(this.driver, Duration.ofSeconds(30));
    wait.ignoring(StaleElementReferenceException.class);
    this.driver.get("http://localhost:" + this.port + "/");
    // No experiment running, which would be the refusal's reason instead (another test's).
    wait.until((d) -> experimentState() != null && !"running".equals(experimentState()));
    script("document.getElementById('experiment-slice').value = '1s'");
    click(wait, "experiment-start");
    wait.until((d) -> this.driver.findElement(By.id("notice")).isDisplayed());
    // Three polls later, the reason is still there.
    Thread.sleep(3000);
    assertThat(this.driver.findElement(By.id("notice")).isDisplayed()).isTrue();
    assertThat(this.driver.findElement(By.id("notice-text")).getText())
        .startsWith("experiment refused: 400")
        .contains("slice");
    assertThat(this.driver.findElement(By.id("status")).getText()).startsWith("updated ");
    click(wait, "notice-dismiss");
    wait.until((d) -> !this.driver.findElement(By.id("notice")).isDisplayed());
  }

  /**
   * The picture of the page in the docs: after two bursts, hedging switched on, with an experiment
   * running. Written to target/sample-page.png; scripts/sample-page-picture.sh copies it to docs/.
   */
  @Test
  void thePictureOfThePageShowsEveryFeatureAndCard(@TempDir Path profile) throws IOException {
    this.driver = Chromium.start(profile);
    this.driver.manage().window().setSize(new org.openqa.selenium.Dimension(1400, 1900));
    WebDriverWait wait = new WebDriverWait(this.driver, Duration.ofSeconds(60));
    wait.ignoring(StaleElementReferenceException.class);
    this.driver.get("http://localhost:" + this.port + "/");
    wait.until((d) -> "on".equals(guardState()));
    click(wait, "burst");
    wait.until((d) -> burstDone());
    click(wait, "switch-hedging");
    wait.until((d) -> "on".equals(featureState("hedging")));
    click(wait, "burst");
    wait.until((d) -> burstDone());
    click(wait, "experiment-start");
    try {
      wait.until((d) -> "running".equals(experimentState()));
      for (String feature :
          List.of(
              "single-use-distribution",
              "transaction-routing",
              "stream-end-guard",
              "hedging",
              "grpc-gcp")) {
        // In one script: the once-a-second redraw replaces the rows between two driver calls.
        assertThat(
                script(
                    "const row = document.getElementById('feature-"
                        + feature
                        + "'); return row !== null && row.getClientRects().length > 0;"))
            .as("the %s row is shown", feature)
            .isEqualTo(Boolean.TRUE);
      }
      assertThat(counter("hedgingSent")).as("the hedging counters are shown").isNotNegative();
      assertThat(script("return document.getElementById('warm-up').dataset.state"))
          .as("the warm-up card is shown")
          .isEqualTo("warm");
      screenshot("sample-page.png");
      assertThat(Path.of("target", "sample-page.png")).isNotEmptyFile();
    } finally {
      click(wait, "experiment-stop");
    }
  }

  @Test
  void theEmulatorNoteShowsOnTheEmulatorBackendsOnly(@TempDir Path profile) {
    this.driver = Chromium.start(profile);
    WebDriverWait wait = new WebDriverWait(this.driver, Duration.ofSeconds(30));
    this.driver.get("http://localhost:" + this.port + "/");
    wait.until((d) -> "embedded-fake".equals(backendKind()));
    // The page as /sample/backend's other kinds draw it (SampleOnEmulatorTests shows it on the
    // emulator the sample starts, where the machine has one).
    Map<String, Boolean> noteShown =
        Map.of(
            "emulator-started", true,
            "emulator-host", true,
            "cloud-spanner", false,
            "embedded-fake", false);
    noteShown.forEach(
        (kind, shown) -> {
          script(
              "showBackend({kind: '"
                  + kind
                  + "', description: 'backend "
                  + kind
                  + "', fake: false})");
          assertThat(this.driver.findElement(By.id("emulator-note")).isDisplayed())
              .as("note shown on %s", kind)
              .isEqualTo(shown);
        });
  }

  /** A figure of the warm-up card, as shown. */
  private String warmUpValue(String key) {
    return (String)
        script(
            "return document.querySelector(\"[data-warm-up='" + key + "'] .value\").textContent;");
  }

  private String backendKind() {
    return (String) script("return document.getElementById('backend').dataset.kind;");
  }

  private String experimentState() {
    return (String)
        script("const e = document.getElementById('experiment'); return e && e.dataset.state;");
  }

  /**
   * Clicks an element found afresh: a redraw between finding it and clicking it makes it stale, and
   * the wait then finds it again.
   */
  private static void click(WebDriverWait wait, String id) {
    wait.until(
        (d) -> {
          d.findElement(By.id(id)).click();
          return true;
        });
  }

  private Object script(String javascript) {
    return this.driver.executeScript(javascript);
  }

  private String guardState() {
    return featureState("stream-end-guard");
  }

  private String featureState(String feature) {
    return (String)
        script(
            "const f = document.getElementById('feature-"
                + feature
                + "'); return f && f.dataset.state;");
  }

  private boolean burstDone() {
    return "true".equals(script("return document.getElementById('burst-result').dataset.done"));
  }

  /** A cell of the burst history table; row 1 is the newest burst, column 1 its number. */
  private String historyCell(int row, int column) {
    return (String)
        script(
            "return document.querySelector('#history tr:nth-child("
                + (row + 1)
                + ") td:nth-child("
                + column
                + ")').textContent");
  }

  private long channelsWithCalls() {
    return (Long)
        script(
            "return [...document.querySelectorAll('#channels .channel')]"
                + ".filter((row) => Number(row.dataset.calls) > 0).length;");
  }

  /** The operations the Operations card shows for a method; 0 while it shows none. */
  private long operations(String method) {
    Object text =
        script(
            "const cell = document.querySelector(\"#operations-table tr[data-method='"
                + method
                + "'] td:nth-child(2)\"); return cell ? cell.textContent : '0';");
    return Long.parseLong(String.valueOf(text).replaceAll("[^0-9]", ""));
  }

  private long counter(String key) {
    String text =
        (String)
            script(
                "return document.querySelector(\"[data-counter='"
                    + key
                    + "'] .value\").textContent;");
    return Long.parseLong(text.replaceAll("[^0-9]", ""));
  }

  private void screenshot(String name) throws IOException {
    File shot = this.driver.getScreenshotAs(OutputType.FILE);
    Path target = Path.of("target", name);
    Files.createDirectories(target.getParent());
    Files.copy(shot.toPath(), target, StandardCopyOption.REPLACE_EXISTING);
  }
}
