package io.github.spannertuning.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/** Throwables created while a recording ran, from JFR. */
record ExceptionCounts(long throwables, Map<String, Long> byClass) {

  static ExceptionCounts read(Path file) throws Exception {
    List<RecordedEvent> events = RecordingFile.readAllEvents(file);
    long first = Long.MAX_VALUE;
    long last = Long.MIN_VALUE;
    int statistics = 0;
    Map<String, Long> byClass = new TreeMap<>();
    for (RecordedEvent event : events) {
      String type = event.getEventType().getName();
      if (type.equals("jdk.ExceptionStatistics")) {
        long throwables = event.getLong("throwables");
        first = Math.min(first, throwables);
        last = Math.max(last, throwables);
        statistics++;
      } else if (type.equals("jdk.JavaExceptionThrow")) {
        RecordedClass thrown = event.getClass("thrownClass");
        String name = (thrown != null) ? thrown.getName() : "?";
        byClass.merge(name.substring(name.lastIndexOf('.') + 1), 1L, Long::sum);
      }
    }
    assertThat(statistics)
        .as("jdk.ExceptionStatistics events in the window")
        .isGreaterThanOrEqualTo(2);
    return new ExceptionCounts(last - first, byClass);
  }
}
