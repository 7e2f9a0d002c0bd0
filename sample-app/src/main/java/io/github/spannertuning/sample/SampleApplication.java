package io.github.spannertuning.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A Spring Boot application that uses spring-cloud-gcp's Spanner support with the spanner-tuning
 * starter, against an embedded local Spanner backend, so it runs without a Google account.
 */
@SpringBootApplication
public class SampleApplication {

  public static void main(String[] args) {
    SpringApplication.run(SampleApplication.class, args);
  }
}
