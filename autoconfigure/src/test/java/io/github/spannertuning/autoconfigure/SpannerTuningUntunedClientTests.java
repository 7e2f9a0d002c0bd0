package io.github.spannertuning.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.cloud.NoCredentials;
import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.ResultSet;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.Statement;
import com.google.cloud.spi.ServiceRpcFactory;
import io.github.spannertuning.actuate.SpannerTuningEndpoint;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.ClientDescriptor;
import io.github.spannertuning.actuate.SpannerTuningEndpoint.FeatureDescriptor;
import io.github.spannertuning.client.Feature;
import io.github.spannertuning.client.SpannerTuning;
import io.github.spannertuning.testing.MockSpannerServer;
import io.github.spannertuning.testing.MockSpannerServerExtension;
import io.grpc.ManagedChannelBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.jackson.JacksonEndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.jackson.EndpointObjectMapper;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Scope;

/**
 * A {@code Spanner} bean that the application builds in its own {@code @Bean} method from a {@code
 * SpannerOptions.newBuilder()} that is not a bean: spanner-tuning never sees its builder, so the
 * client runs untuned. It is named in one warning and listed as not tuned, and keeps working.
 */
@ExtendWith(OutputCaptureExtension.class)
class SpannerTuningUntunedClientTests {

  @RegisterExtension
  static final MockSpannerServerExtension server = new MockSpannerServerExtension();

  private static final String WARNING = "spanner-tuning: Spanner client '%s' is not tuned";

  private static final String REASON =
      "not tuned: built from a SpannerOptions.Builder or SpannerOptions that is not a bean, which"
          + " spanner-tuning does not see";

  private final ApplicationContextRunner contextRunner =
      new ApplicationContextRunner()
          .withConfiguration(
              AutoConfigurations.of(
                  SpannerTuningAutoConfiguration.class,
                  SpannerTuningMetricsAutoConfiguration.class,
                  SpannerTuningEndpointAutoConfiguration.class,
                  JacksonEndpointAutoConfiguration.class))
          .withPropertyValues("management.endpoints.web.exposure.include=spannertuning");

