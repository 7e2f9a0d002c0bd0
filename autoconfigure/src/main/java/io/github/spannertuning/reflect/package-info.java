/**
 * Every member of the Spanner client, gax and grpc-gcp that spanner-tuning reaches by reflection
 * ({@link io.github.spannertuning.reflect.ClientReflection}), below every package that uses it: the
 * hooks into the client ({@code client}), the pool ({@code pool}), the JDBC driver's ({@code jdbc})
 * and the native image's hints ({@code autoconfigure}).
 *
 * <p><b>Internal.</b> Public only because those are other packages; not API, and anything here may
 * change in any release.
 */
package io.github.spannertuning.reflect;
