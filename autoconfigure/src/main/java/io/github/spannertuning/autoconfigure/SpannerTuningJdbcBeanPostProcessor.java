package io.github.spannertuning.autoconfigure;

import io.github.spannertuning.client.CallObserver;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.jdbc.SpannerJdbcTuning;
import io.github.spannertuning.jdbc.TunedJdbcClient;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.beans.factory.BeanClassLoaderAware;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.core.Ordered;
import org.springframework.util.ClassUtils;

/**
 * Tunes the Spanner client of Google's JDBC driver for every {@link DataSource} bean whose URL is
 * {@code jdbc:cloudspanner:...}, as the bean is created and before anything opens a connection
 * through it. The URL and its connection properties are read from the pool as Boot configures it:
 * Hikari's {@code jdbcUrl} and {@code dataSourceProperties}, or the {@code url} and {@code
 * connectionProperties} of Spring's driver-based data sources; the user name and password are
 * passed as the pool passes them to the driver. Each client is recorded in the {@link
 * SpannerTuningRegistry} under the DataSource bean's name, tuned or {@code unsupported} with the
 * reason. The DataSource itself is left as it is.
 *
 * <p>Each tuned client holds one Connection API connection while the context runs, so that the
 * driver keeps the tuned client. The driver refuses {@code ConnectionOptions.closeSpanner()} and
 * {@code SpannerPool.closeSpannerPool()} while any connection is open, and applications call these
 * at shutdown: so the connections are let go as the context starts closing, on its {@link
 * ContextClosedEvent}, before any of its beans is stopped or destroyed.
 */
class SpannerTuningJdbcBeanPostProcessor
    implements BeanPostProcessor,
        BeanClassLoaderAware,
        ApplicationContextAware,
        DisposableBean,
        Ordered {

  private static final Log logger = LogFactory.getLog(SpannerTuningJdbcBeanPostProcessor.class);

  private final ObjectProvider<SpannerTuningProperties> properties;

  private final ObjectProvider<SpannerTuningRegistry> registry;

  private final List<TunedJdbcClient> clients = new CopyOnWriteArrayList<>();

  private final ObjectProvider<CallObserver.Factory> observations;

  private ClassLoader classLoader = ClassUtils.getDefaultClassLoader();

  SpannerTuningJdbcBeanPostProcessor(
      ObjectProvider<SpannerTuningProperties> properties,
      ObjectProvider<SpannerTuningRegistry> registry,
      ObjectProvider<CallObserver.Factory> observations) {
    this.properties = properties;
    this.registry = registry;
    this.observations = observations;
  }

  @Override
  public void setBeanClassLoader(ClassLoader classLoader) {
    this.classLoader = classLoader;
  }

  @Override
  public void setApplicationContext(ApplicationContext context) {
    // A listener of its own, not this post-processor: its order is the listeners' first, where the
    // post-processor's order is the post-processors' last.
    if (context instanceof ConfigurableApplicationContext configurable) {
      configurable.addApplicationListener(new ReleaseOnClose(context));
    }
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    if (!(bean instanceof DataSource)) {
      return bean;
    }
    String url = (String) read(bean, "getJdbcUrl", "getUrl");
    if (!SpannerJdbcTuning.isSpannerUrl(url)) {
      return bean;
    }
    // Outside the fail-open block, as for the other clients: a bad value stops startup.
    SpannerTuning tuning = this.properties.getObject().toTuning(this.observations.getIfAvailable());
    try {
      long start = System.nanoTime();
      TunedJdbcClient client =
          SpannerJdbcTuning.tune(url, connectionProperties(bean), tuning, this.classLoader);
      long millis = (System.nanoTime() - start) / 1_000_000;
      this.clients.add(client);
      this.registry.getObject().register(beanName, client);
      if (client.isTuned()) {
        logger.info(
            "spanner-tuning: tuned the JDBC driver's Spanner client for DataSource '"
                + beanName
                + "' ("
                + client.database()
                + ", in "
                + millis
                + " ms) "
                + client.state().summary());
      }
    } catch (RuntimeException | LinkageError ex) {
      logger.warn(
          "spanner-tuning could not tune the JDBC client of DataSource '"
              + beanName
              + "'; it is left as it was",
          ex);
    }
    return bean;
  }

  /** The properties the pool passes to the driver: its own, then the user and password. */
  private static Properties connectionProperties(Object dataSource) {
    Properties properties = new Properties();
    Object configured = read(dataSource, "getDataSourceProperties", "getConnectionProperties");
    if (configured instanceof Properties given) {
      properties.putAll(given);
    }
    Object user = read(dataSource, "getUsername");
    if (user != null) {
      properties.setProperty("user", user.toString());
    }
    Object password = read(dataSource, "getPassword");
    if (password != null) {
      properties.setProperty("password", password.toString());
    }
    return properties;
  }

  /** The first of these getters the bean has, called; {@code null} when it has none. */
  private static Object read(Object bean, String... getters) {
    for (String getter : getters) {
      Method method = ClassUtils.getMethodIfAvailable(bean.getClass(), getter);
      if (method != null) {
        try {
          return method.invoke(bean);
        } catch (ReflectiveOperationException | RuntimeException ex) {
          return null;
        }
      }
    }
    return null;
  }

  /** Lets go of the connections held; the clients stay registered, tuned, in the driver's pool. */
  private void release() {
    this.clients.forEach(TunedJdbcClient::close);
  }

  @Override
  public void destroy() {
    // Released already when the context closed; a context closed without its event (a bean
    // factory destroyed on its own) lets them go here.
    release();
    this.clients.clear();
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }

  /**
   * Releases the held connections when this context starts closing. A {@link ContextClosedEvent} is
   * published before the context stops or destroys any bean, and this listener is ordered first
   * among its listeners: an application that closes the driver's clients in a listener of that
   * event, in a {@code @PreDestroy} or {@code stop()} of its beans, or after the context closed,
   * finds no connection of spanner-tuning open. The driver keeps each client for at least a minute
   * after its last connection closes, so connections the application opens while it shuts down
   * still share the tuned client.
   */
  private final class ReleaseOnClose implements ApplicationListener<ContextClosedEvent>, Ordered {

    private final ApplicationContext context;

    private ReleaseOnClose(ApplicationContext context) {
      this.context = context;
    }

    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
      // A child context's close (the management server's, say) reaches its parent's listeners
      // too; the DataSources of this context still serve.
      if (event.getApplicationContext() == this.context) {
        release();
      }
    }

    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE;
    }
  }
}
