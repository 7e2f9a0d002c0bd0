#!/usr/bin/env bash
# Runs the load benchmark and the JMH microbenchmarks on both client lines (google-cloud-spanner
# 6.119 and the client-6.113 profile), then writes the report: benchmarks.md, benchmarks.json and
# benchmarks.html in $OUT, copied to $PUBLISH (docs/ by default; PUBLISH= to skip).
#
# Per client line: the workloads on an unlimited client (about 14 minutes, 3 of them aging and
# fresh-instance), then the same client JVM on one core and the frontend on the others
# (--client-cpus 1, the default: a capacity sweep, the steady load at 75% of stock's capacity,
# bursty and spiky scaled to it; about 9 minutes), then JMH (about 1.5 minutes). About 46 minutes
# in all on two cores.
#
#   benchmarks/run.sh                      # the defaults
#   benchmarks/run.sh --client-cpus 0      # no CPU-limited part: about 31 minutes
#   LINES=6.119 SKIP_JMH=1 benchmarks/run.sh --workloads aging,fresh-instance --client-cpus 0
#                                          # the warm-connection workloads only: about 3 minutes
#   benchmarks/run.sh --client-cpus 1 --workloads "" --limited-rounds 2 --limited-window-s 8
#                                          # only the CPU-limited part, shorter
#   benchmarks/run.sh --scale 0.5 --rounds 3
#   benchmarks/run.sh --pool dynamic --client-cpus 0
#                                          # every client on grpc-gcp's dynamic channel pool: the
#                                          # degraded, stragglers, fresh-client and grow-shrink
#                                          # workloads, stock, tuned and tuned + hedging, on 6.119
#                                          # and 6.127 (6.113 does not route that pool)
#   LINES="6.119 6.127" POOLS="static dynamic" SKIP_JMH=1 REPORT=benchmarks-mixed benchmarks/run.sh \
#     --workloads mixed --client-cpus 0 --rounds 3
#                                          # the degraded workload with one query in ten a costly
#                                          # report, stock, tuned and tuned + hedging, each line on
#                                          # both pools in one report: about 12 minutes
#
# Extra arguments are flags of BenchmarkMain (see docs/benchmarking.md). SKIP_JMH=1 skips JMH; JMH_ARGS adds
# JMH options (e.g. JMH_ARGS="-wi 1 -i 2" for a shorter run); JMH_INCLUDE picks the JMH benchmarks by a
# regular expression (all of them by default; JMH_INCLUDE=HedgingBenchmark for hedging's only);
# REPORT names the published files (benchmarks by default: REPORT=benchmarks-hedging publishes
# docs/benchmarks-hedging.md, .json and .html); LINES=6.119 or LINES=6.113 runs one
# client line only, LINES=6.122 the 6.122 line (grpc-gcp 1.15), LINES=6.127 or LINES=6.125 the
# lines libraries-bom 26.93.0 brings (grpc-gcp 1.20; from 6.125 the client skips the cancel at last).
# POOLS="static dynamic" runs each client line once per pool (--pool each, which the arguments then
# must not set), all in one report. --client-cpus needs taskset (util-linux) and more cores than N;
# without them that part is skipped, and the report says why.
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/client-line.sh

OUT=${OUT:-benchmarks/target/benchmark-results}
PUBLISH=${PUBLISH-docs}
REPORT=${REPORT:-benchmarks}
JMH_INCLUDE=${JMH_INCLUDE:-io.github.spannertuning.client.*Benchmark}
export NO_GCE_CHECK=true SPANNER_DISABLE_BUILTIN_METRICS=true

rm -rf "$OUT"
mkdir -p "$OUT"
command="${LINES:+LINES=\"$LINES\" }${POOLS:+POOLS=\"$POOLS\" }${SKIP_JMH:+SKIP_JMH=1 }"
if [ "$REPORT" != benchmarks ]; then command+="REPORT=$REPORT "; fi
if [ -z "${SKIP_JMH:-}" ] && [ "$JMH_INCLUDE" != "io.github.spannertuning.client.*Benchmark" ]; then
  command+="JMH_INCLUDE=$JMH_INCLUDE "
fi
if [ -z "${SKIP_JMH:-}" ] && [ -n "${JMH_ARGS:-}" ]; then command+="JMH_ARGS=\"$JMH_ARGS\" "; fi
command+="benchmarks/run.sh${*:+ $*}"

default_lines="6.119 6.113"
for pool in ${POOLS:-}; do
  case "$pool" in
    static) ;;
    dynamic) default_lines="6.119 6.127" ;;
    *) echo "POOLS: unknown pool '$pool'; use static and/or dynamic" >&2; exit 2 ;;
  esac
done
for arg in "$@"; do
  if [ -n "${POOLS:-}" ] && { [ "$arg" = --pool ] || [ "${arg#--pool=}" != "$arg" ]; }; then
    echo "POOLS sets --pool for each run; drop --pool from the arguments" >&2
    exit 2
  fi
  if [ "$arg" = "--pool=dynamic" ] || { [ "${previous:-}" = "--pool" ] && [ "$arg" = dynamic ]; }; then
    default_lines="6.119 6.127"
  fi
  previous=$arg
done
for line_name in ${LINES:-$default_lines}; do
  build_client_line "$line_name"
  # "flags" stands for the arguments' own pool where POOLS is not set.
  for pool in ${POOLS:-flags}; do
    java -Xmx2g -cp "$classpath" io.github.spannertuning.benchmarks.BenchmarkMain \
      --out "$OUT" --command "$command" ${POOLS:+--pool "$pool"} "$@"
  done
  if [ -z "${SKIP_JMH:-}" ]; then
    # -foe: a benchmark that fails (one the starter's code moved under) stops the run, rather than
    # leave a JMH table without it.
    java -cp "$classpath" org.openjdk.jmh.Main "$JMH_INCLUDE" \
      -foe true -prof gc -rf json -rff "$OUT/jmh-$line.json" ${JMH_ARGS:-} | tee "$OUT/jmh-$line.txt"
  fi
done

java -cp "$classpath" io.github.spannertuning.benchmarks.Report "$OUT"
if [ -n "$PUBLISH" ]; then
  mkdir -p "$PUBLISH"
  for ext in md json html; do
    cp "$OUT/benchmarks.$ext" "$PUBLISH/$REPORT.$ext"
  done
  echo "Report: $PUBLISH/$REPORT.md ($PUBLISH/$REPORT.html, $PUBLISH/$REPORT.json)"
else
  echo "Report: $OUT/benchmarks.md"
fi
