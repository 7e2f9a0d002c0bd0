package io.github.spannertuning.sample.music;

import com.google.cloud.spring.data.spanner.core.mapping.Column;
import com.google.cloud.spring.data.spanner.core.mapping.PrimaryKey;
import com.google.cloud.spring.data.spanner.core.mapping.Table;

/** A row of {@code Albums}, interleaved in its singer: the key starts with the singer's. */
@Table(name = "Albums")
public class Album {

  @PrimaryKey(keyOrder = 1)
  @Column(name = "SingerId")
  private long singerId;

  @PrimaryKey(keyOrder = 2)
  @Column(name = "AlbumId")
  private long albumId;

  @Column(name = "Title")
  private String title;

  @Column(name = "ReleaseYear")
  private long releaseYear;

  @Column(name = "CopiesSold")
  private long copiesSold;

  public Album() {}

  public Album(long singerId, long albumId, String title, long releaseYear, long copiesSold) {
    this.singerId = singerId;
    this.albumId = albumId;
    this.title = title;
    this.releaseYear = releaseYear;
    this.copiesSold = copiesSold;
  }

  public long getSingerId() {
    return this.singerId;
  }

  public long getAlbumId() {
    return this.albumId;
  }

  public String getTitle() {
    return this.title;
  }

  public long getReleaseYear() {
    return this.releaseYear;
  }

  public long getCopiesSold() {
    return this.copiesSold;
  }

  void addCopiesSold(long copies) {
    this.copiesSold += copies;
  }
}
