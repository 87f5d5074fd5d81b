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
grep -Eq '^bench: sweep \(race\): [0-9.]+ s kernel time in [0-9.]+ s of worker time \([0-9]+% busy; [0-9.]+ s compiling, [0-9.]+ s of worker time waiting for it\), [0-9]+ timed runs, [0-9]+ configs? dropped early, [0-9]+ pruned$' \
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

# Pruning from the key with half the M: three M of one shape, whose CPU runs take 1-14 ms (above
# the 200 us where keys prune) and whose configs differ by up to 5x. A factor of 1.5 prunes some of
# M=32's expanded space by M=16; M=64 is the sweep's first key (kept first: no key with half its
# M is tuned before it) and is not pruned. Pruned rows name the key and the ratio, count as
# measured for USE_FLAGTUNE (a second run sweeps nothing), and factor 0 prunes nothing.
cat >"$work/prune.yaml" <<'YAML'
name: prune_test
description: three M of one shape, for the race's pruning
moe: {experts: 8, top_k: 2}
gemms:
  - {name: w13, n: 256, k: 4096}
shapes:
  - {m: 16, calls: 1}
  - {m: 32, calls: 1}
  - {m: 64, calls: 1}
YAML
prune_run() {  # prune_run NAME FACTOR [FILTER [ENV...]]
  local name=$1 factor=$2 filter=${3:-cpu_}
  shift 2
  [ $# -gt 0 ] && shift
  env USE_FLAGTUNE=1 TUNEBENCH_PRUNE_FACTOR=$factor TUNEBENCH_ISOLATE_SWEEP=1 TUNEBENCH_CACHE="$work/$name.sqlite" "$@" \
    "$bench" --tunebench_shapes="$work/prune.yaml" --benchmark_filter="$filter" --benchmark_min_time=0.01 \
    --benchmark_out="$work/$name.json" >/dev/null 2>"$work/$name.err" || fail "pruning run $name: $(cat "$work/$name.err")"
}
prune_run pruned 1.5
cp "$work/pruned.sqlite" "$work/pruned-again.sqlite"
prune_run pruned-again 1.5
prune_run unpruned 0
sql() {  # sql FILE QUERY: the rows, one a line, columns joined by |
  python3 -c 'import sqlite3, sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print("|".join(map(str, r)))' "$@"
}
# A half key tuned by an earlier run prunes too: the sweep's child process (and each shard of the
# parallel warmup) is given it, and does not store it back.
for how in isolated parallel; do
  extra=()
  [ "$how" = parallel ] && extra=(PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7)
  # Factor 1.5: the configs of M=16 span 5x on a quiet machine, about 2x on a loaded one. There the
  # final round's time of the winner can come out 1.4x its race rows', so that no row reaches 1.5x
  # it (2026-12-03, ctest -j2 beside bench_cli): the best's time is set to its key's fastest row,
  # which pruning then measures every row against, as it would the best of a quiet run.
  prune_run "later-$how" 1.5 'cpu_.*/M:16/'
  python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE best SET p50_ns = (SELECT min(p50_ns) FROM measurements WHERE status = \x27ok\x27)")
db.commit()' "$work/later-$how.sqlite" || fail "$how: could not set the M=16 best's time"
  before=$(sql "$work/later-$how.sqlite" "SELECT config, p50_ns, updated_at FROM best")
  spread=$(sql "$work/later-$how.sqlite" "SELECT min(p50_ns), max(p50_ns) FROM measurements WHERE status = 'ok'")
  prune_run "later-$how" 1.5 cpu_ "${extra[@]}"
  n=$(sql "$work/later-$how.sqlite" "SELECT count(*) FROM measurements WHERE status = 'pruned' AND tuning_key LIKE 'M=32,%'")
  [ "$n" -gt 0 ] || fail "$how: M=32 was not pruned by the M=16 key of an earlier run (its best $before, its rows' p50 from-to $spread): $(cat "$work/later-$how.err")"
  after=$(sql "$work/later-$how.sqlite" "SELECT config, p50_ns, updated_at FROM best WHERE tuning_key LIKE 'M=16,%'")
  [ "$before" = "$after" ] || fail "$how: the half key was stored again: '$before' then '$after'"
done
python3 - "$work" <<'PY' || fail "pruning: see above"
import json, os, sqlite3, sys
w = sys.argv[1]
def pruned(name):
    return json.load(open(os.path.join(w, name + ".json")))["context"].get("tunebench_sweep_configs_pruned")
rows = sqlite3.connect(os.path.join(w, "pruned.sqlite")).execute(
    "SELECT tuning_key, config, status, p50_ns, error FROM measurements").fetchall()
p = [r for r in rows if r[2] == "pruned"]
assert p, "no config was pruned"
assert int(pruned("pruned")) == len(p), (pruned("pruned"), len(p))
for key, config, status, p50, error in p:
    assert key.startswith("M=32,") and p50 is None, (key, config, p50)
    assert error.startswith("pruned: ") and "the best on M=16" in error, error
# Every config of the expanded space has a row for each key, pruned or timed.
per_key = {}
for key, config, *_ in rows:
    per_key.setdefault(key, set()).add(config)
assert len(per_key) == 3 and len(set(map(len, per_key.values()))) == 1, {k: len(v) for k, v in per_key.items()}
tuned = [json.loads(l) for l in open(os.path.join(
    json.load(open(os.path.join(w, "pruned.json")))["context"]["tunebench_run_dir"], "sweep.jsonl"))]
tuned = {r["key"].split("/M:")[1].split("/")[0]: r for r in tuned if r["record"] == "tuned"}
assert tuned["32"]["pruned"] == len(p) and tuned["16"]["pruned"] == 0 and tuned["64"]["pruned"] == 0, tuned
ctx = json.load(open(os.path.join(w, "pruned-again.json")))["context"]
assert "tunebench_sweep_timed_runs" not in ctx or int(ctx["tunebench_sweep_timed_runs"]) == 0, ctx
assert int(pruned("unpruned")) == 0
assert not sqlite3.connect(os.path.join(w, "unpruned.sqlite")).execute(
    "SELECT count(*) FROM measurements WHERE status = 'pruned'").fetchone()[0]
PY
grep -q 'isolated sweep' "$work/pruned-again.err" && fail "a pruned exhaustive search was swept again: $(cat "$work/pruned-again.err")"
# scripts/prune_replay.py replays the pruning on the unpruned sweep: 3 keys in one group, every
# factor's line; a file that is not a cache is one line and exit 2.
python3 "$here/../scripts/prune_replay.py" "$work/unpruned.sqlite" 2 4 >"$work/replay.txt" \
  || fail "prune_replay.py: $(cat "$work/replay.txt")"
grep -q '^3 keys in 1 groups; one run of every config: ' "$work/replay.txt" \
  && grep -Eq '^factor 2: [0-9.]+ s of it left \([0-9]+%\); best pruned on [0-9]+ keys' "$work/replay.txt" \
  && grep -q '^factor 4: ' "$work/replay.txt" || fail "prune_replay.py output: $(cat "$work/replay.txt")"
set +e
python3 "$here/../scripts/prune_replay.py" "$work/pruned.sqlite" >"$work/replay-pruned.out" 2>"$work/replay-pruned.err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q 'rows are pruned: expected a cache swept with TUNEBENCH_PRUNE_FACTOR=0' "$work/replay-pruned.err" \
  || fail "prune_replay.py on a pruned cache: exit $rc: $(cat "$work/replay-pruned.err")"
set +e
python3 "$here/../scripts/prune_replay.py" "$work/prune.yaml" >"$work/replay-bad.out" 2>"$work/replay-bad.err"
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$work/replay-bad.err")" = 1 ] && grep -q 'expected a tunebench config cache' "$work/replay-bad.err" \
  || fail "prune_replay.py on a YAML file: exit $rc: $(cat "$work/replay-bad.err")"
set +e
TUNEBENCH_PRUNE_FACTOR=1 "$bench" --tunebench_shapes="$work/prune.yaml" >"$work/badprune.out" 2>"$work/badprune.err"
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(wc -l <"$work/badprune.err")" = 1 ] \
  && grep -q "TUNEBENCH_PRUNE_FACTOR='1': expected 0 (off) or a factor from 1.5 to 1000" "$work/badprune.err" \
  || fail "bad TUNEBENCH_PRUNE_FACTOR: exit $rc: $(cat "$work/badprune.err")"

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
