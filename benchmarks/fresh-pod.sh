#!/usr/bin/env bash
# The fresh-pod benchmark: every round a new client JVM, as a new pod starts one; its time to ready,
# its first burst the moment it is ready, and the same burst once warm, stock beside tuned, per
# client line and client CPU limit. Writes benchmarks-fresh-pod.md (and the rounds' JSON) in $OUT,
# copied to $PUBLISH (docs/ by default; PUBLISH= to skip).
#
#   benchmarks/fresh-pod.sh                                   # 6.119 and 6.127, 1 and 2 CPUs, 3 rounds
#   LINES=6.119 benchmarks/fresh-pod.sh --client-cpus 1 --rounds 1
#   benchmarks/fresh-pod.sh --variants stock,tuned-reads-0,tuned-reads-200,tuned,tuned-reads-1000
#                                                             # the read warm-up's count against stock
#
# Flags of FreshPod: --rounds (3), --client-cpus (1,2), --variants (stock,tuned; tuned-reads-N for
# tuned with N warm-up reads), --connection-set-up-ms (200), --channels (8), --burst-threads (32),
# --burst-reads (10), --warm-s (8), --warm-threads (8), --warm-up-timeout-s (10), --child-java and
# --child-jvm-options (the child JVM's, e.g. a JDK 25 with -XX:AOTCache=...). --client-cpus N pins
# the child with taskset where the machine has more than N cores; else client and frontend share.
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/client-line.sh

OUT=${OUT:-benchmarks/target/fresh-pod}
PUBLISH=${PUBLISH-docs}
export NO_GCE_CHECK=true SPANNER_DISABLE_BUILTIN_METRICS=true

rm -rf "$OUT"
mkdir -p "$OUT"
command="${LINES:+LINES=\"$LINES\" }benchmarks/fresh-pod.sh${*:+ $*}"
for line_name in ${LINES:-6.119 6.127}; do
  build_client_line "$line_name"
  java -Xmx1g -cp "$classpath" io.github.spannertuning.benchmarks.FreshPod \
    --line "$line" --out "$OUT/fresh-pod-$line.json" "$@"
done

java -cp "$classpath" io.github.spannertuning.benchmarks.FreshPod --report "$OUT" --command "$command"
if [ -n "$PUBLISH" ]; then
  mkdir -p "$PUBLISH"
  cp "$OUT/benchmarks-fresh-pod.md" "$PUBLISH/benchmarks-fresh-pod.md"
  echo "Report: $PUBLISH/benchmarks-fresh-pod.md"
else
  echo "Report: $OUT/benchmarks-fresh-pod.md"
fi
