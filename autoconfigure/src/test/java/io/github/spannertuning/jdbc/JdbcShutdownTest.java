package io.github.spannertuning.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.cloud.spanner.connection.ConnectionOptions;
import com.google.cloud.spanner.connection.SpannerPool;
import com.google.cloud.spanner.jdbc.JdbcDriver;
import io.github.spannertuning.autoconfigure.SpannerTuningAutoConfiguration;
import io.github.spannertuning.autoconfigure.SpannerTuningRegistry;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import jakarta.annotation.PreDestroy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * An application on a non-pooling {@code jdbc:cloudspanner:} DataSource that releases the driver's
 * threads at shutdown with {@code ConnectionOptions.closeSpanner()} or one of the two {@code
 * SpannerPool.closeSpannerPool()} (the JDBC driver's, and the Connection API's it calls). The
 * driver refuses that call while any connection of its pool is open; the application holds none at
 * shutdown, so the call must succeed with the starter as it does without it, wherever in Spring's
 * shutdown the application makes it: in a {@code ContextClosedEvent} listener, in {@code stop()} of
 * its lifecycle bean, in a {@code @PreDestroy} of its own bean (destroyed before the starter's,
 * which are created first), or after the context closed. The driver's tuned client is then closed,
 * which its state reports.
 */
class JdbcShutdownTest {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  /** Where in the application's shutdown it releases the driver's threads. */
  enum When {
    /** {@code ConnectionOptions.closeSpanner()} in a {@code ContextClosedEvent} listener. */
    CONTEXT_CLOSED_LISTENER,
    /**
     * The JDBC driver's {@code SpannerPool.closeSpannerPool()} in a {@code @PreDestroy} of its own
     * bean.
     */
    PRE_DESTROY,
    /** {@code ConnectionOptions.closeSpanner()} in {@code stop()} of its own lifecycle bean. */
    LIFECYCLE_STOP,
    /** The Connection API's {@code SpannerPool.closeSpannerPool()} once the context has closed. */
    AFTER_CONTEXT_CLOSED
  }

  /** Starts and ends every case with no driver client left over, from this class or another. */
  @BeforeEach
  @AfterEach
  void closeTheDriversClients() {
    // Fails if a connection was left open: after the context closed, nothing may hold one.
    ConnectionOptions.closeSpanner();
  }

