package io.github.spannertuning.jdbc.app;

import java.util.stream.Stream;
import org.springframework.data.jpa.repository.JpaRepository;

public interface SingerRepository extends JpaRepository<Singer, Long> {

  /** An {@code exists} query: Hibernate reads one row of it. */
  boolean existsByName(String name);

  /** Every singer as a stream, for a stream closed before its end. */
  Stream<Singer> streamAllBy();
}
