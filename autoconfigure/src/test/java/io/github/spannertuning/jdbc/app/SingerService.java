package io.github.spannertuning.jdbc.app;

import java.util.stream.Stream;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The application's transactions: a read-modify-write, and a read-only one of two reads. */
@Service
public class SingerService {

  private final SingerRepository singers;

  SingerService(SingerRepository singers) {
    this.singers = singers;
  }

  @Transactional
  public void rename(long id, String name) {
    this.singers.findById(id).orElseThrow().setName(name);
  }

  /** The first singer of a stream, closed before its end. */
  @Transactional(readOnly = true)
  public String firstSinger() {
    try (Stream<Singer> all = this.singers.streamAllBy()) {
      return all.findFirst().map(Singer::getName).orElseThrow();
    }
  }

  @Transactional(readOnly = true)
  public long readTwice(long id) {
    return this.singers.findById(id).map(Singer::getId).orElseThrow() + this.singers.count();
  }
}
