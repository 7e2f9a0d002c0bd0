package io.github.spannertuning.client;

import com.google.api.gax.grpc.GrpcInterceptorProvider;
import com.google.cloud.spanner.spi.v1.SpannerInterceptorProvider;
import io.github.spannertuning.pool.ChannelLoad;
import io.grpc.ClientInterceptor;
import io.opentelemetry.api.OpenTelemetry;
import java.util.ArrayList;
import java.util.List;

/**
 * The application's interceptor provider, or the client's default one, plus the channel counting
 * interceptor of the client's {@link ChannelLoad}. Setting a provider on {@code SpannerOptions}
 * replaces the client's default, so when the application set none this falls back to the same
 * default the client would have used, built with the client's OpenTelemetry.
 */
final class LoadCountingInterceptorProvider implements GrpcInterceptorProvider {

  private final GrpcInterceptorProvider applicationProvider;

  private final SpannerTuningState state;

  LoadCountingInterceptorProvider(
      GrpcInterceptorProvider applicationProvider, SpannerTuningState state) {
    this.applicationProvider = applicationProvider;
    this.state = state;
  }

  GrpcInterceptorProvider applicationProvider() {
    return this.applicationProvider;
  }

  @Override
  public List<ClientInterceptor> getInterceptors() {
    GrpcInterceptorProvider base = this.applicationProvider;
    if (base == null) {
      OpenTelemetry openTelemetry = this.state.openTelemetry();
      base =
          (openTelemetry != null)
              ? SpannerInterceptorProvider.createDefault(openTelemetry)
              : SpannerInterceptorProvider.createDefault();
    }
    List<ClientInterceptor> interceptors = new ArrayList<>(base.getInterceptors());
    interceptors.add(
        this.state.channelLoad().interceptor(this.state.traced(), this.state.observer()));
    return interceptors;
  }
}
