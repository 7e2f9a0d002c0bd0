package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.cloud.spanner.ErrorCode;
import com.google.cloud.spanner.SpannerException;
import io.grpc.Context;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** What the checks expect of a call that fails: the client's exception, with its error code. */
final class SpannerErrors {

  private SpannerErrors() {}

  /** Asserts that {@code call} throws a {@link SpannerException} with the given code. */
  static void assertFailsWith(ErrorCode code, String what, ThrowingCallable call) {
    assertThatThrownBy(call)
        .as(what)
        .isInstanceOfSatisfying(
            SpannerException.class, (e) -> assertThat(e.getErrorCode()).as(what).isEqualTo(code));
  }

  /**
   * Runs {@code call} in a context whose deadline passes after {@code deadline} on {@code timer},
   * and asserts that it fails with DEADLINE_EXCEEDED.
   */
  static void assertDeadlineExceeded(
      String what, Duration deadline, ScheduledExecutorService timer, Runnable call) {
    Context.CancellableContext context =
        Context.current().withDeadlineAfter(deadline.toNanos(), TimeUnit.NANOSECONDS, timer);
    try {
      assertFailsWith(ErrorCode.DEADLINE_EXCEEDED, what, () -> context.run(call));
    } finally {
      context.cancel(null);
    }
  }
}