  @Test
  void oneWarningNamesTheBeanAndHowToReachIt(CapturedOutput output) {
    this.contextRunner
        .withUserConfiguration(UntunedAndTuned.class)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(warnings(output)).containsExactly("ownSpanner");
              assertThat(output)
                  .contains(
                      String.format(WARNING, "ownSpanner")
                          + ": built from a SpannerOptions.Builder or SpannerOptions that is not a"
                          + " bean, which spanner-tuning does not see. To tune it, declare the"
                          + " builder or the options as a @Bean and build the Spanner from that"
                          + " bean, or call SpannerTuning.applyTo on the builder before build()")
                  .contains("Spanner traffic is not affected.")
                  .contains("spanner-tuning: tuned Spanner client 'tunedSpanner'");
              // Left as the application built it, and it works.
              Spanner own = context.getBean("ownSpanner", Spanner.class);
              assertThat(SpannerTuning.stateOf(own.getOptions())).isEmpty();
              assertThat(pointSelects(own, 3)).isEqualTo(3);
            });
  }

  @Test
  void theEndpointListsItAsNotTunedWithTheReason() {
    this.contextRunner
        .withUserConfiguration(UntunedAndTuned.class)
        .run(
            (context) -> {
              SpannerTuningEndpoint endpoint = context.getBean(SpannerTuningEndpoint.class);
              assertThat(endpoint.clients().clients().keySet())
                  .containsExactly("tunedSpanner", "ownSpanner");
              ClientDescriptor own = endpoint.client("ownSpanner");
              assertThat(own).isNotNull();
              assertThat(own.features()).hasSize(Feature.values().length);
              for (Feature feature : Feature.values()) {
                assertThat(own.features().get(feature.id()))
                    .as(feature.id())
                    .isEqualTo(new FeatureDescriptor("unsupported", REASON, null));
              }
              // The pool as the application's builder set it, not a default.
              assertThat(own.pool().kind()).isEqualTo("grpc-gcp");
              assertThat(own.pool().size()).isEqualTo(3);
              // Its calls do not pass through spanner-tuning: nothing is counted on it.
              assertThat(pointSelects(context.getBean("ownSpanner", Spanner.class), 4))
                  .isEqualTo(4);
              assertThat(endpoint.client("ownSpanner").channels()).isEmpty();
              assertThat(endpoint.client("ownSpanner").singleUseRouted()).isZero();
              assertThat(endpoint.client("ownSpanner").imbalance()).isNull();
              assertThat(endpoint.client("ownSpanner").experiment()).isNull();
              // The same fields as a tuned client's: the shape is the endpoint's contract.
              ObjectMapper json = context.getBean(EndpointObjectMapper.class).get();
              assertThat(fieldNames(json.valueToTree(own)))
                  .isEqualTo(fieldNames(json.valueToTree(endpoint.client("tunedSpanner"))));
            });
  }

  @Test
  void nothingCanBeSwitchedOrComparedOnItAndTheAnswerSaysWhy() {
    this.contextRunner
        .withUserConfiguration(UntunedAndTuned.class)
        .run(
            (context) -> {
              SpannerTuningEndpoint endpoint = context.getBean(SpannerTuningEndpoint.class);
              assertThatExceptionOfType(InvalidEndpointRequestException.class)
                  .isThrownBy(
                      () -> endpoint.switchFeature("ownSpanner", "stream-end-guard", false, null))
                  .satisfies((ex) -> assertThat(ex.getReason()).contains(REASON));
              assertThatExceptionOfType(InvalidEndpointRequestException.class)
                  .isThrownBy(
                      () ->
                          endpoint.startExperiment(
                              "ownSpanner", "experiment", null, null, null, null, null))
                  .satisfies((ex) -> assertThat(ex.getReason()).contains(REASON));
            });
  }

  @Test
  void itHasNoMetersAndLeavesTheListingWhenClosed() {
    this.contextRunner
        .withUserConfiguration(UntunedAndTuned.class)
        .withBean(SimpleMeterRegistry.class)
        .run(
            (context) -> {
              MeterRegistry meters = context.getBean(MeterRegistry.class);
              assertThat(
                      meters
                          .find("spanner.tuning.channel.count")
                          .tag("client", "ownSpanner")
                          .meters())
                  .isEmpty();
              assertThat(
                      meters
                          .find("spanner.tuning.channel.count")
                          .tag("client", "tunedSpanner")
                          .meters())
                  .isNotEmpty();
              SpannerTuningEndpoint endpoint = context.getBean(SpannerTuningEndpoint.class);
              assertThat(endpoint.clients().clients()).containsKey("ownSpanner");
              context.getBean("ownSpanner", Spanner.class).close();
              assertThat(endpoint.clients().clients()).containsOnlyKeys("tunedSpanner");
              assertThat(endpoint.client("ownSpanner")).isNull();
            });
  }

  @Test
  void clientsTheStarterTunedGetNoWarning(CapturedOutput output) {
    this.contextRunner
        .withUserConfiguration(Reached.class)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(context.getBean(SpannerTuningRegistry.class).clients())
                  .containsOnlyKeys("fromOptionsBean", "fromBuilderBean", "appliedByHand");
              for (String name : List.of("fromOptionsBean", "fromBuilderBean", "appliedByHand")) {
                assertThat(SpannerTuning.stateOf(context.getBean(name, Spanner.class).getOptions()))
                    .as(name)
                    .isPresent();
              }
              assertThat(warnings(output)).isEmpty();
              assertThat(output).doesNotContain("is not tuned");
            });
  }

  @Test
  void noWarningWhenTheStarterIsSwitchedOff(CapturedOutput output) {
    this.contextRunner
        .withUserConfiguration(UntunedAndTuned.class)
        .withPropertyValues("spanner.tuning.enabled=false")
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(context).doesNotHaveBean(SpannerTuningRegistry.class);
              assertThat(context).doesNotHaveBean(SpannerTuningEndpoint.class);
              assertThat(pointSelects(context.getBean("ownSpanner", Spanner.class), 2))
                  .isEqualTo(2);
              assertThat(output).doesNotContain("is not tuned");
            });
  }

  @Test
  void aBuilderBeanThatCouldNotBeTunedIsNotReportedAsOutOfReach(CapturedOutput output) {
    this.contextRunner
        .withUserConfiguration(FailingBuilderBean.class)
        .run(
            (context) -> {
              assertThat(context).hasNotFailed();
              assertThat(output)
                  .contains("spanner-tuning could not tune bean 'failingBuilder'")
                  .doesNotContain("is not tuned");
              assertThat(context.getBean(SpannerTuningRegistry.class).clients()).isEmpty();
              assertThat(pointSelects(context.getBean("spanner", Spanner.class), 2)).isEqualTo(2);
            });
  }

  @Test
  void aPrototypeSpannerBeanIsNamedOnce(CapturedOutput output) {
    this.contextRunner
        .withUserConfiguration(PrototypeSpanner.class)
        .run(
            (context) -> {
              Spanner first = context.getBean("perUse", Spanner.class);
              Spanner second = context.getBean("perUse", Spanner.class);
              assertThat(second).isNotSameAs(first);
              assertThat(warnings(output)).containsExactly("perUse");
              first.close();
              second.close();
            });
  }

  @Test
  void aListenerAddedAfterAnUntunedClientIsNotToldOfIt() {
    SpannerTuningRegistry registry = new SpannerTuningRegistry();
    SpannerOptions options = server.get().clientOptions(1).build();
    try (Spanner untuned = options.getService()) {
      registry.registerUntuned(
          "ownSpanner", untuned, SpannerTuning.defaults().unsupported(REASON, options));
      List<String> told = new ArrayList<>();
      registry.onRegister((name, state) -> told.add(name));
      assertThat(registry.clients()).containsOnlyKeys("ownSpanner");
      assertThat(told).isEmpty();
    }
  }

  /** The bean names that the not-tuned warning names, once per warning. */
  private static List<String> warnings(CapturedOutput output) {
    Matcher matcher =
        Pattern.compile("spanner-tuning: Spanner client '([^']+)' is not tuned")
            .matcher(output.getAll());
    List<String> names = new ArrayList<>();
    while (matcher.find()) {
      names.add(matcher.group(1));
    }
    return names;
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }

  private static int pointSelects(Spanner spanner, int count) {
    DatabaseClient client =
        spanner.getDatabaseClient(DatabaseId.of("test-project", "test-instance", "test-db"));
    int rows = 0;
    for (int i = 0; i < count; i++) {
      try (ResultSet resultSet =
          client.singleUse().executeQuery(Statement.of(MockSpannerServer.POINT_SELECT))) {
        rows += resultSet.next() ? 1 : 0;
      }
    }
    return rows;
  }

  /** As an application does it: one client from an options bean, one from options of its own. */
  @Configuration(proxyBeanMethods = false)
  static class UntunedAndTuned {

    @Bean
    SpannerOptions spannerOptions() {
      return server.get().clientOptions(2).build();
    }

    @Bean(destroyMethod = "close")
    Spanner tunedSpanner(SpannerOptions options) {
      return options.getService();
    }

    @Bean(destroyMethod = "close")
    Spanner ownSpanner() {
      return server.get().clientOptions(3).enableGrpcGcpExtension().build().getService();
    }
  }

  /** Every way the starter reaches a client, the one a warning advises by hand included. */
  @Configuration(proxyBeanMethods = false)
  static class Reached {

    @Bean
    SpannerOptions spannerOptions() {
      return server.get().clientOptions(2).build();
    }

    @Bean(destroyMethod = "close")
    Spanner fromOptionsBean(SpannerOptions options) {
      return options.getService();
    }

    @Bean
    SpannerOptions.Builder spannerOptionsBuilder() {
      return server.get().clientOptions(2);
    }

    @Bean(destroyMethod = "close")
    Spanner fromBuilderBean(SpannerOptions.Builder builder) {
      return builder.build().getService();
    }

    @Bean(destroyMethod = "close")
    Spanner appliedByHand(ObjectProvider<SpannerTuningProperties> tuning) {
      SpannerOptions.Builder builder = server.get().clientOptions(2);
      tuning.ifAvailable((properties) -> properties.toTuning().applyTo(builder));
      return builder.build().getService();
    }
  }

  /** A builder bean whose tuning throws: the starter leaves it as it was, and says so. */
  @Configuration(proxyBeanMethods = false)
  static class FailingBuilderBean {

    @Bean
    SpannerOptions.Builder failingBuilder() {
      SpannerOptions.Builder builder =
          new SpannerOptions.Builder() {
            @Override
            public SpannerOptions.Builder setServiceRpcFactory(
                ServiceRpcFactory<SpannerOptions> rpcFactory) {
              throw new IllegalStateException("this builder takes no rpc factory");
            }
          };
      return builder
          .setProjectId("test-project")
          .setHost("http://127.0.0.1:" + server.get().port())
          .setChannelConfigurator(ManagedChannelBuilder::usePlaintext)
          .setCredentials(NoCredentials.getInstance())
          .setNumChannels(2);
    }

    @Bean(destroyMethod = "close")
    Spanner spanner(SpannerOptions.Builder failingBuilder) {
      return failingBuilder.build().getService();
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class PrototypeSpanner {

    @Bean
    @Scope("prototype")
    Spanner perUse() {
      return server.get().clientOptions(1).build().getService();
    }
  }
}
