package io.github.spannertuning.sample.music;

import com.google.cloud.spanner.Key;
import com.google.cloud.spring.data.spanner.repository.SpannerRepository;
import com.google.cloud.spring.data.spanner.repository.query.Query;
import java.util.List;
import org.springframework.data.repository.query.Param;

public interface AlbumRepository extends SpannerRepository<Album, Key> {

  @Query(MusicQueries.ALBUMS_OF_SINGER)
  List<Album> findBySinger(@Param("singerId") long singerId);
}
