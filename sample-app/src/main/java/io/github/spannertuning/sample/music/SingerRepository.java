package io.github.spannertuning.sample.music;

import com.google.cloud.spring.data.spanner.repository.SpannerRepository;
import com.google.cloud.spring.data.spanner.repository.query.Query;
import java.util.List;
import org.springframework.data.repository.query.Param;

public interface SingerRepository extends SpannerRepository<Singer, Long> {

  @Query(MusicQueries.SEARCH_SINGERS)
  List<Singer> searchByLastNamePrefix(@Param("prefix") String prefix);
}
