/**
 * Advice on a Spanner configuration that works against itself: a setting the client on the
 * classpath ignores, one that switches off something the application asked for, or a dependency
 * pinned older than the client needs.
 *
 * <p>Each rule is logic over two inputs, and nothing else: the client line ({@link
 * io.github.spannertuning.advice.ClientLine}: the google-cloud-spanner and grpc-gcp releases on the
 * classpath and the grpc-gcp release the client was built against), and the names of the properties
 * the application set. It never sees a property's value, so no advice can echo one, and it changes
 * nothing. {@link io.github.spannertuning.advice.AdviceRules} holds the rules; each names the
 * release it was verified against and its source. Nothing here knows Spring: the autoconfigure
 * package finds which properties are set, logs the advice and hands it to the endpoint.
 */
package io.github.spannertuning.advice;
