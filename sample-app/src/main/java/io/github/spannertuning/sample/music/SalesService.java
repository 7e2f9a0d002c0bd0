package io.github.spannertuning.sample.music;

import com.google.cloud.spanner.Key;
import java.util.Optional;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The sample's write: read an album, add to its sales, commit; one read/write transaction. */
@Service
public class SalesService {

  private final AlbumRepository albums;

  SalesService(AlbumRepository albums) {
    this.albums = albums;
  }

  @Transactional
  public Optional<Album> recordSales(long singerId, long albumId, long copies) {
    return this.albums
        .findById(Key.of(singerId, albumId))
        .map(
            (album) -> {
              album.addCopiesSold(copies);
              return this.albums.save(album);
            });
  }
}
