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
OUT=${OUT:-docs}
export NO_GCE_CHECK=true SPANNER_DISABLE_BUILTIN_METRICS=true
for line_name in ${LINES:-6.119 6.113}; do
  case "$line_name" in
    6.119) profile="" ;;
    6.113) profile=client-6.113 ;;
    6.122) profile=client-6.122 ;;
    6.127) profile=client-6.127 ;;
    *) echo "LINES: unknown client line '$line_name'; use 6.119, 6.113, 6.122 and/or 6.127" >&2; exit 2 ;;
  esac
  echo "== client line: ${profile:-default (6.119)}"
  mvn -B -q ${profile:+-P "$profile"} -pl benchmarks -am package -DskipTests
  classpath="benchmarks/target/classes:$(cat benchmarks/target/runtime-classpath.txt)"
  java -Xmx2g -cp "$classpath" io.github.spannertuning.benchmarks.RoutingSweep \
    --out "$OUT/benchmarks-routing-$line_name.md" --command "${LINES:+LINES=$LINES }benchmarks/routing.sh${*:+ $*}" "$@" \
    | grep -E '^(sweep|transactions|Report)' || true
done
