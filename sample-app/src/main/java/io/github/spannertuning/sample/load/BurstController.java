package io.github.spannertuning.sample.load;

import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /load/burst?rate=500&length=3}: a burst of single-use reads, at most one at a time.
 */
@RestController
class BurstController {

  static final int MAX_RATE = 1000;

  static final int MAX_LENGTH = 30;

  private final BurstService bursts;

  BurstController(BurstService bursts) {
    this.bursts = bursts;
  }

  /**
   * @param rate reads per second, 1 to 1000
   * @param length seconds, 1 to 30
   */
  @PostMapping("/load/burst")
  ResponseEntity<?> burst(
      @RequestParam(defaultValue = "500") int rate, @RequestParam(defaultValue = "3") int length) {
    if (rate < 1 || rate > MAX_RATE) {
      return ResponseEntity.badRequest()
          .body(
              Map.of("error", "rate must be 1 to " + MAX_RATE + " reads per second, was " + rate));
    }
    if (length < 1 || length > MAX_LENGTH) {
      return ResponseEntity.badRequest()
          .body(Map.of("error", "length must be 1 to " + MAX_LENGTH + " seconds, was " + length));
    }
    return this.bursts
        .burst(rate, length)
        .<ResponseEntity<?>>map(ResponseEntity::ok)
        .orElseGet(
            () ->
                ResponseEntity.status(HttpStatus.CONFLICT)
                    .body(Map.of("error", "a burst is already running")));
  }
}