  @ParameterizedTest
  @EnumSource(When.class)
  void closingTheDriversClientAtShutdownSucceedsWithTheStarter(When when) {
    ShutdownCall call = new ShutdownCall();
    AtomicBoolean clientClosed = new AtomicBoolean();
    runner(when, call)
        .withConfiguration(AutoConfigurations.of(SpannerTuningAutoConfiguration.class))
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              TunedJdbcClient client =
                  context.getBean(SpannerTuningRegistry.class).jdbcClient("dataSource").get();
              assertThat(client.isTuned()).as("%s", client).isTrue();
              pointSelect(context.getBean(DataSource.class));
              client.state().onClose(() -> clientClosed.set(true));
            });
    if (when == When.AFTER_CONTEXT_CLOSED) {
      call.run(SpannerPool::closeSpannerPool);
    }
    assertThat(call.made).as("the application's call was made").isTrue();
    assertThat(call.failure.get()).as("the driver's answer to the application's call").isNull();
    assertThat(clientClosed).as("the driver's tuned client was closed").isTrue();
  }

  /**
   * Once spanner-tuning let its connection go, the driver keeps the tuned client: an application
   * bean that still reads as it is destroyed reads through it, routed, and builds no other client
   * (which would open a session of its own).
   */
  @Test
  void readsWhileTheContextClosesStillGoThroughTheTunedClient() {
    ShutdownCall read = new ShutdownCall();
    AtomicReference<TunedJdbcClient> tuned = new AtomicReference<>();
    AtomicLong routedBeforeClose = new AtomicLong();
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(SpannerTuningAutoConfiguration.class))
        .withBean(ShutdownCall.class, () -> read)
        .withUserConfiguration(Application.class, ReadsOnPreDestroy.class)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              TunedJdbcClient client =
                  context.getBean(SpannerTuningRegistry.class).jdbcClient("dataSource").get();
              pointSelect(context.getBean(DataSource.class));
              tuned.set(client);
              routedBeforeClose.set(client.state().singleUseRoutedCount());
              assertThat(server.get().calls("CreateSession"))
                  .as("the session of the tuned client, as the server counts sessions")
                  .isNotEmpty();
              server.get().reset();
            });
    assertThat(read.made).as("the application's read at shutdown was made").isTrue();
    assertThat(read.failure.get()).as("the application's read at shutdown").isNull();
    assertThat(tuned.get().state().singleUseRoutedCount())
        .as("reads routed by the tuned client, after the read at shutdown")
        .isGreaterThan(routedBeforeClose.get());
    assertThat(server.get().calls("CreateSession"))
        .as("sessions created while the context closed: a client built anew")
        .isEmpty();
  }

  /** The same application without the starter: what the starter must not change. */
  @ParameterizedTest
  @EnumSource(When.class)
  void closingTheDriversClientAtShutdownSucceedsWithoutTheStarter(When when) {
    ShutdownCall call = new ShutdownCall();
    runner(when, call)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              pointSelect(context.getBean(DataSource.class));
            });
    if (when == When.AFTER_CONTEXT_CLOSED) {
      call.run(SpannerPool::closeSpannerPool);
    }
    assertThat(call.made).as("the application's call was made").isTrue();
    assertThat(call.failure.get()).as("the driver's answer to the application's call").isNull();
  }

  private static ApplicationContextRunner runner(When when, ShutdownCall call) {
    ApplicationContextRunner runner =
        new ApplicationContextRunner()
            .withPropertyValues(
                "spring.cloud.gcp.spanner.enabled=false", "spring.cloud.gcp.core.enabled=false")
            .withBean(ShutdownCall.class, () -> call)
            .withUserConfiguration(Application.class);
    return switch (when) {
      case CONTEXT_CLOSED_LISTENER -> runner.withUserConfiguration(ClosesOnContextClosed.class);
      case PRE_DESTROY -> runner.withUserConfiguration(ClosesOnPreDestroy.class);
      case LIFECYCLE_STOP -> runner.withUserConfiguration(ClosesOnStop.class);
      case AFTER_CONTEXT_CLOSED -> runner;
    };
  }

  private static void pointSelect(DataSource dataSource) throws Exception {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        ResultSet rows = statement.executeQuery(MockSpannerServer.POINT_SELECT)) {
      assertThat(rows.next()).isTrue();
    }
  }

  /** A call the application makes at shutdown, and what it threw. */
  static final class ShutdownCall {

    volatile boolean made;

    final AtomicReference<Throwable> failure = new AtomicReference<>();

    void run(Runnable call) {
      this.made = true;
      try {
        call.run();
      } catch (RuntimeException | AssertionError ex) {
        // Spring logs and swallows what a listener or destroy method throws: keep it to assert.
        this.failure.set(ex);
      }
    }
  }

  /** A non-pooling DataSource, as Spring's {@code DriverManagerDataSource} is. */
  @Configuration(proxyBeanMethods = false)
  static class Application {

    @Bean
    DataSource dataSource() {
      DriverManagerDataSource dataSource =
          new DriverManagerDataSource(
              "jdbc:cloudspanner://localhost:"
                  + server.get().port()
                  + "/projects/p/instances/i/databases/d;usePlainText=true");
      dataSource.setDriverClassName(JdbcDriver.class.getName());
      return dataSource;
    }
  }

  /** The application releases the driver's threads as the context closes, before any destroy. */
  @Configuration(proxyBeanMethods = false)
  static class ClosesOnContextClosed {

    @Bean
    ApplicationListener<ContextClosedEvent> closesTheDriversClient(ShutdownCall call) {
      return (event) -> call.run(ConnectionOptions::closeSpanner);
    }
  }

  /**
   * The application releases the driver's threads as its own bean, which uses the DataSource, is
   * destroyed: before the DataSource and before the starter's post-processors.
   */
  @Configuration(proxyBeanMethods = false)
  static class ClosesOnPreDestroy {

    @Bean
    Repository repository(DataSource dataSource, ShutdownCall call) {
      return new Repository(dataSource, call);
    }
  }

  /** The application releases the driver's threads as the context stops its lifecycle beans. */
  @Configuration(proxyBeanMethods = false)
  static class ClosesOnStop {

    @Bean
    SmartLifecycle closesTheDriversClient(ShutdownCall call) {
      return new SmartLifecycle() {

        private volatile boolean running;

        @Override
        public void start() {
          this.running = true;
        }

        @Override
        public void stop() {
          this.running = false;
          call.run(ConnectionOptions::closeSpanner);
        }

        @Override
        public boolean isRunning() {
          return this.running;
        }
      };
    }
  }

  /** The application reads through the DataSource as its own bean is destroyed. */
  @Configuration(proxyBeanMethods = false)
  static class ReadsOnPreDestroy {

    @Bean
    Reader reader(DataSource dataSource, ShutdownCall call) {
      return new Reader(dataSource, call);
    }
  }

  /** An application bean that reads once more as it is destroyed. */
  static final class Reader {

    private final DataSource dataSource;

    private final ShutdownCall call;

    Reader(DataSource dataSource, ShutdownCall call) {
      this.dataSource = dataSource;
      this.call = call;
    }

    @PreDestroy
    void readOnceMore() {
      this.call.run(
          () -> {
            try {
              pointSelect(this.dataSource);
            } catch (Exception ex) {
              throw new IllegalStateException(ex);
            }
          });
    }
  }

  /** An application bean on the DataSource. */
  static final class Repository {

    private final ShutdownCall call;

    Repository(DataSource dataSource, ShutdownCall call) {
      this.call = call;
    }

    @PreDestroy
    void releaseTheDriversThreads() {
      this.call.run(com.google.cloud.spanner.jdbc.SpannerPool::closeSpannerPool);
    }
  }
}
