#!/usr/bin/env bash
# Runs the routing benchmark (RoutingSweep: the concurrency sweep and the transaction workload,
# stock and tuned side by side) on each client line, and writes docs/benchmarks-routing-<line>.md
# ($OUT instead of docs/ when set). About 6 minutes per line with the defaults on two cores.
#
#   benchmarks/routing.sh                          # 6.119 and 6.113
#   LINES=6.122 benchmarks/routing.sh --rounds 3   # one line, more rounds
#
# Extra arguments are RoutingSweep's flags (see docs/benchmarking.md).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/client-line.sh
OUT=${OUT:-docs}
export NO_GCE_CHECK=true SPANNER_DISABLE_BUILTIN_METRICS=true
for line_name in ${LINES:-6.119 6.113}; do
  build_client_line "$line_name"
  java -Xmx2g -cp "$classpath" io.github.spannertuning.benchmarks.RoutingSweep \
    --out "$OUT/benchmarks-routing-$line_name.md" --command "${LINES:+LINES=$LINES }benchmarks/routing.sh${*:+ $*}" "$@" \
    | grep -E '^(sweep|transactions|Report)' || true
done
