-- The sample's schema: albums are interleaved in their singer (stored with it, deleted with it).
-- Statements are separated by ';'. The embedded fake reads this file too (tables, columns, keys).
CREATE TABLE Singers (
  SingerId INT64 NOT NULL,
  FirstName STRING(100) NOT NULL,
  LastName STRING(100) NOT NULL,
  Country STRING(2),
) PRIMARY KEY (SingerId);

CREATE INDEX SingersByLastName ON Singers (LastName);

CREATE TABLE Albums (
  SingerId INT64 NOT NULL,
  AlbumId INT64 NOT NULL,
  Title STRING(200) NOT NULL,
  ReleaseYear INT64 NOT NULL,
  CopiesSold INT64 NOT NULL,
) PRIMARY KEY (SingerId, AlbumId),
  INTERLEAVE IN PARENT Singers ON DELETE CASCADE;
