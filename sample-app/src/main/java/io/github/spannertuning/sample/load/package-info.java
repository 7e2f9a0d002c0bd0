/** Bursts of single-use reads through the sample's repository, to watch the channels spread. */
package io.github.spannertuning.sample.load;
