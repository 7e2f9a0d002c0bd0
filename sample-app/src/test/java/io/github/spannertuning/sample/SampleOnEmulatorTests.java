package io.github.spannertuning.sample;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.Key;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spanner.Struct;
import io.github.spannertuning.sample.backend.SampleBackend;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;

/**
 * The whole sample on the official Cloud Spanner emulator, started by the sample itself, and its
 * page there in headless Chromium where that is installed. Skipped, saying so, where the machine
 * has no emulator binary.
 */
@SpringBootTest(
    webEnvironment = WebEnvironment.RANDOM_PORT,
    properties = {"sample.backend=emulator", "sample.seed-singers=300"})
@Import(DataPlaneCallCounter.Config.class)
@SuppressWarnings({"unchecked", "rawtypes"})
class SampleOnEmulatorTests {

  private static final List<Path> USUAL_LOCATIONS =
      List.of(
          Path.of("/usr/lib/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main"),
          Path.of("/usr/share/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main"),
          Path.of("/opt/google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main"),
          Path.of(
              System.getProperty("user.home"),
              "google-cloud-sdk/bin/cloud_spanner_emulator/emulator_main"));

  @LocalServerPort private int port;

  @Autowired private TestRestTemplate rest;

  @Autowired private Supplier<DatabaseClient> databaseClient;

  @Autowired private SampleBackend backend;

  @Autowired private DataPlaneCallCounter dataPlaneCalls;

  @BeforeAll
  static void emulatorPresent() {
    String fromEnv = System.getenv("SPANNER_EMULATOR_BINARY");
    boolean present =
        (fromEnv != null && !fromEnv.isBlank() && Files.isExecutable(Path.of(fromEnv)))
            || USUAL_LOCATIONS.stream().anyMatch(Files::isExecutable);
    assumeTrue(
        present,
        "Cloud Spanner emulator not found (SPANNER_EMULATOR_BINARY, "
            + USUAL_LOCATIONS
            + "); skipping the sample's emulator tests");
  }

  @Test
  void runsOnTheEmulatorItStarted() {
    assertThat(this.backend.kind()).isEqualTo(SampleBackend.Kind.EMULATOR_STARTED);
  }

  @Test
  void seededRowsAreServedByTheRestEndpoints() {
    DatabaseClient client = this.databaseClient.get();
    assertThat(count(client, "Singers")).isEqualTo(300);
    assertThat(count(client, "Albums")).isEqualTo(900);
    Struct direct =
        client
            .singleUse()
            .readRow("Singers", Key.of(42L), List.of("FirstName", "LastName", "Country"));

    Map<String, Object> singer = this.rest.getForObject("/singers/42", Map.class);
    assertThat(singer)
        .containsEntry("singerId", 42)
        .containsEntry("firstName", direct.getString("FirstName"))
        .containsEntry("lastName", direct.getString("LastName"))
        .containsEntry("country", direct.getString("Country"));
    assertThat(this.rest.getForEntity("/singers/301", Map.class).getStatusCode())
        .isEqualTo(HttpStatus.NOT_FOUND);

    String prefix = direct.getString("LastName").substring(0, 2);
    List<?> found = this.rest.getForObject("/singers?lastName=" + prefix, List.class);
    assertThat(found).isNotEmpty().hasSizeLessThanOrEqualTo(20);
    assertThat(found)
        .allSatisfy(
            (row) -> assertThat((String) ((Map<?, ?>) row).get("lastName")).startsWith(prefix));

    List<?> albums = this.rest.getForObject("/singers/42/albums", List.class);
    assertThat(albums).hasSize(3);
  }

