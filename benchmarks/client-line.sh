# Sourced by the benchmark scripts. build_client_line NAME packages the benchmarks on one client
# line (6.119, the default; 6.113, 6.122, 6.125 or 6.127 by their Maven profiles) and sets
# $classpath and $line (the google-cloud-spanner version the build resolved).
build_client_line() {
  local profile
  case "$1" in
    6.119) profile="" ;;
    6.113) profile=client-6.113 ;;
    6.122) profile=client-6.122 ;;
    6.127) profile=client-6.127 ;;
    6.125) profile=client-6.127,client-6.125 ;;
    *) echo "LINES: unknown client line '$1'; use 6.119, 6.113, 6.122, 6.125 and/or 6.127" >&2; exit 2 ;;
  esac
  echo "== client line: ${profile:-default (6.119)}"
  mvn -B -q ${profile:+-P "$profile"} -pl benchmarks -am package -DskipTests
  classpath="benchmarks/target/classes:$(cat benchmarks/target/runtime-classpath.txt)"
  line=$(tr ':' '\n' < benchmarks/target/runtime-classpath.txt \
    | sed -n 's|.*/google-cloud-spanner-\([0-9.]*\)\.jar$|\1|p' | head -1)
}
