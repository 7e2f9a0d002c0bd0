package io.github.spannertuning.sample.music;

import com.google.cloud.spring.data.spanner.core.mapping.Column;
import com.google.cloud.spring.data.spanner.core.mapping.PrimaryKey;
import com.google.cloud.spring.data.spanner.core.mapping.Table;

/** A row of {@code Singers}. */
@Table(name = "Singers")
public class Singer {

  @PrimaryKey
  @Column(name = "SingerId")
  private long singerId;

  @Column(name = "FirstName")
  private String firstName;

  @Column(name = "LastName")
  private String lastName;

  @Column(name = "Country")
  private String country;

  public Singer() {}

  public Singer(long singerId, String firstName, String lastName, String country) {
    this.singerId = singerId;
    this.firstName = firstName;
    this.lastName = lastName;
    this.country = country;
  }

  public long getSingerId() {
    return this.singerId;
  }

  public String getFirstName() {
    return this.firstName;
  }

  public String getLastName() {
    return this.lastName;
  }

  public String getCountry() {
    return this.country;
  }
}
