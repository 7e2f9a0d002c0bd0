package io.github.spannertuning.sample.music;

import com.google.cloud.spanner.Key;
import java.util.List;
import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** The sample's REST API. */
@RestController
class MusicController {

  private final SingerRepository singers;

  private final AlbumRepository albums;

  private final SalesService sales;

  MusicController(SingerRepository singers, AlbumRepository albums, SalesService sales) {
    this.singers = singers;
    this.albums = albums;
    this.sales = sales;
  }

  /** A point read by key: one single-use read. */
  @GetMapping("/singers/{id}")
  ResponseEntity<Singer> singer(@PathVariable long id) {
    return ResponseEntity.of(this.singers.findById(id));
  }

  /** A query: singers whose last name starts with {@code lastName}, at most 20. */
  @GetMapping("/singers")
  ResponseEntity<?> search(@RequestParam String lastName) {
    if (lastName.isBlank() || lastName.length() > 100) {
      return ResponseEntity.badRequest()
          .body(Map.of("error", "lastName must be 1 to 100 characters"));
    }
    return ResponseEntity.ok(this.singers.searchByLastNamePrefix(lastName));
  }

  /** A query on the interleaved table. */
  @GetMapping("/singers/{id}/albums")
  List<Album> albums(@PathVariable long id) {
    return this.albums.findBySinger(id);
  }

  /** A point read of one album. */
  @GetMapping("/singers/{id}/albums/{albumId}")
  ResponseEntity<Album> album(@PathVariable long id, @PathVariable long albumId) {
    return ResponseEntity.of(this.albums.findById(Key.of(id, albumId)));
  }

  /**
   * The write: read the album, add {@code copies} to its sales, commit (read/write transaction).
   */
  @PostMapping("/singers/{id}/albums/{albumId}/sales")
  ResponseEntity<?> recordSales(
      @PathVariable long id, @PathVariable long albumId, @RequestParam long copies) {
    if (copies < 1 || copies > 1_000_000) {
      return ResponseEntity.badRequest().body(Map.of("error", "copies must be 1 to 1000000"));
    }
    return ResponseEntity.of(this.sales.recordSales(id, albumId, copies));
  }
}
