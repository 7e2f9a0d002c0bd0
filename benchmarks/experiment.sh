#!/usr/bin/env bash
# Runs the switchback experiment beside the side-by-side benchmark (ExperimentComparison: on the
# degraded and spiky workloads, stock and tuned side by side, then one tuned client running an
# experiment under the same load) on each client line, and writes
# docs/benchmarks-experiment-<line>.md ($OUT instead of docs/ when set). About 6 minutes per line
# with the defaults on two cores.
#
#   benchmarks/experiment.sh                             # 6.119
#   LINES="6.119 6.113" benchmarks/experiment.sh         # two lines
#   benchmarks/experiment.sh --pairs 10 --max-rst-frames 0
#
# Extra arguments are ExperimentComparison's flags, and the frontend's (see docs/benchmarking.md).
set -euo pipefail
cd "$(dirname "$0")/.."
given_out=${OUT:-}
OUT=${OUT:-docs}
export NO_GCE_CHECK=true SPANNER_DISABLE_BUILTIN_METRICS=true
for line_name in ${LINES:-6.119}; do
  case "$line_name" in
    6.119) profile="" ;;
    6.113) profile=client-6.113 ;;
    6.122) profile=client-6.122 ;;
    6.127) profile=client-6.127 ;;
    6.125) profile=client-6.127,client-6.125 ;;
    *) echo "LINES: unknown client line '$line_name'; use 6.119, 6.113, 6.122, 6.125 and/or 6.127" >&2; exit 2 ;;
  esac
  echo "== client line: ${profile:-default (6.119)}"
  mvn -B -q ${profile:+-P "$profile"} -pl benchmarks -am package -DskipTests
  classpath="benchmarks/target/classes:$(cat benchmarks/target/runtime-classpath.txt)"
  java -Xmx2g -cp "$classpath" io.github.spannertuning.benchmarks.ExperimentComparison \
    --out "$OUT/benchmarks-experiment-$line_name.md" \
    --command "${given_out:+OUT=$given_out }${LINES:+LINES=$LINES }benchmarks/experiment.sh${*:+ $*}" "$@" \
    | grep -E '^(\[experiment\]|Report)' || true
done
