package io.github.spannertuning.sample.backend;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Turns a missing backend into the three ways to give the sample one, instead of a stack trace. */
class NoSpannerBackendFailureAnalyzer extends AbstractFailureAnalyzer<NoSpannerBackendException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, NoSpannerBackendException cause) {
    return new FailureAnalysis(
        "The sample has no Spanner backend: " + cause.getMessage() + ".",
        """
        Give it one of:
          1. the Cloud Spanner emulator binary: install gcloud's cloud-spanner-emulator component, \
        or set SPANNER_EMULATOR_BINARY (or sample.emulator.binary) to its emulator_main;
          2. an emulator you already run: SPANNER_EMULATOR_HOST=localhost:9010;
          3. Cloud Spanner: sample.backend=spanner with spring.cloud.gcp.spanner.project-id, \
        instance-id and database, and application default credentials.
        Or run with sample.backend=auto (the default) to fall back to the embedded fake.""",
        cause);
  }
}
