#!/usr/bin/env bash
# The whole test suite, fastest lines first; stops at the first line that fails.
#   1. default line (google-cloud-spanner 6.119) with the release checks: sources, Javadoc, doclint
#   2. the 6.113 client line (what Boot 4.0 applications get from spring-cloud-gcp 8.0): the
#      autoconfigure unit and integration tests; the application on 6.113 is the Boot 4.0 and AOT
#      compat lines
#   3. the starter as a dependency of a Boot 4.0 application, then of a Boot 4.1 one (spring-cloud-gcp
#      8.1, client 6.119), then of a Boot 3.4 one (google-cloud-spanner 6.89, whose streaming
#      methods take no request id), then on the 6.123 client (grpc-gcp 1.16). The 6.122 and 6.123
#      clients sit between the two lines whose autoconfigure tests run (6.119 with grpc-gcp 1.12,
#      6.127 with grpc-gcp 1.20) and use their hooks: the 6.123 application runs here, and
#      -P client-6.122 runs autoconfigure's tests on demand
#   4. the same application processed by Spring AOT and run from the generated code on the JVM
#   5. the Boot 4.1 application on Java 25 with virtual threads, where a JDK 25 is installed
#   6. the newest client lines, as libraries-bom 26.93.0 brings them: 6.127 (grpc-gcp 1.20, gax 2.90,
#      grpc-java 1.83), the autoconfigure unit and integration tests and the application; then the
#      application on 6.125, the same stack but the client
# Each compat line builds the starter in the reactor and runs only the compat module's
# integration tests (-Dtest=NONE): the unit tests already ran in 1 and 2.
# 6.119 runs every test. Those tagged default-line run there only: the picker's statistics under
# load, the switchback experiment and its simulation, the emulator process helper, all the starter's
# own code on every line. Those tagged dynamic-pool run on 6.119 and 6.127, whose dynamic pools
# (grpc-gcp 1.12 and 1.20) routing follows. 6.113 runs every other test; 6.127 also skips
# the soak (tagged any-line, run on 6.119 and 6.113). The compat lines that change only the client
# skip the one tagged boot-line (the switches and the failure analysis).
set -euo pipefail
cd "$(dirname "$0")/.."

# The source format is the same on every line: the default line checks it, the others skip it.
compat=(-pl compat -am verify -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false -Dspotless.check.skip=true)
# The dynamic channel pool's checks run on the lines whose dynamic pool routing follows, and whose
# pools differ: 6.119 (grpc-gcp 1.12) and 6.127 (grpc-gcp 1.20).
# One reactor runs autoconfigure's tests and then the application's on it.
newest=(-pl autoconfigure,compat -am verify -DexcludedGroups=any-line,default-line,boot-line
  -Dspotless.check.skip=true)
# Boot 4.1.2's BOM names a Netty and a Kafka release that the registry mirror lacks; imported BOMs
# take their versions from the command line, not from a POM.
boot41=(-Dnetty.version=4.2.18.Final -Dkafka.version=4.3.1)

# Each step's header gives the seconds the suite has run so far: the suite is sized for 2 cores.
step() { echo; echo "=== [${SECONDS} s] $*"; }

step "default line with the release profile"
# Two module builds at a time: autoconfigure's tests run alone (every other module depends on it),
# then the sample's, compat's and the benchmarks' smoke tests two modules at a time.
mvn -B -P release -T 2 verify
step "client 6.113 (autoconfigure)"
mvn -B -P client-6.113 -pl autoconfigure -am verify -DexcludedGroups=default-line,dynamic-pool \
  -Dspotless.check.skip=true
step "compat: Spring Boot 4.0"
mvn -B -P boot-4 "${compat[@]}"
step "compat: Spring Boot 4.1 (spring-cloud-gcp 8.1, client 6.119)"
mvn -B -P boot-4.1 "${boot41[@]}" "${compat[@]}"
step "compat: Spring Boot 3.4 (client 6.89)"
mvn -B -P boot-3.4 "${compat[@]}"
step "compat: client 6.123"
mvn -B -P client-6.122,client-6.123 "${compat[@]}" -DexcludedGroups=boot-line
step "compat: Spring AOT on the JVM (client 6.113)"
mvn -B -P client-6.113,aot "${compat[@]}"
# process-aot compiles its generated code into compat's classes: no later line may pick it up.
mvn -B -q -pl compat clean

jdk25=""
for home in /usr/lib/jvm/*; do
  if [ -x "$home/bin/java" ] && "$home/bin/java" -version 2>&1 | grep -qE 'version "25[."]'; then
    jdk25=$home
    break
  fi
done
if [ -z "$jdk25" ]; then
  echo
  echo "=== compat: Java 25 with virtual threads: SKIPPED, no JDK 25 under /usr/lib/jvm"
else
  step "compat: Spring Boot 4.1 on Java 25 ($jdk25) with virtual threads"
  JAVA_HOME=$jdk25 mvn -B -P boot-4.1,virtual-threads "${boot41[@]}" "${compat[@]}"
fi
step "client 6.127 (autoconfigure, then compat; libraries-bom 26.93.0)"
mvn -B -P client-6.127 "${newest[@]}"
step "compat: client 6.125 (libraries-bom 26.93.0 but the client)"
mvn -B -P client-6.127,client-6.125 "${compat[@]}" -DexcludedGroups=boot-line
echo
echo "=== [${SECONDS} s] All test lines passed."
