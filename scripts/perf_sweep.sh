#!/usr/bin/env bash
# The sweep's cost and winner quality, TUNEBENCH_SWEEP=full against race, from fresh caches:
#   scripts/perf_sweep.sh [FILTER [EXHAUSTIVE_FILTER]]
# For each strategy: bench with a fresh config cache sweeps the benchmarks FILTER selects (default
# ^mxfp4_: the four sets on a GPU) in its isolated sweep (one child process on the measurement
# GPU), then times them briefly (--benchmark_min_time=0.01, one repetition); the sweep's figures
# come from the JSON context (wall, kernel seconds, busy fraction, timed runs, configs dropped)
# and its per-key records (sweep.jsonl in the run directory) give the busy fraction per key
# class (op x decode/prefill). Winner quality: perf_sweep re-times both winners of every key in
# one process and prints the share of keys whose race winner is within 1% (and 2%) of full's.
# With EXHAUSTIVE_FILTER (e.g. '^mxfp4_(gemm|moe)/dsv4f_decode'), the same under USE_FLAGTUNE=1
# (FILTER "-" runs that part alone).
# BUILD=DIR names the build folder (default build/); OUT=DIR keeps the runs there (default: a
# temporary folder, removed at the end); SHAPES=PATH another shape file or folder.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
bench=$build/bench/bench
perf=$build/tools/perf_sweep
for b in "$bench" "$perf"; do
  [ -x "$b" ] || { echo "perf_sweep: no $b (build first: scripts/build.sh; BUILD=DIR names another build folder)" >&2; exit 2; }
done
filter=${1:-^mxfp4_}
exhaustive=${2:-}
if [ -n "${OUT:-}" ]; then
  work=$OUT
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
shapes=()
[ -z "${SHAPES:-}" ] || shapes=(--tunebench_shapes="$SHAPES")
unset PARALLEL_WARMUP_GPUS TUNEBENCH_SWEEP TUNEBENCH_CACHE REPLAY_FROM USE_FLAGTUNE
export TUNEBENCH_RUNS=$work/runs

sweep() {  # sweep NAME STRATEGY FILTER [ENV...]: one bench run from a fresh cache
  local name=$1 strategy=$2 f=$3
  shift 3
  rm -f "$work/$name.sqlite"
  env TUNEBENCH_SWEEP="$strategy" TUNEBENCH_ISOLATE_SWEEP=1 "$@" "$bench" --tunebench_cache="$work/$name.sqlite" \
    "${shapes[@]}" --benchmark_filter="$f" --benchmark_min_time=0.01 --benchmark_repetitions=1 \
    --benchmark_out="$work/$name.json" >"$work/$name.out" 2>"$work/$name.err" \
    || { echo "perf_sweep: bench ($name) failed: $(tail -3 "$work/$name.err")" >&2; exit 1; }
}

figures() {  # figures NAME...: one table row per run, then its busy fraction per key class
  python3 - "$work" "$@" <<'PY'
import collections, json, os, sys
work, names = sys.argv[1], sys.argv[2:]
print(f"{'run':<14} {'sweep s':>8} {'compile s':>9} {'worker s':>8} {'kernel s':>8} {'busy':>6} {'timed runs':>10} {'dropped':>8}")
classes = {}
for name in names:
    ctx = json.load(open(os.path.join(work, name + ".json")))["context"]
    if "tunebench_sweep_seconds" not in ctx:
        sys.exit(f"perf_sweep: the {name} run swept nothing (every selected key was answered, or none runs "
                 "on this machine): choose a filter whose benchmarks can run here")
    g = lambda k: float(ctx.get(k, "nan"))
    print(f"{name:<14} {g('tunebench_sweep_seconds'):8.1f} {g('tunebench_sweep_compile_seconds'):9.1f} "
          f"{g('tunebench_sweep_worker_seconds'):8.1f} {g('tunebench_sweep_kernel_seconds'):8.1f} "
          f"{100 * g('tunebench_sweep_busy_fraction'):5.0f}% {int(g('tunebench_sweep_timed_runs')):10d} "
          f"{int(g('tunebench_sweep_configs_dropped')):8d}")
    per = collections.defaultdict(lambda: [0, 0.0, 0.0, 0])
    for line in open(os.path.join(ctx["tunebench_run_dir"], "sweep.jsonl")):
        r = json.loads(line)
        if r["record"] != "tuned" or not r.get("runs"):
            continue
        op, set_name = r["key"].split("/")[:2]
        c = per[(op, "prefill" if "prefill" in set_name else "decode")]
        c[0] += 1; c[1] += r["seconds"]; c[2] += r["kernel_seconds"]; c[3] += r["runs"]
    classes[name] = per
print()
print(f"{'run':<14} {'key class':<26} {'keys':>5} {'key wall s':>10} {'kernel s':>9} {'busy':>6} {'timed runs':>10}")
for name, per in classes.items():
    for (op, kind), (keys, wall, kernel, runs) in sorted(per.items()):
        print(f"{name:<14} {op + ' ' + kind:<26} {keys:5d} {wall:10.1f} {kernel:9.1f} {100 * kernel / max(wall, 1e-9):5.0f}% {runs:10d}")
PY
}

echo "perf_sweep: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU'), filter $filter"
if [ "$filter" != - ]; then
  sweep full full "$filter"
  sweep race race "$filter"
  figures full race
  echo
  "$perf" "$work/full.sqlite" "$work/race.sqlite" "${shapes[@]}" --benchmark_filter="$filter" >"$work/quality.txt" \
    || { echo "perf_sweep: perf_sweep failed: $(tail -3 "$work/quality.txt")" >&2; exit 1; }
  echo "A = full, B = race: $(tail -1 "$work/quality.txt")"
fi
if [ -n "$exhaustive" ]; then
  echo
  echo "USE_FLAGTUNE=1, filter $exhaustive"
  sweep full-flagtune full "$exhaustive" USE_FLAGTUNE=1
  sweep race-flagtune race "$exhaustive" USE_FLAGTUNE=1
  figures full-flagtune race-flagtune
  echo
  USE_FLAGTUNE=1 "$perf" "$work/full-flagtune.sqlite" "$work/race-flagtune.sqlite" "${shapes[@]}" \
    --benchmark_filter="$exhaustive" >"$work/quality-flagtune.txt" \
    || { echo "perf_sweep: perf_sweep failed: $(tail -3 "$work/quality-flagtune.txt")" >&2; exit 1; }
  echo "A = full, B = race (USE_FLAGTUNE=1): $(tail -1 "$work/quality-flagtune.txt")"
fi
