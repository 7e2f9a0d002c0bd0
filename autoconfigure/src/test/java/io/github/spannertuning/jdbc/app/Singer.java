package io.github.spannertuning.jdbc.app;

import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A row of the mock server's {@code Singers} table. */
@Entity
@Table(name = "Singers")
public class Singer {

  @Id private Long id;

  private String name;

  protected Singer() {}

  public Long getId() {
    return this.id;
  }

  public String getName() {
    return this.name;
  }

  public void setName(String name) {
    this.name = name;
  }
}
