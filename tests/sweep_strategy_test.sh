#!/usr/bin/env bash
# TUNEBENCH_SWEEP end to end with the CPU op (no GPU needed): a bad value, the race's figures in
# the summary and the JSON context, and scripts/perf_sweep.sh's table.
set -euo pipefail
build=${1:?usage: sweep_strategy_test.sh BUILD_DIR}
bench=$build/bench/bench
source "$(dirname "$0")/lib.sh"

# An unknown strategy: one line naming the variable and what it takes, exit 2, nothing run.
set +e
TUNEBENCH_SWEEP=fastest "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ >"$work/bad.out" 2>"$work/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "TUNEBENCH_SWEEP=fastest exited $rc"
[ "$(wc -l <"$work/bad.err")" = 1 ] && grep -q "TUNEBENCH_SWEEP='fastest': expected race or full" "$work/bad.err" \
  || fail "bad TUNEBENCH_SWEEP message: $(cat "$work/bad.err")"
[ ! -s "$work/bad.out" ] || fail "a refused run wrote results"

# The race (the default) in the isolated sweep: its cost line and the context's figures.
TUNEBENCH_ISOLATE_SWEEP=1 TUNEBENCH_CACHE="$work/race.sqlite" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_ --benchmark_min_time=0.01 --benchmark_out="$work/race.json" >/dev/null 2>"$work/race.err" \
  || fail "race run: $(cat "$work/race.err")"
grep -Eq '^bench: sweep \(race\): [0-9.]+ s kernel time in [0-9.]+ s of worker time \([0-9]+% busy; [0-9.]+ s compiling, [0-9.]+ s of worker time waiting for it\), [0-9]+ timed runs, [0-9]+ configs? dropped early$' \
  "$work/race.err" || fail "no sweep cost line: $(cat "$work/race.err")"
python3 - "$work/race.json" <<'PY' || fail "sweep figures missing from the JSON context"
import json, sys
c = json.load(open(sys.argv[1]))["context"]
assert c["tunebench_sweep_strategy"] == "race"
for k in ("seconds", "compile_seconds", "compile_exposed_seconds", "kernel_seconds", "worker_seconds", "busy_fraction"):
    assert float(c["tunebench_sweep_" + k]) >= 0, k
assert int(c["tunebench_sweep_timed_runs"]) > 0 and int(c["tunebench_sweep_configs_dropped"]) >= 0
assert 0 < float(c["tunebench_sweep_busy_fraction"]) <= 1
PY

# Compilation overlapped with timing: the worker waits for its key's configs, announced here 8 s
# late by the slow-compile fault (less its start-up, a second or two). The wait is compile time
# exposed (the cost line, the context, the key's record), and the watchdog's clock waits
# meanwhile: 3 s without progress would kill the worker.
TUNEBENCH_ISOLATE_SWEEP=1 TUNEBENCH_HANG_TIMEOUT=3 TUNEBENCH_FAULT_INJECT=slow-compile=8 \
  TUNEBENCH_CACHE="$work/slow.sqlite" "$bench" --tunebench_shapes="$tiny" --benchmark_filter='cpu_.*/M:1/N:256/' \
  --benchmark_min_time=0.01 --benchmark_out="$work/slow.json" >/dev/null 2>"$work/slow.err" \
  || fail "run with a slow compile: $(cat "$work/slow.err")"
! grep -q 'hung' "$work/slow.err" || fail "the watchdog judged a worker waiting for compilation: $(cat "$work/slow.err")"
grep -q 'isolated sweep: 1 key in a child process in [0-9.]* s, 1 tuned' "$work/slow.err" \
  || fail "the key was not tuned: $(cat "$work/slow.err")"
grep -Eq '^bench: sweep \(race\): .*; [0-9.]+ s compiling, ([3-9]|[1-9][0-9]+)\.[0-9] s of worker time waiting for it\)' \
  "$work/slow.err" || fail "the wait is not in the cost line: $(cat "$work/slow.err")"
python3 - "$work/slow.json" <<'PY' || fail "the wait is not in the context and the key's record"
import json, os, sys
c = json.load(open(sys.argv[1]))["context"]
assert float(c["tunebench_sweep_compile_exposed_seconds"]) >= 3, c
tuned = [json.loads(l) for l in open(os.path.join(c["tunebench_run_dir"], "sweep.jsonl"))]
tuned = [r for r in tuned if r["record"] == "tuned"]
assert len(tuned) == 1 and tuned[0]["compile_wait_seconds"] >= 3, tuned
PY

# The benchmark script on the CPU op: both strategies, the table, the winner quality line.
OUT=$work/perf SHAPES=$tiny BUILD=$build "$here/../scripts/perf_sweep.sh" '^cpu_' '^cpu_' >"$work/perf.txt" 2>&1 \
  || fail "perf_sweep.sh: $(cat "$work/perf.txt")"
grep -Eq '^A = full, B = race: winner quality: 4 keys' "$work/perf.txt" || fail "no winner quality: $(cat "$work/perf.txt")"
grep -Eq '^A = full, B = race \(USE_FLAGTUNE=1\): winner quality: 4 keys' "$work/perf.txt" || fail "no exhaustive line"
# Structure, not speed (the CPU op's times on a loaded machine say nothing of the race's worth:
# tests/autotuner_test.cpp checks the race on exact timers): a row per run, full drops nothing.
dropped() { awk -v n="$1" '$1 == n && $NF ~ /^[0-9]+$/ { print $NF; exit }' "$work/perf.txt"; }
for r in full race full-flagtune race-flagtune; do
  [[ "$(dropped "$r")" =~ ^[0-9]+$ ]] || fail "no row for $r: $(cat "$work/perf.txt")"
done
[ "$(dropped full)" = 0 ] && [ "$(dropped full-flagtune)" = 0 ] || fail "full dropped configs: $(cat "$work/perf.txt")"
# scripts/perf_compile_overlap.sh on the CPU op, against a base build (here the same one): a row
# per run with the exposed compile seconds, and the compile wait per key class.
OUT=$work/overlap SHAPES=$tiny BUILD=$build BASE_BUILD=$build "$here/../scripts/perf_compile_overlap.sh" '^cpu_' \
  >"$work/overlap.txt" 2>&1 || fail "perf_compile_overlap.sh: $(cat "$work/overlap.txt")"
for r in base new; do
  grep -Eq "^$r +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+% +4$" "$work/overlap.txt" \
    && grep -Eq "^$r +cpu_mxfp4_gemm decode +4 +[0-9.]+ +[0-9.]+$" "$work/overlap.txt" \
    || fail "perf_compile_overlap.sh: no rows for $r: $(cat "$work/overlap.txt")"
done
echo "sweep strategies: ok"
