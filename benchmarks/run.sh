#!/usr/bin/env bash
# Runs the load benchmark and the JMH microbenchmarks on both client lines (google-cloud-spanner
# 6.119 and the client-6.113 profile), then writes the report: benchmarks.md, benchmarks.json and
# benchmarks.html in $OUT, copied to $PUBLISH (docs/ by default; PUBLISH= to skip).
#
#   benchmarks/run.sh                      # the defaults: about 10 minutes of load per client line
#   benchmarks/run.sh --scale 0.5 --rounds 3
#
# Extra arguments are flags of BenchmarkMain (see the README). SKIP_JMH=1 skips JMH; JMH_ARGS adds
# JMH options (e.g. JMH_ARGS="-wi 1 -i 2" for a shorter run).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-benchmarks/target/benchmark-results}
PUBLISH=${PUBLISH-docs}
export NO_GCE_CHECK=true SPANNER_DISABLE_BUILTIN_METRICS=true

rm -rf "$OUT"
mkdir -p "$OUT"
command="benchmarks/run.sh${*:+ $*}"

for profile in "" client-6.113; do
  echo "== client line: ${profile:-default (6.119)}"
  mvn -B -q ${profile:+-P "$profile"} -pl benchmarks -am package -DskipTests
  classpath="benchmarks/target/classes:$(cat benchmarks/target/runtime-classpath.txt)"
  line=$(tr ':' '\n' < benchmarks/target/runtime-classpath.txt \
    | sed -n 's|.*/google-cloud-spanner-\([0-9.]*\)\.jar$|\1|p' | head -1)
  java -Xmx2g -cp "$classpath" io.github.spannertuning.benchmarks.BenchmarkMain \
    --out "$OUT" --command "$command" "$@"
  if [ -z "${SKIP_JMH:-}" ]; then
    java -cp "$classpath" org.openjdk.jmh.Main "io.github.spannertuning.client.*Benchmark" \
      -prof gc -rf json -rff "$OUT/jmh-$line.json" ${JMH_ARGS:-} | tee "$OUT/jmh-$line.txt"
  fi
done

java -cp "$classpath" io.github.spannertuning.benchmarks.Report "$OUT"
if [ -n "$PUBLISH" ]; then
  mkdir -p "$PUBLISH"
  cp "$OUT/benchmarks.md" "$OUT/benchmarks.json" "$OUT/benchmarks.html" "$PUBLISH/"
  echo "Report: $PUBLISH/benchmarks.md ($PUBLISH/benchmarks.html, $PUBLISH/benchmarks.json)"
else
  echo "Report: $OUT/benchmarks.md"
fi
