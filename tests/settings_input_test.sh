#!/usr/bin/env bash
# Settings and files as a new user gives them, end to end on the CPU path: an empty variable is
# unset (CUDA_VISIBLE_DEVICES and OMP_NUM_THREADS read as their owners read them),
# bench --tunebench_check=1 (what scripts/ab_test.sh runs before its record run), output that
# cannot be written, and refusals that name the input and what was expected.
set -euo pipefail
bench=${1:?usage: settings_input_test.sh BENCH TUNEBENCH_CACHE_CLI}
cache_cli=${2:?usage: settings_input_test.sh BENCH TUNEBENCH_CACHE_CLI}
source "$(dirname "$0")/lib.sh"
quick=(--tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' --benchmark_min_time=0.01)
list=(--tunebench_shapes="$tiny" --benchmark_list_tests)

# expect RC TEXT COMMAND...: COMMAND exits RC, and (TEXT not empty) writes one line holding TEXT
# on stderr. Never waits on a terminal or for ever.
expect() {
  local want_rc=$1 want=$2
  shift 2
  set +e
  timeout 120 "$@" >"$work/out" 2>"$work/err" </dev/null
  local rc=$?
  set -e
  [ "$rc" -eq "$want_rc" ] || fail "$*: exit status $rc, expected $want_rc: $(cat "$work/err")"
  [ -z "$want" ] || { [ "$(grep -c . "$work/err")" -eq 1 ] && grep -qF -- "$want" "$work/err"; } \
    || fail "$*: expected one line holding '$want': $(cat "$work/err")"
}

# An empty variable is unset: bench runs as without it (here: lists the same names).
"$bench" "${list[@]}" >"$work/names"
for var in TUNEBENCH_CACHE TUNEBENCH_SEED TUNEBENCH_TIMING TUNEBENCH_COLD_L2 TUNEBENCH_SWEEP TUNEBENCH_ISOLATE_SWEEP \
  TUNEBENCH_HANG_TIMEOUT TUNEBENCH_PRUNE_FACTOR USE_FLAGTUNE PARALLEL_WARMUP_GPUS REPLAY_FROM TUNEBENCH_RUNS TUNEBENCH_KERNEL_CACHE \
  FLAGGEMS_MXFP4_FOLDSCALE TUNEBENCH_FAULT_INJECT OMPI_COMM_WORLD_SIZE SLURM_PROCID CUDA_VISIBLE_DEVICES; do
  expect 0 "" env "$var=" "$bench" "${list[@]}"
  cmp -s "$work/out" "$work/names" || fail "$var= changed the listing"
done
# A run with REPLAY_FROM= replays nothing and records no REPLAY_FROM; TUNEBENCH_CACHE= is the default
# cache (here in a HOME of the test's own).
mkdir -p "$work/home"
expect 0 "" env REPLAY_FROM= TUNEBENCH_CACHE= TUNEBENCH_SEED= HOME="$work/home" XDG_CACHE_HOME= \
  "$bench" "${quick[@]}" --benchmark_out="$work/empty.json"
run=$(ls -d "$work"/runs/*/ | tail -1)
/usr/bin/python3 - "$run/manifest.json" "$work/empty.json" "$work/home" <<'PY' || fail "empty variables were recorded"
import json, sys
m = json.load(open(sys.argv[1]))
for var in ("REPLAY_FROM", "TUNEBENCH_CACHE", "TUNEBENCH_SEED"):
    assert var not in m["env"], (var, m["env"])
assert m["cache"] == sys.argv[3] + "/.cache/tunebench/configs.sqlite", m["cache"]
ctx = json.load(open(sys.argv[2]))["context"]
assert "tunebench_replay_from" not in ctx, ctx
assert json.load(open(sys.argv[1].replace("manifest.json", "configs.json")))["configs"][0]["source"] == "tuned"
PY

# CUDA_VISIBLE_DEVICES as CUDA reads it; what CUDA would stop at is refused, naming the variable,
# also where the parallel warmup counts the devices.
for good in 0 0,1 -1 GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0; do
  expect 0 "" env CUDA_VISIBLE_DEVICES="$good" "$bench" "${list[@]}"
done
for bad in abc 0,abc 0,,1 GPU-; do
  expect 2 "bench: CUDA_VISIBLE_DEVICES='$bad': " env CUDA_VISIBLE_DEVICES="$bad" "$bench" "${list[@]}"
  grep -q "is not a device: expected comma-separated device indices" "$work/err" || fail "$bad: $(cat "$work/err")"
done
expect 2 "bench: CUDA_VISIBLE_DEVICES='abc': entry 'abc' is not a device" env CUDA_VISIBLE_DEVICES=abc \
  PARALLEL_WARMUP_GPUS=2 "$bench" "${quick[@]}"

# OMP_NUM_THREADS is checked like every setting (libgomp warns of a bad one itself when it loads,
# before bench runs: bench's line is the last, and bench's only one).
for bad in abc 0 -1 ''; do
  set +e
  OMP_NUM_THREADS=$bad "$bench" "${list[@]}" >/dev/null 2>"$work/err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(grep -c '^bench: ' "$work/err")" -eq 1 ] \
    && tail -1 "$work/err" | grep -qF "bench: OMP_NUM_THREADS='$bad': expected the host ops' OpenMP threads, a positive integer" \
    || fail "OMP_NUM_THREADS='$bad': exit status $rc: $(cat "$work/err")"
done
expect 0 "" env OMP_NUM_THREADS=4,2 "$bench" "${list[@]}"

# bench --tunebench_check=1: what a run checks before it measures, and nothing else: no run
# directory, no cache made, a cache's bytes as they were; one line on stdout.
runs_before=$(ls "$work/runs" | wc -l)
expect 0 "" env TUNEBENCH_CACHE="$work/new/cache.sqlite" TUNEBENCH_RUNS="$work/new-runs" \
  "$bench" --tunebench_check=1 "${quick[@]}"
grep -qx "bench: check passed: 1 benchmark selected, 1 key to tune (in-process sweep); nothing was run or tuned" \
  "$work/out" || fail "check: $(cat "$work/out")"
[ ! -e "$work/new" ] && [ ! -e "$work/new-runs" ] || fail "a check made $(ls -d "$work"/new*)"
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "a check made a run directory"
"$bench" "${quick[@]}" >/dev/null 2>&1 || fail "a run into the test's cache failed"
cp "$work/cache.sqlite" "$work/cache.before"
expect 0 "" "$bench" --tunebench_check=1 "${quick[@]}"
grep -q "0 keys to tune" "$work/out" || fail "check of a tuned key: $(cat "$work/out")"
cmp -s "$work/cache.sqlite" "$work/cache.before" || fail "a check changed the cache"
# A damaged cache passes (a run moves it aside and starts afresh) with that said, and untouched.
cp "$work/cache.before" "$work/damaged.sqlite"
/usr/bin/python3 -c 'import sys; f=open(sys.argv[1], "r+b"); f.seek(4096 + 8); f.write(b"\x5a" * 50)' "$work/damaged.sqlite"
cp "$work/damaged.sqlite" "$work/damaged.before"
expect 0 "bench: WARNING: config cache $work/damaged.sqlite is damaged (SQLite's integrity check: " \
  env TUNEBENCH_CACHE="$work/damaged.sqlite" "$bench" --tunebench_check=1 "${quick[@]}"
grep -q "1 key to tune" "$work/out" || fail "check of a damaged cache: $(cat "$work/out")"
cmp -s "$work/damaged.sqlite" "$work/damaged.before" || fail "a check changed a damaged cache"
# ... and refuses, in the run's own line and status, what the run would refuse.
touch "$work/a-file"
/usr/bin/python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("create table notes(x)"); c.commit()' \
  "$work/foreign.sqlite"
cp "$work/foreign.sqlite" "$work/foreign.before"
expect 2 "bench: config cache $work/foreign.sqlite " env TUNEBENCH_CACHE="$work/foreign.sqlite" \
  "$bench" --tunebench_check=1 "${quick[@]}"
cmp -s "$work/foreign.sqlite" "$work/foreign.before" || fail "a check changed a foreign file"
expect 2 "bench: config cache $work: " env TUNEBENCH_CACHE="$work" "$bench" --tunebench_check=1 "${quick[@]}"
expect 2 "bench: config cache $work/a-file/c.sqlite: cannot create its folder: $work/a-file is not a folder" \
  env TUNEBENCH_CACHE="$work/a-file/c.sqlite" "$bench" --tunebench_check=1 "${quick[@]}"
# A cache path that is a link to nothing: named as such by the check and the run alike.
ln -s "$work/gone/c.sqlite" "$work/dangling.sqlite"
expect 2 "bench: config cache $work/dangling.sqlite: a symbolic link to $work/gone/c.sqlite, which does not exist" \
  env TUNEBENCH_CACHE="$work/dangling.sqlite" "$bench" --tunebench_check=1 "${quick[@]}"
expect 2 "bench: config cache $work/dangling.sqlite: a symbolic link to $work/gone/c.sqlite, which does not exist" \
  env TUNEBENCH_CACHE="$work/dangling.sqlite" "$bench" "${quick[@]}"
# MPI launcher variables a run refuses, the check refuses too.
expect 2 "bench: OMPI_COMM_WORLD_RANK=5 beside OMPI_COMM_WORLD_SIZE=2: expected a rank below the job's size" \
  env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=5 "$bench" --tunebench_check=1 "${quick[@]}"
expect 2 "bench: REPLAY_FROM=$work/no-run: no such folder" env REPLAY_FROM="$work/no-run" \
  "$bench" --tunebench_check=1 "${quick[@]}"
expect 2 "bench: PARALLEL_WARMUP_GPUS=2 but only 1 device is visible" env PARALLEL_WARMUP_GPUS=2 \
  CUDA_VISIBLE_DEVICES=0 "$bench" --tunebench_check=1 "${quick[@]}"
expect 1 "matches no benchmark" "$bench" --tunebench_check=1 --tunebench_shapes="$tiny" --benchmark_filter=nothing
# Paths under /proc (a kernel file system, where root passes every permission check and still
# cannot make a file): a check refuses what the run refuses, in the run's own line.
for setting in "TUNEBENCH_RUNS=/proc/tunebench-nope" "TUNEBENCH_CACHE=/proc/tunebench-nope.sqlite" \
  "TUNEBENCH_CACHE=/proc/tunebench-nope/c.sqlite" "--benchmark_out=/proc/tunebench-nope.json"; do
  case $setting in --*) envs=() flags=("$setting") ;; *) envs=("$setting") flags=() ;; esac
  expect 2 "" env "${envs[@]}" "$bench" "${quick[@]}" "${flags[@]}"
  cp "$work/err" "$work/run.err"
  expect 2 "" env "${envs[@]}" "$bench" --tunebench_check=1 "${quick[@]}" "${flags[@]}"
  [ "$(grep -c . "$work/run.err")" -eq 1 ] && cmp -s "$work/err" "$work/run.err" \
    || fail "$setting: the check said '$(cat "$work/err")', the run '$(cat "$work/run.err")'"
done

# TUNEBENCH_RUNS (or --tunebench_runs) that is no folder is named, with what is there, in a check
# and in a run, before anything is made.
for how in check run; do
  args=("${quick[@]}")
  [ "$how" = run ] || args+=(--tunebench_check=1)
  expect 2 "bench: TUNEBENCH_RUNS='$work/a-file': a regular file, expected a folder to make run directories in" \
    env TUNEBENCH_RUNS="$work/a-file" "$bench" "${args[@]}"
  expect 2 "bench: --tunebench_runs='$work/a-file/sub': a regular file ($work/a-file), expected a folder" \
    "$bench" --tunebench_runs="$work/a-file/sub" "${args[@]}"
done
# A runs folder that cannot be made (under /proc even root's mkdir fails, where the check's
# look at the folders above finds nothing wrong) is named by its setting in a run too.
expect 2 "bench: TUNEBENCH_RUNS='/proc/nope': " env TUNEBENCH_RUNS=/proc/nope "$bench" "${quick[@]}"
grep -q "expected a folder to make run directories in\$" "$work/err" || fail "TUNEBENCH_RUNS=/proc/nope: $(cat "$work/err")"
expect 2 "bench: --tunebench_runs='/proc/nope': " "$bench" --tunebench_runs=/proc/nope "${quick[@]}"

# A shape folder's *.yaml that is not a regular file is refused by name, not skipped.
mkdir "$work/shapes" && mkfifo "$work/shapes/a.yaml"
expect 2 "bench: --tunebench_shapes: $work/shapes/a.yaml: a FIFO (named pipe), expected a YAML shape file" \
  "$bench" --tunebench_shapes="$work/shapes" --benchmark_list_tests
cp "$tiny" "$work/shapes/"
expect 2 "bench: --tunebench_shapes: $work/shapes/a.yaml: a FIFO (named pipe), expected a YAML shape file" \
  "$bench" --tunebench_shapes="$work/shapes" --benchmark_list_tests

# The note of an empty file made a cache starts with the program's name (a file a minute old: one
# made in the last seconds is a sibling process's new cache, made without a note).
: >"$work/empty.sqlite"
touch -d '1 minute ago' "$work/empty.sqlite"
expect 0 "" env TUNEBENCH_CACHE="$work/empty.sqlite" "$bench" "${quick[@]}"
grep -q "^bench: config cache $work/empty.sqlite is an empty file: starting a new cache in it\$" "$work/err" \
  || fail "the empty-cache note: $(cat "$work/err")"

# A key whose every fitting config failed in an earlier run (here: rows imported from elsewhere)
# is not tuned again, since failures are not retried; the benchmark's error says so and names the
# command that forgets them, after which the key is tuned. A host op compiles nothing, so an
# import refuses its compile_failed rows (only a forged file has them) in one line naming the row.
"$cache_cli" export "$work/tuned.json"
/usr/bin/python3 - "$work/tuned.json" "$work" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["entries"] = [e for e in doc["entries"] if e["key"]["tuning_key"] == "M=1,N=256,K=512"]
assert doc["entries"] and doc["entries"][0]["measurements"], doc
for status in ("compile_failed", "launch_failed"):
    for e in doc["entries"]:
        e["best"] = None
        for m in e["measurements"]:
            m.update(status=status, p20_ns=None, p50_ns=None, p80_ns=None, error="failed elsewhere")
    json.dump(doc, open(f"{sys.argv[2]}/{status}.json", "w"))
PY
"$cache_cli" evict cpu_mxfp4_gemm M=1,N=256,K=512 >/dev/null
expect 2 "tunebench-cache: import $work/compile_failed.json: entries[0]: config 'BLOCK_N=" \
  "$cache_cli" import "$work/compile_failed.json"
grep -qF "of op cpu_mxfp4_gemm: status compile_failed, but cpu_mxfp4_gemm is a host op, which compiles nothing (a forged row?); nothing imported" \
  "$work/err" || fail "compile_failed rows of a host op: $(cat "$work/err")"
expect 0 "" "$cache_cli" import "$work/launch_failed.json"
expect 0 "" "$bench" "${quick[@]}"
grep -qF "ERROR OCCURRED: 'no config ran: " "$work/out" && grep -qF " configs that fit failed in an earlier run (launch_failed [" "$work/out" \
  || fail "a key whose configs all failed earlier: $(cat "$work/out")"
forget=$(sed -n "s/.*ERROR OCCURRED: .*; to forget the failures and tune the key again: tunebench-cache \(.*\)'\$/\1/p" "$work/out")
[ "$forget" = "--cache=$work/cache.sqlite evict cpu_mxfp4_gemm M=1,N=256,K=512" ] \
  || fail "the error does not name the eviction of the key: $(cat "$work/out")"
# shellcheck disable=SC2086  # the command's words, as the error gives them
expect 0 "" "$cache_cli" $forget
expect 0 "" "$bench" "${quick[@]}"
! grep -q "ERROR OCCURRED" "$work/out" || fail "the key was not tuned after its failures were evicted: $(cat "$work/out")"

# Output that cannot be written: one line naming what failed and why (the error of the write that
# failed first, also when that was long before the end: output larger than the buffers), a
# non-zero status; an export target that is no regular file is refused before anything is
# written (a FIFO never blocks it). The large outputs: the listing of the shipped shape sets, and
# a cache of 300 keys (another build's op, kept unchecked).
/usr/bin/python3 - "$work/many.json" <<'PY'
import json, sys, time
now = int(time.time()) - 10
entries = [{"key": {"op": "other_op", "kernel_version": "v1", "tuning_key": f"M={m},N=4096,K=4096",
                    "device_name": "some CPU", "device_cc": "", "toolkit": "host", "timing_mode": "host"},
            "best": {"config": "X=1", "p50_ns": 5000, "updated_at": now},
            "measurements": [{"config": f"X={x}", "status": "ok", "p20_ns": 4000 + x, "p50_ns": 5000 + x,
                              "p80_ns": 6000 + x, "error": "", "measured_at": now, "device_uuid": "", "host": "h"}
                             for x in range(1, 4)]} for m in range(1, 301)]
json.dump({"tunebench_cache_schema": 3, "entries": entries}, open(sys.argv[1], "w"))
PY
expect 0 "" "$cache_cli" --cache="$work/many.sqlite" import --keep-unknown-ops "$work/many.json"
if [ -w /dev/full ]; then
  for shapes in "$tiny" "$here/../runs/shape"; do
    set +e
    "$bench" --tunebench_shapes="$shapes" --benchmark_list_tests >/dev/full 2>"$work/err"; rc=$?
    set -e
    [ "$rc" -eq 2 ] && [ "$(grep -c . "$work/err")" -eq 1 ] \
      && grep -qx "bench: cannot write to stdout (No space left on device): the output is lost" "$work/err" \
      || fail "bench --tunebench_shapes=$shapes --benchmark_list_tests >/dev/full: exit status $rc: $(cat "$work/err")"
  done
  for cmd in list export "show cpu_mxfp4_gemm M=1,N=256,K=512" "--cache=$work/many.sqlite list" \
    "--cache=$work/many.sqlite export"; do
    set +e
    # shellcheck disable=SC2086  # the command's words
    "$cache_cli" $cmd >/dev/full 2>"$work/err"; rc=$?
    set -e
    [ "$rc" -eq 2 ] && [ "$(grep -c . "$work/err")" -eq 1 ] \
      && grep -qx "tunebench-cache: $(echo "${cmd#--cache=* }" | cut -d' ' -f1): cannot write to stdout (No space left on device): the output is lost" \
        "$work/err" || fail "tunebench-cache $cmd >/dev/full: exit status $rc: $(cat "$work/err")"
  done
  # A command that changed the cache says that the change was made, as a script reading exit
  # status 2 cannot tell it: the key is gone after the evict, back after the import.
  for cmd in "evict other_op M=1,N=4096,K=4096" "import --keep-unknown-ops $work/many.json"; do
    set +e
    # shellcheck disable=SC2086  # the command's words
    "$cache_cli" --cache="$work/many.sqlite" $cmd >/dev/full 2>"$work/err"; rc=$?
    set -e
    made=$([ "${cmd%% *}" = evict ] && echo eviction || echo import)
    [ "$rc" -eq 2 ] && [ "$(grep -c . "$work/err")" -eq 1 ] \
      && grep -qx "tunebench-cache: ${cmd%% *}: cannot write to stdout (No space left on device): the output is lost; the $made was made" \
        "$work/err" || fail "tunebench-cache $cmd >/dev/full: exit status $rc: $(cat "$work/err")"
    want=$([ "$made" = eviction ] && echo 1 || echo 0)
    expect "$want" "" "$cache_cli" --cache="$work/many.sqlite" show other_op M=1,N=4096,K=4096
  done
  expect 2 "tunebench-cache: export /dev/full: a device, expected a regular file or a new file name" \
    "$cache_cli" export /dev/full
fi
mkfifo "$work/pipe"
expect 2 "tunebench-cache: export $work/pipe: a FIFO (named pipe), expected a regular file" "$cache_cli" export "$work/pipe"
expect 2 "tunebench-cache: export $work: a folder, expected a regular file" "$cache_cli" export "$work"
expect 2 "tunebench-cache: import $work/pipe: a FIFO (named pipe), expected a regular file written by export" \
  "$cache_cli" import "$work/pipe"
expect 0 "" "$cache_cli" export "$work/export.json"
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["entries"]' "$work/export.json" \
  || fail "export to a new file"
# A file that cannot grow (the file size limit: a full disk alike) fails the export halfway: the
# error of that write is named, and the file there is left as it was.
cp "$work/export.json" "$work/limited.json"
set +e
(ulimit -f 8 && trap '' XFSZ && exec "$cache_cli" --cache="$work/many.sqlite" export "$work/limited.json") 2>"$work/err"; rc=$?
set -e
[ "$rc" -eq 2 ] && [ "$(grep -c . "$work/err")" -eq 1 ] \
  && grep -q "^tunebench-cache: export $work/limited.json: writing $work/limited.json.tmp.[0-9]* failed (File too large); the file there is left as it was\$" "$work/err" \
  || fail "an export past the file size limit: exit status $rc: $(cat "$work/err")"
cmp -s "$work/export.json" "$work/limited.json" || fail "a failed export changed the file there"
echo "settings_input: all checks passed"
