#!/usr/bin/env bash
# Compilation overlapped with the sweep's timing, from empty caches:
#   scripts/perf_compile_overlap.sh [FILTER]
# Runs bench once with a fresh config cache and a fresh kernel cache, USE_FLAGTUNE=1 (the
# expanded spaces: about 2000 configs to compile on the MXFP4 ops) and --benchmark_min_time=0.01,
# the sweep in child processes (TUNEBENCH_ISOLATE_SWEEP=1), FILTER as bench's filter (default:
# none, bench's own default, ^mxfp4_ on a GPU machine). Prints one row per run: bench's wall
# time end to end, the sweep's wall, compile seconds (the compile pool's), compile seconds
# exposed (worker time spent waiting for compilation), worker and kernel seconds, busy fraction;
# then, per key class (op x decode/prefill), the keys and the seconds their workers waited for
# compilation (from sweep.jsonl), which says where the exposed time sits.
# BASE_BUILD=DIR also runs the bench of another build folder first (the method before, e.g. a
# build of the commit before the compile pool, which compiled everything before any child
# process started: all of its compile time was exposed), so both methods show in one run.
# BUILD=DIR names the build folder (default build/); OUT=DIR keeps the runs there (default: a
# temporary folder, removed at the end); SHAPES=PATH another shape file or folder; FLAGTUNE=0 the
# default spaces; PARALLEL_WARMUP_GPUS=N the parallel warmup instead of the isolated sweep.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build}
builds=()
[ -z "${BASE_BUILD:-}" ] || builds+=("base=$BASE_BUILD")
builds+=("new=$build")
for b in "${builds[@]}"; do
  [ -x "${b#*=}/bench/bench" ] || { echo "perf_compile_overlap: no ${b#*=}/bench/bench (build first: scripts/build.sh)" >&2; exit 2; }
done
filter=()
[ -z "${1:-}" ] || filter=(--benchmark_filter="$1")
if [ -n "${OUT:-}" ]; then
  work=$OUT
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
shapes=()
[ -z "${SHAPES:-}" ] || shapes=(--tunebench_shapes="$SHAPES")
gpus=${PARALLEL_WARMUP_GPUS:-}
unset PARALLEL_WARMUP_GPUS TUNEBENCH_SWEEP TUNEBENCH_CACHE TUNEBENCH_KERNEL_CACHE REPLAY_FROM USE_FLAGTUNE
export TUNEBENCH_RUNS=$work/runs

run() {  # run NAME BUILD: one bench run from empty caches, its wall time in NAME.wall
  local name=$1 dir=$2
  rm -rf "$work/$name.sqlite" "$work/$name-kernels"
  local env=(TUNEBENCH_ISOLATE_SWEEP=1 TUNEBENCH_KERNEL_CACHE="$work/$name-kernels")
  [ "${FLAGTUNE:-1}" = 0 ] || env+=(USE_FLAGTUNE=1)
  [ -z "$gpus" ] || env+=(PARALLEL_WARMUP_GPUS="$gpus")
  local start end
  start=$(date +%s.%N)
  env "${env[@]}" "$dir/bench/bench" --tunebench_cache="$work/$name.sqlite" "${shapes[@]}" "${filter[@]}" \
    --benchmark_min_time=0.01 --benchmark_out="$work/$name.json" >"$work/$name.out" 2>"$work/$name.err" \
    || { echo "perf_compile_overlap: bench ($name) failed: $(tail -3 "$work/$name.err")" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$start $end" | awk '{ printf "%.1f\n", $2 - $1 }' >"$work/$name.wall"
}

echo "perf_compile_overlap: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU'), $(nproc) cores, filter ${1:-(default)}, USE_FLAGTUNE=${FLAGTUNE:-1}${gpus:+, PARALLEL_WARMUP_GPUS=$gpus}"
names=()
for b in "${builds[@]}"; do
  run "${b%%=*}" "${b#*=}"
  names+=("${b%%=*}")
done
python3 - "$work" "${names[@]}" <<'PY'
import collections, json, os, sys
work, names = sys.argv[1], sys.argv[2:]
print(f"{'run':<6} {'bench s':>8} {'sweep s':>8} {'compile s':>9} {'exposed s':>9} {'worker s':>8} {'kernel s':>8} {'busy':>6} {'keys':>5}")
classes = {}
for name in names:
    ctx = json.load(open(os.path.join(work, name + ".json")))["context"]
    if "tunebench_sweep_seconds" not in ctx:
        sys.exit(f"perf_compile_overlap: the {name} run swept nothing (every selected key was answered, or none "
                 "runs on this machine): choose a filter whose benchmarks can run here")
    g = lambda k: float(ctx.get(k, "nan"))
    wall = float(open(os.path.join(work, name + ".wall")).read())
    keys = ctx.get("tunebench_isolated_sweep_keys", ctx.get("parallel_warmup_keys", "?"))
    # Before the compile pool every config was compiled before any worker started: all exposed.
    exposed = ctx.get("tunebench_sweep_compile_exposed_seconds")
    exposed = f"{float(exposed):9.1f}" if exposed is not None else f"{'(all)':>9}"
    print(f"{name:<6} {wall:8.1f} {g('tunebench_sweep_seconds'):8.1f} {g('tunebench_sweep_compile_seconds'):9.1f} "
          f"{exposed} {g('tunebench_sweep_worker_seconds'):8.1f} {g('tunebench_sweep_kernel_seconds'):8.1f} "
          f"{100 * g('tunebench_sweep_busy_fraction'):5.0f}% {keys:>5}")
    per = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for line in open(os.path.join(ctx["tunebench_run_dir"], "sweep.jsonl")):
        r = json.loads(line)
        if r["record"] != "tuned":
            continue
        op, set_name = r["key"].split("/")[:2]
        c = per[(op, "prefill" if "prefill" in set_name else "decode")]
        c[0] += 1; c[1] += r.get("compile_wait_seconds", 0.0); c[2] += r["seconds"]
    classes[name] = per
print()
print(f"{'run':<6} {'key class':<26} {'keys':>5} {'compile wait s':>14} {'tuning s':>9}")
for name, per in classes.items():
    for (op, kind), (keys, wait, tuning) in sorted(per.items()):
        print(f"{name:<6} {op + ' ' + kind:<26} {keys:5d} {wait:14.1f} {tuning:9.1f}")
PY
for name in "${names[@]}"; do
  grep -h '^bench: compiled' "$work/$name.err" | sed "s/^/$name: /" || true
done
