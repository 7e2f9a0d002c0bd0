package io.github.spannertuning.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A small Spring Data Spanner service (singers and their albums) with the spanner-tuning starter,
 * and a page at {@code /} that shows what the starter does with its traffic.
 */
@SpringBootApplication
public class SampleApplication {

  public static void main(String[] args) {
    SpringApplication.run(SampleApplication.class, args);
  }
}
