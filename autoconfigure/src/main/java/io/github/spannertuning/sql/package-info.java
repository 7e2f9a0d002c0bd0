/**
 * What may be shown of an application's SQL: {@link
 * io.github.spannertuning.sql.StatementNormalizer} reads a statement, drops its literal values and
 * comments, and gives it a fingerprint that is the same in every JVM. No Spring, gRPC or Spanner
 * type in it: text in, text out.
 *
 * <p><b>Internal.</b> As {@code io.github.spannertuning.routing}, its types are public only because
 * another package of the starter calls them. They are not API.
 */
package io.github.spannertuning.sql;
