package io.github.spannertuning.sql;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.spannertuning.sql.StatementNormalizer.Normalized;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** What of a statement may be shown, and its fingerprint, from statements fed as text. */
class StatementNormalizerTest {

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      textBlock =
          """
          SELECT * FROM Singers WHERE Email = 'ann@example.com' AND SingerId = 42 | SELECT * FROM Singers WHERE Email = ? AND SingerId = ?
          SELECT * FROM t WHERE a = "double" AND b = '' AND c = ""                | SELECT * FROM t WHERE a = ? AND b = ? AND c = ?
          SELECT 'it\\'s', "say \\"hi\\"", 'a\\\\' FROM t                         | SELECT ?, ?, ? FROM t
          SELECT 'he said "no"', "it's" FROM t                                    | SELECT ?, ? FROM t
          SELECT 'O''Brien' FROM t                                                | SELECT ? FROM t
          SELECT r'\\d+', R"raw", b'\\x00', B"bytes", rb'x', BR"y" FROM t         | SELECT ?, ?, ?, ?, ?, ? FROM t
          SELECT '''a 'quoted' line''', \"\"\"two\"\"\" FROM t                    | SELECT ?, ? FROM t
          SELECT 1, 2.5, .5, 1e10, 6.02E+23, 1.5e-3, 0x1F, 0XAB FROM t            | SELECT ?, ?, ?, ?, ?, ?, ?, ? FROM t
          SELECT * FROM t1 JOIN t_2 ON t1.id = t_2.id WHERE col3 = 7              | SELECT * FROM t1 JOIN t_2 ON t1.id = t_2.id WHERE col3 = ?
          SELECT * FROM t WHERE x = -42 AND y > -1.5 AND z IN (-1, 2)             | SELECT * FROM t WHERE x = ? AND y > ? AND z IN (?, ?)
          SELECT a-1, a - 1, (a)-1 FROM t                                         | SELECT a-?, a - ?, (a)-? FROM t
          SELECT * FROM t WHERE id IN (1, 2, 3)                                   | SELECT * FROM t WHERE id IN (?, ?, ?)
          SELECT * FROM t WHERE id = @id AND n = @p1 AND m = @@statement_timeout  | SELECT * FROM t WHERE id = @id AND n = @p1 AND m = @@statement_timeout
          SELECT * FROM t WHERE id = $1 AND name = $2                             | SELECT * FROM t WHERE id = $1 AND name = $2
          SELECT * FROM t WHERE id = ?                                            | SELECT * FROM t WHERE id = ?
          SELECT * FROM t WHERE done IS NULL AND ok = TRUE AND bad = FALSE        | SELECT * FROM t WHERE done IS NULL AND ok = TRUE AND bad = FALSE
          SELECT * FROM `my table` WHERE `col 1` = 'v'                            | SELECT * FROM `my table` WHERE `col 1` = ?
          SELECT DATE '2024-01-31', TIMESTAMP "2024-01-31 10:00:00", JSON '{}'    | SELECT DATE ?, TIMESTAMP ?, JSON ?
          SELECT [1, 2], ARRAY<INT64>[3] FROM t                                   | SELECT [?, ?], ARRAY<INT64>[?] FROM t
          SELECT * FROM t@{FORCE_INDEX=ByName} WHERE a = 1                        | SELECT * FROM t@{FORCE_INDEX=ByName} WHERE a = ?
          SELECT $$it's $1$$, $tag$x$tag$ FROM t                                  | SELECT ?, ? FROM t
          SELECT 'C:\\' FROM t WHERE name = 'ann'                                 | SELECT ? FROM t WHERE name = ?
          SELECT E'it\\'s' FROM t                                                 | SELECT ? FROM t
          """)
  void replacesEveryLiteral(String sql, String normalized) {
    assertThat(StatementNormalizer.normalize(sql).text()).contains(normalized);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '~',
      textBlock =
          """
          SELECT a -- ann@example.com\\nFROM t                | SELECT a FROM t
          SELECT a # ann@example.com\\nFROM t                 | SELECT a FROM t
          SELECT /* user 42: ann@example.com */ a FROM t      | SELECT a FROM t
          SELECT a/*x*/FROM t                                 | SELECT a FROM t
          SELECT a FROM t -- the end                          | SELECT a FROM t
          SELECT '-- not a comment', "/* nor this */" FROM t  | SELECT ?, ? FROM t
          ~  SELECT\\n\\ta ,\\r\\n  b\\n\\nFROM   t  ~         | SELECT a , b FROM t
          """)
  void dropsCommentsAndFoldsWhitespace(String sql, String normalized) {
    String text = sql.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r");
    assertThat(StatementNormalizer.normalize(text).text()).contains(normalized);
  }

  /**
   * Where the two readings (a backslash escapes in a literal, or it does not) disagree, or neither
   * closes every literal, a value could stand outside the literals one of them found: no text.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "SELECT * FROM t WHERE name = 'ann",
        "SELECT * FROM t WHERE p = 'C:\\' AND q = 'x # y'\nAND r = 'secret'",
        "SELECT * FROM t /* ann@example.com",
        "SELECT * FROM `t WHERE a = 1",
        "SELECT $x$ann@example.com FROM t",
        "SELECT * FROM t WHERE a = 1 \\ 'ann@example.com'"
      })
  void withholdsAStatementItCannotReadUnambiguously(String sql) {
    Normalized normalized = StatementNormalizer.normalize(sql);
    assertThat(normalized.text()).isEmpty();
    assertThat(normalized.fingerprint()).matches("[0-9a-f]{16}");
  }

  @Test
  void theTextNeverHoldsAValue() {
    String sql =
        "SELECT * FROM Singers WHERE Email = 'ann@example.com' AND SingerId = 42"
            + " AND Note = r\"\"\"x 'y' 43\"\"\" -- 44\n AND Code = 0xFF /* 45 */";
    String text = StatementNormalizer.normalize(sql).text().orElseThrow();
    assertThat(text).doesNotContain("ann").doesNotContain("example").doesNotContainPattern("\\d");
  }

  @Test
  void theFingerprintIsTheFirst64BitsOfTheSha256OfTheNormalizedText() {
    // echo -n 'SELECT * FROM Singers WHERE Email = ? AND SingerId = ?' | sha256sum
    assertThat(
            StatementNormalizer.normalize(
                    "SELECT * FROM Singers WHERE Email = 'ann@example.com' AND SingerId = 42")
                .fingerprint())
        .isEqualTo("def541b87c060a4c");
  }

  @Test
  void statementsThatDifferOnlyInValuesWhitespaceOrCommentsShareAFingerprint() {
    String one = StatementNormalizer.normalize("SELECT a FROM t WHERE id = 1").fingerprint();
    assertThat(StatementNormalizer.normalize("SELECT a FROM t WHERE id = 2").fingerprint())
        .isEqualTo(one);
    assertThat(
            StatementNormalizer.normalize("SELECT  a\nFROM t /* hint */ WHERE id = 3 -- x")
                .fingerprint())
        .isEqualTo(one);
    assertThat(StatementNormalizer.normalize("SELECT b FROM t WHERE id = 1").fingerprint())
        .isNotEqualTo(one);
    assertThat(StatementNormalizer.normalize("SELECT a FROM t WHERE id = @id").fingerprint())
        .isNotEqualTo(one);
  }
}
