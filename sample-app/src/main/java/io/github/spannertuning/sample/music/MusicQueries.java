package io.github.spannertuning.sample.music;

/**
 * The sample's SQL, in one place: the repositories run it, and the embedded fake backend answers
 * exactly these statements (it has no SQL engine).
 */
public final class MusicQueries {

  /** Singers whose last name starts with {@code @prefix}, first 20 by name. */
  public static final String SEARCH_SINGERS =
      "SELECT SingerId, FirstName, LastName, Country FROM Singers"
          + " WHERE STARTS_WITH(LastName, @prefix)"
          + " ORDER BY LastName, FirstName, SingerId LIMIT 20";

  /** One singer's albums, from the interleaved table. */
  public static final String ALBUMS_OF_SINGER =
      "SELECT SingerId, AlbumId, Title, ReleaseYear, CopiesSold FROM Albums"
          + " WHERE SingerId = @singerId ORDER BY AlbumId";

  /** spring-cloud-gcp's Spanner health check ({@code spring.cloud.gcp.spanner.health.query}). */
  public static final String HEALTH_CHECK = "SELECT 1";

  private MusicQueries() {}
}
