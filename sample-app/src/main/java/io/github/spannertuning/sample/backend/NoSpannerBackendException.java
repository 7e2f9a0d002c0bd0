package io.github.spannertuning.sample.backend;

/** The backend the user asked for is not there. */
class NoSpannerBackendException extends RuntimeException {

  NoSpannerBackendException(String message) {
    super(message);
  }
}
