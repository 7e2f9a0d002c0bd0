package io.github.spannertuning.sample;

import io.github.spannertuning.sample.backend.SampleBackend;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** What the page shows above the channels: which backend the sample runs on. */
@RestController
class SampleInfoController {

  private final SampleBackend backend;

  SampleInfoController(SampleBackend backend) {
    this.backend = backend;
  }

  @GetMapping("/sample/backend")
  Map<String, Object> backend() {
    return Map.of(
        "kind", this.backend.kind().name().toLowerCase().replace('_', '-'),
        "description", this.backend.description(),
        "fake", this.backend.kind() == SampleBackend.Kind.EMBEDDED_FAKE);
  }
}
