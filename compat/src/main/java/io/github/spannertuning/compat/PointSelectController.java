package io.github.spannertuning.compat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Statement;
import java.util.Map;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * Spanner traffic on request, for the tests that drive the application from outside (java -jar).
 */
@RestController
class PointSelectController {

  static final String POINT_SELECT = "SELECT id, name FROM Singers WHERE id = 1";

  private final CompatDatabase database;

  PointSelectController(CompatDatabase database) {
    this.database = database;
  }

  /**
   * Runs single-use point selects, each closed after its one row, and counts the rows; says whether
   * the request ran on a virtual thread (Java 21+ with {@code
   * spring.threads.virtual.enabled=true}).
   */
  @PostMapping("/compat/point-selects")
  Map<String, Object> pointSelects(@RequestParam("count") int count) {
    DatabaseClient client = this.database.client();
    int rows = 0;
    for (int i = 0; i < count; i++) {
      try (ResultSet rs = client.singleUse().executeQuery(Statement.of(POINT_SELECT))) {
        if (rs.next()) {
          rows++;
        }
      }
    }
    return Map.of("rows", rows, "virtualThread", isVirtual(Thread.currentThread()));
  }

  /** Thread.isVirtual() is Java 21 API; the application is built for Java 17. */
  private static boolean isVirtual(Thread thread) {
    try {
      return (Boolean) Thread.class.getMethod("isVirtual").invoke(thread);
    } catch (ReflectiveOperationException ex) {
      return false;
    }
  }
}
