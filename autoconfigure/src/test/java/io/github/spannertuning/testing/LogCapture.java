package io.github.spannertuning.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The messages a {@code java.util.logging} logger and its children log at the levels a test picks,
 * from {@link #start} until {@link #close()}.
 */
public final class LogCapture extends Handler implements AutoCloseable {

  private final Logger logger;

  private final Predicate<Level> levels;

  private final List<String> messages = new CopyOnWriteArrayList<>();

  private LogCapture(Logger logger, Predicate<Level> levels) {
    this.logger = logger;
    this.levels = levels;
  }

  /** Captures what the named logger logs at the levels {@code levels} accepts. */
  public static LogCapture start(String logger, Predicate<Level> levels) {
    LogCapture capture = new LogCapture(Logger.getLogger(logger), levels);
    capture.logger.addHandler(capture);
    return capture;
  }

  /** The messages captured so far, oldest first; the list grows as more are logged. */
  public List<String> messages() {
    return this.messages;
  }

  @Override
  public void publish(LogRecord record) {
    if (this.levels.test(record.getLevel())) {
      this.messages.add(record.getMessage());
    }
  }

  @Override
  public void flush() {}

  /** Stops capturing. */
  @Override
  public void close() {
    this.logger.removeHandler(this);
  }
}
