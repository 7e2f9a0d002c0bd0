package io.github.spannertuning.compat;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.Spanner;
import java.util.function.Supplier;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * The application's database. Not a {@code DatabaseClient} bean: spring-cloud-gcp's Spanner
 * auto-configuration (where the line has it) brings its own {@code Supplier<DatabaseClient>}, and
 * it is used in mode {@code spring-cloud-gcp}; the other modes take the application's own {@code
 * Spanner} bean.
 */
@Component
public class CompatDatabase {

  private final ObjectProvider<Spanner> spanner;

  private final ObjectProvider<Supplier<DatabaseClient>> springCloudGcp;

  private final boolean ownClient;

  private final DatabaseId id;

  CompatDatabase(
      ObjectProvider<Spanner> spanner,
      ObjectProvider<Supplier<DatabaseClient>> springCloudGcp,
      @Value("${compat.spanner.mode:own-options}") String mode,
      @Value("${spring.cloud.gcp.project-id}") String project,
      @Value("${spring.cloud.gcp.spanner.instance-id}") String instance,
      @Value("${spring.cloud.gcp.spanner.database}") String database) {
    this.spanner = spanner;
    this.springCloudGcp = springCloudGcp;
    this.ownClient = !mode.equals("spring-cloud-gcp");
    this.id = DatabaseId.of(project, instance, database);
  }

  public DatabaseClient client() {
    return this.ownClient
        ? this.spanner.getObject().getDatabaseClient(this.id)
        : this.springCloudGcp.getObject().get();
  }
}