  @Test
  void aWriteIsReadBack() {
    DatabaseClient client = this.databaseClient.get();
    long before =
        client
            .singleUse()
            .readRow("Albums", Key.of(7L, 2L), List.of("CopiesSold"))
            .getLong("CopiesSold");

    ResponseEntity<Map> written =
        this.rest.postForEntity("/singers/7/albums/2/sales?copies=13", null, Map.class);

    assertThat(written.getStatusCode()).isEqualTo(HttpStatus.OK);
    assertThat(written.getBody()).containsEntry("copiesSold", (int) (before + 13));
    assertThat(this.rest.getForObject("/singers/7/albums/2", Map.class))
        .containsEntry("copiesSold", (int) (before + 13));
    assertThat(
            client
                .singleUse()
                .readRow("Albums", Key.of(7L, 2L), List.of("CopiesSold"))
                .getLong("CopiesSold"))
        .isEqualTo(before + 13);
    assertThat(
            this.rest
                .postForEntity("/singers/7/albums/9/sales?copies=1", null, Map.class)
                .getStatusCode())
        .isEqualTo(HttpStatus.NOT_FOUND);
  }

  @Test
  void aBurstCompletesAndEachOfItsReadsIsOneChannelCall() {
    TuningEndpoint endpoint = new TuningEndpoint(this.rest);
    awaitQuiet(endpoint);
    long callsBefore = endpoint.channelCalls();

    Map<String, Object> burst =
        this.rest.postForObject("/load/burst?rate=100&length=2", null, Map.class);

    assertThat(burst).containsEntry("reads", 200).containsEntry("errors", 0);
    awaitQuiet(endpoint);
    // Only this test's traffic runs meanwhile: each single-use read is one call on one channel.
    assertThat(endpoint.channelCalls() - callsBefore).isEqualTo(200);
  }

  @Test
  void channelCallsAddUpToTheDataPlaneCallsMade() {
    TuningEndpoint endpoint = new TuningEndpoint(this.rest);
    this.rest.getForObject("/singers/3", Map.class);
    this.rest.getForObject("/singers?lastName=A", List.class);
    awaitQuiet(endpoint);
    // Since the client was built: the DDL and instance creation went over admin channels, which
    // must not be counted; seeding, reads and commits went over the data plane.
    assertThat(endpoint.channelCalls())
        .as(
            "channel calls; data-plane calls %d, all calls including admin %d",
            this.dataPlaneCalls.calls(), this.dataPlaneCalls.allCalls())
        .isEqualTo(this.dataPlaneCalls.calls());
    assertThat(this.dataPlaneCalls.calls()).isPositive();
  }

  @Test
  void thePageSaysWhyTheGuardSkipsNothingHere(@TempDir Path profile) {
    Chromium.assumeInstalled();
    ChromeDriver driver = Chromium.start(profile);
    try {
      WebDriverWait wait = new WebDriverWait(driver, Duration.ofSeconds(60));
      wait.ignoring(StaleElementReferenceException.class);
      driver.get("http://localhost:" + this.port + "/");
      wait.until(
          (d) ->
              "emulator-started"
                  .equals(d.findElement(By.id("backend")).getDomAttribute("data-kind")));
      WebElement note = driver.findElement(By.id("emulator-note"));
      assertThat(note.isDisplayed()).isTrue();
      assertThat(note.getText()).contains("never marks", "last", "--sample.backend=embedded");

      // What the note explains: a burst of findById and existsById, and the guard skipped nothing.
      wait.until((d) -> d.findElements(By.id("feature-stream-end-guard")).size() == 1);
      WebElement rate = driver.findElement(By.id("rate"));
      rate.clear();
      rate.sendKeys("100");
      WebElement length = driver.findElement(By.id("length"));
      length.clear();
      length.sendKeys("2");
      driver.findElement(By.id("burst")).click();
      wait.until(
          (d) -> "true".equals(d.findElement(By.id("burst-result")).getDomAttribute("data-done")));
      assertThat(driver.findElement(By.id("burst-result")).getText())
          .startsWith("200 reads")
          .contains("0 errors");
      // Newest burst first; column 7 is "guard skipped".
      assertThat(
              driver
                  .findElement(By.cssSelector("#history tr:nth-child(2) td:nth-child(7)"))
                  .getText())
          .isEqualTo("0");
    } finally {
      driver.quit();
    }
  }

  private static void awaitQuiet(TuningEndpoint endpoint) {
    await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.activeStreams() == 0);
  }

  private static long count(DatabaseClient client, String table) {
    try (ResultSet rows =
        client.singleUse().executeQuery(Statement.of("SELECT COUNT(*) FROM " + table))) {
      rows.next();
      return rows.getLong(0);
    }
  }
}
