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
# shellcheck source=client-line.sh
. benchmarks/client-line.sh
for line_name in ${LINES:-6.119}; do
  build_client_line "$line_name"
  java -Xmx2g -cp "$classpath" io.github.spannertuning.benchmarks.ExperimentComparison \
    --out "$OUT/benchmarks-experiment-$line_name.md" \
    --command "${given_out:+OUT=$given_out }${LINES:+LINES=$LINES }benchmarks/experiment.sh${*:+ $*}" "$@" \
    | grep -E '^(\[experiment\]|Report)' || true
done
