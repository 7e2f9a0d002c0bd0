package io.github.spannertuning.jdbc.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A Spring Data JPA application on Google's JDBC driver and Hibernate dialect, as Google's samples
 * set it up; the test gives it the mock server's URL. spring-cloud-gcp's own Spanner client is off:
 * the application reaches Spanner only through its DataSource.
 */
@SpringBootApplication
public class JpaApplication {}
