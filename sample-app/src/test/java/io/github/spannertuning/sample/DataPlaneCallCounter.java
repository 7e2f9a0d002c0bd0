package io.github.spannertuning.sample;

import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import com.google.spanner.v1.SpannerGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall.SimpleForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * Counts, independently of spanner-tuning, the data-plane calls ({@code google.spanner.v1.Spanner})
 * the sample's client makes: an interceptor on every sub-channel, installed in the client's builder
 * before spanner-tuning wraps the interceptor provider. Admin calls (instance and database admin)
 * pass the same interceptor and are not counted. A call counts when it starts: a call object that
 * is created and never started sends nothing (on 6.113 spanner-tuning creates one per channel to
 * bind the client's affinity keys).
 */
final class DataPlaneCallCounter implements ClientInterceptor {

  private final AtomicLong calls = new AtomicLong();

  private final AtomicLong allCalls = new AtomicLong();

  long calls() {
    return this.calls.get();
  }

  /** Every call through the client's channels, admin calls included. */
  long allCalls() {
    return this.allCalls.get();
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
      MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
    boolean dataPlane = SpannerGrpc.SERVICE_NAME.equals(method.getServiceName());
    return new SimpleForwardingClientCall<>(next.newCall(method, callOptions)) {
      @Override
      public void start(Listener<RespT> listener, Metadata headers) {
        DataPlaneCallCounter.this.allCalls.incrementAndGet();
        if (dataPlane) {
          DataPlaneCallCounter.this.calls.incrementAndGet();
        }
        super.start(listener, headers);
      }
    };
  }

  @TestConfiguration(proxyBeanMethods = false)
  static class Config {

    @Bean
    static DataPlaneCallCounter dataPlaneCallCounter() {
      return new DataPlaneCallCounter();
    }

    @Bean
    static BeanPostProcessor dataPlaneCallCounterInstaller(
        org.springframework.beans.factory.ObjectProvider<DataPlaneCallCounter> counter) {
      return new BeanPostProcessor() {
        @Override
        public Object postProcessBeforeInitialization(Object bean, String beanName) {
          if (bean instanceof SpannerOptions.Builder builder) {
            builder.setInterceptorProvider(
                SpannerInterceptorProvider.createDefault().with(counter.getObject()));
          }
          return bean;
        }
      };
    }
  }
}
