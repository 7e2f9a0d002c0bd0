#!/usr/bin/env bash
# Runs the compat module's integration tests on every supported line and writes the results to
# docs/compatibility.md. Each line builds the starter in the reactor (nothing is installed) and runs
# it as an application's dependency under that line's Spring Boot, spring-cloud-gcp and
# google-cloud-spanner versions (compat/pom.xml profiles). The autoconfigure unit tests are not
# repeated here (-Dtest=NONE): they run on the baseline, client-6.113, client-6.122, client-6.127 and
# client-6.125 lines in CI.
#
# Usage: scripts/compatibility.sh [line...]   (default: all lines; writes the document only then)
set -uo pipefail
cd "$(dirname "$0")/.."

# line|maven profile options|what the line is|JDK (empty: the default java; 25: a JDK 25 under /usr/lib/jvm)
LINES=(
  "baseline||Spring Boot 3.5.7, spring-cloud-gcp 7.4.10 (data-spanner 6.1.1), google-cloud-spanner 6.119.0, grpc-gcp 1.12.0"
  "client-6.113|-P client-6.113|Spring Boot 3.5.7, spring-cloud-gcp 7.4.10 (data-spanner 6.1.1), google-cloud-spanner 6.113.0, grpc-gcp 1.9.0"
  "client-6.123|-P client-6.122,client-6.123|Spring Boot 3.5.7, spring-cloud-gcp 7.4.10 (data-spanner 6.1.1), google-cloud-spanner 6.123.0, grpc-gcp 1.16.0, protobuf 4.33.6, OpenTelemetry 1.61.0"
  "client-6.127|-P client-6.127|Spring Boot 3.5.7, spring-cloud-gcp 7.4.10 (data-spanner 6.1.1), google-cloud-spanner 6.127.0 on libraries-bom 26.93.0's versions: grpc-gcp 1.20.0, gax 2.90.0, grpc-java 1.83.0, protobuf 4.33.6, OpenTelemetry 1.62.0"
  "boot-4|-P boot-4|Spring Boot 4.0.7, spring-cloud-gcp 8.0.2 (no data-spanner served), google-cloud-spanner 6.113.0, grpc-gcp 1.9.0"
  "boot-4.1|-P boot-4.1 -Dnetty.version=4.2.18.Final -Dkafka.version=4.3.1|Spring Boot 4.1.2, spring-cloud-gcp 8.1.0 BOM (its modules not served: starter and autoconfigure 8.0.2, no data-spanner), google-cloud-spanner 6.119.0, grpc-gcp 1.12.0|"
  "java-25-virtual-threads|-P boot-4.1,virtual-threads -Dnetty.version=4.2.18.Final -Dkafka.version=4.3.1|Spring Boot 4.1.2 on Java 25 with spring.threads.virtual.enabled=true, google-cloud-spanner 6.119.0, grpc-gcp 1.12.0|25"
  "aot|-P client-6.113,aot|Spring AOT on the JVM (process-aot, process-test-aot, -Dspring.aot.enabled=true): Spring Boot 3.5.7, spring-cloud-gcp 7.4.10, google-cloud-spanner 6.113.0, grpc-gcp 1.9.0|"
  "boot-3.4|-P boot-3.4|Spring Boot 3.4.13, spring-cloud-gcp 6.1.1 (data-spanner 6.1.1), google-cloud-spanner 6.89.0, grpc-gcp 1.6.1"
  "boot-3.3|-P boot-3.3|Spring Boot 3.3.13, spring-cloud-gcp 5.9.0 (starter-data-spanner 5.9.0), google-cloud-spanner 6.82.0, grpc-gcp 1.6.1"
)

selected=("$@")
out=target/compatibility
mkdir -p "$out"

value() { # file key
  grep -m1 "^$2=" "$1" 2>/dev/null | cut -d= -f2- || true
}

