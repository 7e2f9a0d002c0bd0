/** The sample's domain: singers and their interleaved albums, with Spring Data Spanner. */
package io.github.spannertuning.sample.music;
