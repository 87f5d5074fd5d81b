#!/usr/bin/env bash
# Scaling of the autotune sweep with the number of GPUs, on one sweep:
#   scripts/warmup_scaling.sh "1 2 4" [bench arguments...]
# For each N: a fresh config cache and PARALLEL_WARMUP_GPUS=N (N=1: the isolated sweep, one
# child process, so every N pays the same start-up); the sweep's seconds and disagreement count
# come from the run's JSON context; under the table, each run's compile and per-shard lines (keys,
# seconds tuning, seconds alive) show where its sweep time went. Then the serial measurement check: the configs of the N=1
# run replayed with PARALLEL_WARMUP_GPUS set to the largest N, compared by compare.py with the
# N=1 run's own results (same configs, so only the measurement can differ).
# Shards take the entries of CUDA_VISIBLE_DEVICES in order (unset: every device).
# Default bench arguments: --benchmark_filter=^mxfp4 --benchmark_min_time=0.05
# --benchmark_repetitions=9. BENCH as for scripts/ab_test.sh; COMPARE_PY and PYTHON as for
# scripts/compare_results.sh; OUT=DIR keeps the run directories there (default: a temporary
# folder, removed at the end).
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [ $# -lt 1 ] || ! [[ $1 =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]]; then
  echo "usage: scripts/warmup_scaling.sh \"1 2 4\" [bench arguments...] (GPU counts, space-separated; --help for more)" >&2
  exit 2
fi
read -r -a counts <<<"$1"
shift
[ "${counts[0]}" = 1 ] || { echo "warmup_scaling: the first count must be 1 (the baseline)" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$here/build/bench/bench}
[ -x "$bench" ] || { echo "warmup_scaling: no bench at $bench (build first: scripts/build.sh)" >&2; exit 2; }
args=("$@")
for arg in "${args[@]}"; do
  case $arg in
    --benchmark_out=*|--benchmark_out_format=*|--benchmark_format=*|--tunebench_runs=*|--tunebench_cache=*)
      echo "warmup_scaling: $arg: the script sets where runs and caches go; leave it out" >&2
      exit 2 ;;
  esac
done
[ ${#args[@]} -gt 0 ] || args=(--benchmark_filter=^mxfp4)
printf '%s\n' "${args[@]}" | grep -q -- '--benchmark_min_time' || args+=(--benchmark_min_time=0.05)
printf '%s\n' "${args[@]}" | grep -q -- '--benchmark_repetitions' || args+=(--benchmark_repetitions=9)
if [ -n "${OUT:-}" ]; then
  work=$OUT
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
python=${PYTHON:-/usr/bin/python3}

run() {  # run LABEL ENV...: one bench run into $work/runs; prints its run directory
  local label=$1; shift
  if ! env TUNEBENCH_RUNS="$work/runs" "$@" "$bench" "${args[@]}" >"$work/$label.out" 2>"$work/$label.err"; then
    tail -5 "$work/$label.err" >&2
    echo "warmup_scaling: the $label run failed (log: $work/$label.err)" >&2
    exit 1
  fi
  grep -o 'bench: run directory .*' "$work/$label.err" | tail -1 | cut -d' ' -f4-
}

dirs=()
for n in "${counts[@]}"; do
  echo "warmup_scaling: N=$n" >&2
  if [ "$n" = 1 ]; then
    dirs+=("$(run n1 TUNEBENCH_CACHE="$work/cache-n1.sqlite" TUNEBENCH_ISOLATE_SWEEP=1)")
  else
    dirs+=("$(run "n$n" TUNEBENCH_CACHE="$work/cache-n$n.sqlite" PARALLEL_WARMUP_GPUS="$n")")
  fi
done
max=${counts[${#counts[@]}-1]}
echo "warmup_scaling: replaying the N=1 configs with PARALLEL_WARMUP_GPUS=$max" >&2
replay=$(run replay TUNEBENCH_CACHE="$work/cache-n1.sqlite" PARALLEL_WARMUP_GPUS="$max" REPLAY_FROM="${dirs[0]}")

"$python" - "${counts[*]}" "${dirs[@]}" <<'PY'
import json, sys
counts = sys.argv[1].split()
dirs = sys.argv[2:]
base = None
print(f"{'N':>3} {'keys':>5} {'sweep s':>9} {'speedup':>8} {'ideal':>6} {'disagreements':>13}  run directory")
for n, d in zip(counts, dirs):
    ctx = json.load(open(f"{d}/results.json"))["context"]
    if n == "1":
        keys, sweep, dis = ctx.get("tunebench_isolated_sweep_keys", "0"), ctx.get("tunebench_isolated_sweep_seconds"), "-"
    else:
        keys, sweep = ctx.get("parallel_warmup_keys", "0"), ctx.get("parallel_warmup_seconds")
        dis = ctx.get("parallel_warmup_disagreements", "?")
    sweep = float(sweep) if sweep else 0.0
    if base is None:
        base = sweep
    speed = f"{base / sweep:.2f}" if sweep > 0 else "-"
    print(f"{n:>3} {keys:>5} {sweep:>9.1f} {speed:>8} {n:>6} {dis:>13}  {d}")
PY
for n in "${counts[@]}"; do  # where each run's sweep time went: compilation, and each shard's keys
  grep -hE '^bench: (compiled [0-9]+ configs|parallel warmup shard [0-9]+:|isolated sweep:)' "$work/n$n.err" \
    | sed "s/^bench: /  N=$n: /" || true
done
echo "Serial measurement: N=1 run (A) against its configs replayed with PARALLEL_WARMUP_GPUS=$max (B):"
verdict=$("$here/scripts/compare_results.sh" "${dirs[0]}/results.json" "$replay/results.json") || exit 1
grep -E 'OVERALL_GEOMEAN|pvalue' <<<"$verdict" || true
