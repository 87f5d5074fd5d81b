#!/usr/bin/env bash
# A/B of an environment switch on identical configs:
#   scripts/ab_test.sh VAR VALUE_A VALUE_B [bench arguments...]
# 1. a record run (autotunes what the cache lacks, records every benchmark's config),
# 2. run A: VAR=VALUE_A, replaying exactly the recorded configs,
# 3. run B: VAR=VALUE_B, replaying the same configs,
# then compare.py's verdict on A vs B (Mann-Whitney U over the repetitions, so at least 9).
# Two record-mode runs are not comparable: each may retune under noise and pick other winners,
# which mixes the choice of configs into the difference. Replays hold the configs fixed.
# Default bench arguments: --benchmark_filter=^mxfp4 --benchmark_repetitions=9.
# BENCH (default build/bench/bench) and the usual TUNEBENCH_* variables are honoured; COMPARE_PY
# and PYTHON as for scripts/compare_results.sh, which prints the verdict.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [ $# -lt 3 ]; then
  echo "usage: scripts/ab_test.sh VAR VALUE_A VALUE_B [bench arguments...] (--help for more)" >&2
  exit 2
fi
var=$1 a=$2 b=$3
shift 3
if ! [[ $var =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
  echo "ab_test: '$var' is not an environment variable name" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$here/build/bench/bench}
[ -x "$bench" ] || { echo "ab_test: no bench at $bench (build first: scripts/build.sh)" >&2; exit 2; }
args=("$@")
for arg in "${args[@]}"; do
  case $arg in
    --benchmark_out=*|--benchmark_out_format=*|--benchmark_format=*|--tunebench_runs=*)
      echo "ab_test: $arg: ab_test writes each run's JSON into its run directory itself; leave it out" >&2
      exit 2 ;;
  esac
done
[ ${#args[@]} -gt 0 ] || args=(--benchmark_filter=^mxfp4)
printf '%s\n' "${args[@]}" | grep -q -- '--benchmark_repetitions' || args+=(--benchmark_repetitions=9)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_dir() {  # run_dir LABEL [VAR=VALUE ...]: runs bench, prints the run directory it made
  local label=$1; shift
  echo "ab_test: $label run" >&2
  if ! env "$@" "$bench" "${args[@]}" >/dev/null 2>"$log"; then
    cat "$log" >&2
    echo "ab_test: the $label run failed" >&2
    exit 1
  fi
  grep -o 'bench: run directory .*' "$log" | tail -1 | cut -d' ' -f4-
}

record=$(run_dir record)
dir_a=$(run_dir "A ($var=$a)" "$var=$a" REPLAY_FROM="$record")
dir_b=$(run_dir "B ($var=$b)" "$var=$b" REPLAY_FROM="$record")
echo "ab_test: record $record, A $dir_a, B $dir_b" >&2
"$here/scripts/compare_results.sh" "$dir_a/results.json" "$dir_b/results.json"
