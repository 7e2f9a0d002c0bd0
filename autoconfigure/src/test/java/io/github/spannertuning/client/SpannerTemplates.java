package io.github.spannertuning.client;

import com.google.cloud.spanner.DatabaseClient;
import com.google.cloud.spring.data.spanner.core.SpannerMutationFactoryImpl;
import com.google.cloud.spring.data.spanner.core.SpannerTemplate;
import com.google.cloud.spring.data.spanner.core.admin.SpannerSchemaUtils;
import com.google.cloud.spring.data.spanner.core.convert.ConverterAwareMappingSpannerEntityProcessor;
import com.google.cloud.spring.data.spanner.core.mapping.SpannerMappingContext;

/** Spring Data Spanner's template on a plain client, as an application's repositories use it. */
final class SpannerTemplates {

  private SpannerTemplates() {}

  static SpannerTemplate of(DatabaseClient client) {
    SpannerMappingContext mappingContext = new SpannerMappingContext();
    ConverterAwareMappingSpannerEntityProcessor processor =
        new ConverterAwareMappingSpannerEntityProcessor(mappingContext);
    SpannerSchemaUtils schemaUtils = new SpannerSchemaUtils(mappingContext, processor, true);
    return new SpannerTemplate(
        () -> client,
        mappingContext,
        processor,
        new SpannerMutationFactoryImpl(processor, mappingContext, schemaUtils),
        schemaUtils);
  }
}