jdk25=""
for home in /usr/lib/jvm/*; do
  if [ -x "$home/bin/java" ] && "$home/bin/java" -version 2>&1 | grep -qE 'version "25[."]'; then
    jdk25=$home
    break
  fi
done

for entry in "${LINES[@]}"; do
  IFS='|' read -r line profile description jdk <<<"$entry"
  if [ "${#selected[@]}" -gt 0 ] && [[ ! " ${selected[*]} " =~ " $line " ]]; then
    continue
  fi
  echo "== $line: $description"
  rm -rf compat/target/compat "$out/$line.properties"
  java_home=${JAVA_HOME:-}
  if [ "$jdk" = 25 ]; then
    if [ -z "$jdk25" ]; then
      echo "build=skipped (no JDK 25 under /usr/lib/jvm)" >"$out/$line.properties"
      echo "   skipped: no JDK 25 under /usr/lib/jvm"
      continue
    fi
    java_home=$jdk25
  fi
  start=$(date +%s)
  # shellcheck disable=SC2086
  JAVA_HOME=$java_home mvn -B $profile -pl compat -am verify -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false \
    >"$out/$line.log" 2>&1
  rc=$?
  seconds=$(($(date +%s) - start))
  summary=$(grep -E "^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures: [0-9]+, Errors: [0-9]+, Skipped: [0-9]+$" \
    "$out/$line.log" | tail -1 | sed -E 's/^\[[A-Z]+\] //')
  {
    echo "description=$description"
    echo "build=$([ "$rc" -eq 0 ] && echo passed || echo FAILED) (exit $rc, ${seconds} s)"
    echo "tests=${summary:-no test summary: see the log}"
    cat "compat/target/compat/$line.properties" 2>/dev/null
  } >"$out/$line.properties"
  echo "   $(value "$out/$line.properties" build); $(value "$out/$line.properties" tests)"
done

if [ "${#selected[@]}" -gt 0 ]; then
  exit 0
fi

doc=docs/compatibility.md
mkdir -p docs
{
  echo "# Compatibility: the starter on each supported line"
  echo
  echo "Written by \`scripts/compatibility.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit"
  echo "\`$(git rev-parse --short HEAD)\`$(git diff --quiet HEAD -- . ':!docs' || echo ' plus uncommitted changes'),"
  echo "$(java -version 2>&1 | head -1), on a $(nproc)-core machine shared with other builds"
  echo "(timings and spreads are noisy)."
  echo
  echo "Each line builds the starter once (against Boot 3.5.7) and runs the \`compat\` module's"
  echo "integration tests with that line's versions: the application's own \`SpannerOptions\`/\`Spanner\`"
  echo "beans against the production-like mock server (\`last\` flag, trailers 1 ms later, 2-5 ms per"
  echo "call, RST_STREAM frames counted on the wire), spring-cloud-gcp's own client where the line has"
  echo "it, the official emulator where the machine has it, the switches and the startup error, and the"
  echo "application repackaged and started with \`java -jar\`. What each feature must report on a line is"
  echo "set by its Maven profile (compat/pom.xml), not read from the starter."
  echo
  echo "| line | versions | tests | single-use distribution | stream-end guard | grpc-gcp | meters | \`java -jar\` versions |"
  echo "|---|---|---|---|---|---|---|---|"
  for entry in "${LINES[@]}"; do
    IFS='|' read -r line profile description jdk <<<"$entry"
    f="$out/$line.properties"
    echo "| $line | $description | $(value "$f" build): $(value "$f" tests) | $(value "$f" feature.single-use-distribution) | $(value "$f" feature.stream-end-guard) | $(value "$f" feature.grpc-gcp) | $(value "$f" measured.meters) | $(value "$f" executable-jar.versions) |"
  done
  # What the table cannot say: AOT and native images, Boot 4.1, Java 25 (kept beside this script).
  cat scripts/compatibility-notes.md
  echo
  echo "## What was measured, per line"
  for entry in "${LINES[@]}"; do
    IFS='|' read -r line profile description jdk <<<"$entry"
    f="$out/$line.properties"
    echo
    echo "### $line"
    echo
    echo "Command: \`${jdk:+JAVA_HOME=<a JDK $jdk> }mvn -B ${profile:+$profile }-pl compat -am verify -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false\`"
    echo
    grep -v -E "^(description|feature\.[a-z-]+)=" "$f" 2>/dev/null | sed -E 's/^([^=]+)=(.*)$/- **\1**: \2/'
  done
} >"$doc"
echo "wrote $doc"
