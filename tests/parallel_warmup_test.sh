#!/usr/bin/env bash
# The parallel warmup end to end with the CPU op (no GPU needed): device tokens, merging,
# disagreement counting, a crashed shard, SIGINT, SIGHUP and SIGQUIT, and bad PARALLEL_WARMUP_GPUS values.
set -euo pipefail
bench=${1:?usage: parallel_warmup_test.sh BENCH TUNEBENCH_CACHE_CLI}
cache_cli=${2:?usage: parallel_warmup_test.sh BENCH TUNEBENCH_CACHE_CLI}
source "$(dirname "$0")/lib.sh"
run() {  # run NAME ENV... : bench on the tiny set with a fresh cache; stdout, stderr, JSON in $work
  local name=$1; shift
  rm -f "$work/$name.sqlite"
  env TUNEBENCH_CACHE="$work/$name.sqlite" "$@" "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ \
    --benchmark_min_time=0.01 --benchmark_out="$work/$name.json" >"$work/$name.out" 2>"$work/$name.err"
}
keys() { TUNEBENCH_CACHE="$work/$1.sqlite" "$cache_cli" list | wc -l; }
context() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["context"].get(sys.argv[2], ""))' "$work/$1.json" "$2"; }

# Each shard gets exactly the caller's i-th CUDA_VISIBLE_DEVICES entry, as written.
run tokens PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 || fail "2 shards: $(cat "$work/tokens.err")"
grep -qx '\[shard 0\] tunebench-shard: CUDA_VISIBLE_DEVICES=6' "$work/tokens.err" || fail "shard 0 did not get 6: $(cat "$work/tokens.err")"
grep -qx '\[shard 1\] tunebench-shard: CUDA_VISIBLE_DEVICES=7' "$work/tokens.err" || fail "shard 1 did not get 7"
# Without --benchmark_filter, bench's notice of the default filter on a machine without a GPU
# comes once, from bench: a shard runs the keys it is given, not a filter.
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  rm -f "$work/nofilter.sqlite"
  env TUNEBENCH_CACHE="$work/nofilter.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" --tunebench_shapes="$tiny" \
    --benchmark_min_time=0.01 >/dev/null 2>"$work/nofilter.err" || fail "warmup without a filter: $(cat "$work/nofilter.err")"
  grep -q 'parallel warmup: 4 keys on 2 shards' "$work/nofilter.err" || fail "no sweep without a filter: $(cat "$work/nofilter.err")"
  [ "$(grep -c 'no CUDA device' "$work/nofilter.err")" -eq 1 ] && grep -q '^bench: no CUDA device' "$work/nofilter.err" \
    || fail "expected bench's no-GPU notice alone, no shard's: $(cat "$work/nofilter.err")"
fi
[ "$(keys tokens)" -eq 4 ] || fail "merged cache holds $(keys tokens) keys, expected 4"
! grep -q tunebench-shard "$work/tokens.out" || fail "a shard wrote to bench's stdout"
grep -Eq 'parallel warmup: 4 keys on 2 shards in [0-9]+\.[0-9] s, 5 tuned' "$work/tokens.err" || fail "no summary line: $(cat "$work/tokens.err")"
# On a terminal a live line counts the sweeps (a doubled key is swept twice) of the keys.
if command -v script >/dev/null; then
  rm -f "$work/tty.sqlite"
  env TUNEBENCH_CACHE="$work/tty.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 script -qec \
    "'$bench' --tunebench_shapes='$tiny' --benchmark_filter=cpu_ --benchmark_min_time=0.01" /dev/null >"$work/tty.txt" \
    || fail "warmup on a terminal: $(cat "$work/tty.txt")"
  grep -Eq 'parallel warmup: [0-5]/5 sweeps of 4 keys \(shards: [0-3]/[23] [0-3]/[23]\)' "$work/tty.txt" \
    || fail "no live line counting sweeps: $(tr '\r' '\n' <"$work/tty.txt" | grep 'parallel warmup')"
fi
for i in 0 1; do  # per shard: keys, time spent tuning them, time from start to exit
  grep -Eq "parallel warmup shard $i: [0-9]+ keys, [0-9.]+ s tuning in [0-9.]+ s" "$work/tokens.err" ||
    fail "no time line for shard $i: $(cat "$work/tokens.err")"
done
grep -Eq '\[shard [01]\] tunebench-shard: tuned cpu_mxfp4_gemm/.* in [0-9.]+ s$' "$work/tokens.err" || fail "no key time"
sources() {  # sources NAME: the sources configs.json of run NAME gives, sorted and counted
  /usr/bin/python3 -c 'import json,sys,collections; c=collections.Counter(e["source"] for e in json.load(open(sys.argv[1]))["configs"]); print(" ".join(f"{k}={v}" for k,v in sorted(c.items())))' \
    "$(context "$1" tunebench_run_dir)/configs.json"
}
[ "$(sources tokens)" = "tuned=4" ] || fail "keys the warmup tuned in this run are not recorded as tuned: $(sources tokens)"
# (Honest disagreements between shards are possible on a noisy CPU: the count is a number.)
[[ "$(context tokens parallel_warmup_disagreements)" =~ ^[0-9]+$ ]] || fail "no disagreement count in the context"
# The JSON context maps each shard to its entry (and the card's UUID where the shard found one).
[[ "$(context tokens parallel_warmup_shard_devices)" =~ ^0=6(\ \(GPU-[^\)]*\))?,\ 1=7(\ \(GPU-[^\)]*\))?$ ]] \
  || fail "no shard-to-device map in the context: '$(context tokens parallel_warmup_shard_devices)'"
# CUDA enumerates no device from the first negative entry on: -1 (CUDA's "no GPU") and -1,0
# leave none to shard over, 6,-1,7 only one.
for visible in -1 -1,0 6,-1,7; do
  set +e; env TUNEBENCH_CACHE="$work/neg.sqlite" TUNEBENCH_RUNS="$work/neg-runs" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=$visible \
    "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ >/dev/null 2>"$work/neg.err"; rc=$?; set -e
  [ "$rc" -eq 2 ] && grep -q "CUDA enumerates no device from its first negative entry on" "$work/neg.err" \
    && ! grep -q 'tunebench-shard' "$work/neg.err" || fail "CUDA_VISIBLE_DEVICES=$visible: rc $rc $(cat "$work/neg.err")"
done
run uuids PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=GPU-1b2c3d4e-0000-1111-2222-333344445555,MIG-5e6f || fail "uuid tokens"
grep -qx '\[shard 1\] tunebench-shard: CUDA_VISIBLE_DEVICES=MIG-5e6f' "$work/uuids.err" || fail "shard 1 did not get the MIG id"

# Naming the cache with the flag instead of the variable changes nothing: shards still write
# their own files and the parent merges them (the injected disagreement is still seen).
rm -f "$work/flag.sqlite"
env PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_FAULT_INJECT=disagree-shard=1 "$bench" \
  --tunebench_cache="$work/flag.sqlite" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 \
  >/dev/null 2>"$work/flag.err" || fail "warmup with --tunebench_cache failed"
grep -q 'WARNING: 1 key got different winners' "$work/flag.err" || fail "shards wrote into the --tunebench_cache file: $(cat "$work/flag.err")"

# A second run finds every key in the cache: nothing to shard.
env TUNEBENCH_CACHE="$work/tokens.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" \
  --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 >/dev/null 2>"$work/again.err"
grep -q 'parallel warmup: 0 keys' "$work/again.err" || fail "cached keys were tuned again: $(cat "$work/again.err")"

# A replay runs its recorded configs untuned: neither the parallel warmup nor the isolated sweep
# sweeps their keys, only those of the benchmarks the record lacks (here the two of M:4).
env TUNEBENCH_CACHE="$work/rec.sqlite" TUNEBENCH_RUNS="$work/rec-runs" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter='cpu_.*/M:1/' --benchmark_min_time=0.01 >/dev/null 2>"$work/rec.err" || fail "record run: $(cat "$work/rec.err")"
rec=$(ls -d "$work"/rec-runs/*)
run replay PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 REPLAY_FROM="$rec" || fail "replay with the warmup: $(cat "$work/replay.err")"
grep -q 'parallel warmup: 2 keys on 2 shards' "$work/replay.err" || fail "the warmup swept replayed keys: $(cat "$work/replay.err")"
[ "$(keys replay)" -eq 2 ] || fail "the warmup of a replay stored $(keys replay) keys, expected the 2 not replayed"
[ "$(sources replay)" = "replayed=2 tuned=2" ] || fail "replay with the warmup recorded $(sources replay)"
run replayiso CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_ISOLATE_SWEEP=1 REPLAY_FROM="$rec" || fail "isolated replay: $(cat "$work/replayiso.err")"
grep -q 'isolated sweep: 2 keys in a child process' "$work/replayiso.err" || fail "the isolated sweep swept replayed keys: $(cat "$work/replayiso.err")"
[ "$(keys replayiso)" -eq 2 ] || fail "the isolated sweep of a replay stored $(keys replayiso) keys, expected 2"

# A read-only cache (as an unprivileged user: root writes a mode 444 file all the same; skipped
# as root without setpriv). Keys to sweep: refused in one line before any shard starts, with
# no run directory and no scratch folder left. Nothing to sweep: the cache answers, warned once.
as_user=()
if [ "$(id -u)" -ne 0 ]; then
  as_user=(env)
elif command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups env)
fi
if [ ${#as_user[@]} -eq 0 ]; then
  echo "parallel_warmup: read-only cache checks skipped (root, and setpriv cannot drop to nobody)"
else
  chmod 755 "$work"
  mkdir -m 777 "$work/ro" "$work/ro-runs" "$work/ro-tmp" "$work/ro-kernels"
  cp "$work/rec.sqlite" "$work/ro/ro.sqlite" && chmod 444 "$work/ro/ro.sqlite"
  ro_bench() {  # ro_bench NAME FILTER ENV... : bench as the unprivileged user on the read-only cache
    local name=$1 filter=$2; shift 2
    "${as_user[@]}" HOME="$work/ro-tmp" TMPDIR="$work/ro-tmp" TUNEBENCH_RUNS="$work/ro-runs" \
      TUNEBENCH_KERNEL_CACHE="$work/ro-kernels" TUNEBENCH_CACHE="$work/ro/ro.sqlite" "$@" "$bench" \
      --tunebench_shapes="$tiny" --benchmark_filter="$filter" --benchmark_min_time=0.01 >"$work/$name.out" 2>"$work/$name.err"
  }
  set +e; ro_bench ro-sweep cpu_ PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7; rc=$?; set -e
  [ "$rc" -eq 2 ] || fail "warmup on a read-only cache exited $rc, expected 2: $(cat "$work/ro-sweep.err")"
  [ "$(grep -c . "$work/ro-sweep.err")" -eq 1 ] && grep -q "config cache $work/ro/ro.sqlite is read-only, and 2 keys need tuning that the parallel warmup could not store: point TUNEBENCH_CACHE" \
    "$work/ro-sweep.err" || fail "read-only cache with keys to sweep: expected one line: $(cat "$work/ro-sweep.err")"
  [ -z "$(find "$work/ro-runs" "$work/ro-tmp" -mindepth 1)" ] || fail "a refused warmup left files: $(ls -R "$work/ro-runs" "$work/ro-tmp")"
  set +e; ro_bench ro-iso cpu_ TUNEBENCH_ISOLATE_SWEEP=1 CUDA_VISIBLE_DEVICES=6,7; rc=$?; set -e
  [ "$rc" -eq 2 ] && grep -q "2 keys need tuning that the isolated sweep could not store" "$work/ro-iso.err" \
    || fail "isolated sweep on a read-only cache: rc $rc $(cat "$work/ro-iso.err")"
  # Without a sweep in a child: keys the cache lacks are not tuned (the result could not be
  # stored); each such benchmark is an error naming the cache and the key, the others run.
  ro_bench ro-serial cpu_ TUNEBENCH_ISOLATE_SWEEP=0 || fail "serial run on a read-only cache: $(cat "$work/ro-serial.err")"
  [ "$(grep -c "ERROR OCCURRED: 'config cache $work/ro/ro.sqlite is read-only: cpu_mxfp4_gemm M=4,N=[0-9]*,K=[0-9]* is not in it and cannot be tuned and stored; point TUNEBENCH_CACHE or --tunebench_cache at a writable file'$" \
    "$work/ro-serial.out")" -eq 2 ] && [ "$(grep -c 'manual_time .*BLOCK_N=' "$work/ro-serial.out")" -eq 2 ] \
    || fail "serial run on a read-only cache: $(cat "$work/ro-serial.out")"
  # tunebench-cache's writing commands: one line naming the file, nothing changed.
  for cmd in "evict cpu_mxfp4_gemm M=1,N=256,K=512" "import $work/ro-tmp/export.json"; do
    "${as_user[@]}" "$cache_cli" --cache="$work/ro/ro.sqlite" export "$work/ro-tmp/export.json"
    set +e; "${as_user[@]}" "$cache_cli" --cache="$work/ro/ro.sqlite" $cmd >/dev/null 2>"$work/ro-cli.err"; rc=$?; set -e
    [ "$rc" -eq 2 ] && [ "$(grep -c . "$work/ro-cli.err")" -eq 1 ] && \
      grep -q "^tunebench-cache: ${cmd%% *}: config cache $work/ro/ro.sqlite is read-only (this user cannot write the file or its folder): nothing" \
      "$work/ro-cli.err" || fail "tunebench-cache $cmd on a read-only cache: rc $rc $(cat "$work/ro-cli.err")"
  done
  rm -f "$work/ro-tmp/export.json"
  ro_bench ro-cached 'cpu_.*/M:1/' PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 \
    || fail "warmup on a read-only cache that answers every key: $(cat "$work/ro-cached.err")"
  [ "$(grep -c 'is read-only: keys it does not answer cannot be tuned' "$work/ro-cached.err")" -eq 1 ] \
    || fail "no single read-only warning: $(cat "$work/ro-cached.err")"
  grep -q 'parallel warmup: 0 keys' "$work/ro-cached.err" || fail "cached keys swept: $(cat "$work/ro-cached.err")"
  [ "$(grep -c manual_time "$work/ro-cached.out")" -eq 2 ] && ! grep -q 'ERROR OCCURRED' "$work/ro-cached.out" \
    || fail "a read-only cache did not answer its keys: $(cat "$work/ro-cached.out")"
  # In a read-only folder too (no -shm can be made beside the WAL file), with or without a sweep.
  mkdir "$work/rodir" && cp "$work/rec.sqlite" "$work/rodir/ro.sqlite" && chmod 444 "$work/rodir/ro.sqlite" && chmod 555 "$work/rodir"
  for n in 1 2; do
    ro_bench ro-dir$n 'cpu_.*/M:1/' TUNEBENCH_CACHE="$work/rodir/ro.sqlite" PARALLEL_WARMUP_GPUS=$n CUDA_VISIBLE_DEVICES=6,7 \
      || fail "a read-only cache in a read-only folder (N=$n): $(cat "$work/ro-dir$n.err")"
    [ "$(grep -c 'is read-only: keys it does not answer cannot be tuned' "$work/ro-dir$n.err")" -eq 1 ] \
      || fail "no single read-only warning (read-only folder, N=$n): $(cat "$work/ro-dir$n.err")"
    [ "$(grep -c manual_time "$work/ro-dir$n.out")" -eq 2 ] && ! grep -q 'ERROR OCCURRED' "$work/ro-dir$n.out" \
      || fail "a read-only cache in a read-only folder did not answer its keys (N=$n): $(cat "$work/ro-dir$n.out")"
  done
fi

# An injected disagreement is counted, reported and in the JSON context.
run disagree PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_FAULT_INJECT=disagree-shard=1 \
  || fail "disagreement run: $(cat "$work/disagree.err")"
[ "$(context disagree parallel_warmup_disagreements)" = 1 ] || fail "disagreement not counted: $(cat "$work/disagree.err")"
grep -q 'WARNING: 1 key got different winners on two shards' "$work/disagree.err" || fail "no disagreement warning"
! grep -q 're-timing the' "$work/disagree.err" || fail "re-timing the finalists failed: $(cat "$work/disagree.err")"
# The doubled keys' finalists (both shards') were re-timed by bench itself: the stored best obeys
# the tie rule among them (the earliest in the op's config order within 1% of the fastest), and
# no config the cache measured for the key is faster than it by more than the 1% band.
grep -Eq 'parallel warmup: [1-9][0-9]* keys? re-timed by bench itself \(finalists interleaved, 0 on the measurement GPU\), [0-9]+ winners? changed' \
  "$work/disagree.err" || fail "no re-timing line: $(cat "$work/disagree.err")"
TUNEBENCH_CACHE="$work/disagree.sqlite" "$cache_cli" export "$work/disagree-export.json"
/usr/bin/python3 - "$(context disagree tunebench_run_dir)/sweep.jsonl" "$work/disagree-export.json" <<'PY' || fail "tie rule or tie band broken"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
entries = json.load(open(sys.argv[2]))["entries"]
last = {}
for r in records:
    if r["record"] == "retimed":
        last[(r["op"], r["tuning_key"])] = r
assert last, "no re-timing in sweep.jsonl"
assert any(r["record"] == "tuned" and r["worker"] == "shard 1" for r in records), "no shard records in sweep.jsonl"
for (op, tk), r in last.items():
    e = next(e for e in entries if e["key"]["op"] == op and e["key"]["tuning_key"] == tk)
    p50 = {m["config"]: m["p50_ns"] for m in e["measurements"] if m["status"] == "ok"}
    finals = r["finalists"]
    assert all(c in p50 for c in finals), (finals, p50)
    fastest = min(p50[c] for c in finals)
    expected = next(c for c in finals if p50[c] <= fastest * 1.01)
    best = e["best"]["config"]
    assert best == expected == r["winner"], (best, expected, r)
    assert all(v * 1.01 >= p50[best] for v in p50.values()), (best, p50)
    print(f"{op} {tk}: {len(finals)} finalists re-timed, best {best}")
PY

# A shard that dies: reported, and its keys still get tuned (serially).
run crash PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_FAULT_INJECT=abort-shard=0 \
  || fail "run with a crashing shard failed: $(cat "$work/crash.err")"
grep -q 'WARNING: shard 0 (CUDA_VISIBLE_DEVICES=6) killed by signal 6' "$work/crash.err" || fail "crash not reported: $(cat "$work/crash.err")"
[ "$(keys crash)" -eq 4 ] || fail "the crashed shard's keys were not tuned: $(keys crash)"
[ "$(grep -c manual_time "$work/crash.out")" -eq 4 ] || fail "not every benchmark ran"

# The per-shard lines count every round: shard 0 aborts after a key in each round, so its keys
# of round 2 are in its line, and the lines add up to the sweeps finished.
grep -q 'parallel warmup round 2' "$work/crash.err" || fail "no second round after the crash: $(cat "$work/crash.err")"
total=$(sed -n 's/.*parallel warmup: 4 keys on 2 shards in [0-9.]* s, \([0-9]*\) tuned.*/\1/p' "$work/crash.err")
per_shard=$(sed -n 's/.*parallel warmup shard [01]: \([0-9]*\) keys\{0,1\}, .*/\1/p' "$work/crash.err" | awk '{s += $1} END {print s + 0}')
[ -n "$total" ] && [ "$per_shard" -eq "$total" ] || fail "per-shard keys ($per_shard) do not add up to $total tuned: $(cat "$work/crash.err")"
# Counts of one read as one: a key, a shard, a child process.
single() {  # single NAME: fail when NAME.err counts one of something in the plural
  ! grep -Eq '(^|[^0-9.])1 (keys|shards|child processes|devices|disagreements|configs)([^a-z]|$)' "$work/$1.err" \
    || fail "a plural for a count of one: $(grep -E '(^|[^0-9.])1 (keys|shards|child processes|devices|disagreements|configs)' "$work/$1.err")"
}
run_only() {  # run_only NAME FILTER ENV... : like run, on the benchmarks FILTER selects
  local name=$1 filter=$2; shift 2
  rm -f "$work/$name.sqlite"
  env TUNEBENCH_CACHE="$work/$name.sqlite" "$@" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="$filter" \
    --benchmark_min_time=0.01 >"$work/$name.out" 2>"$work/$name.err"
}
run_only crash1 'cpu_.*/M:1/' PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_FAULT_INJECT=abort-shard=0 \
  || fail "run with a crashing shard and 2 keys: $(cat "$work/crash1.err")"
grep -Eq 'parallel warmup: 2 keys on 2 shards in [0-9.]+ s, 2 tuned, 1 shard failed, 0 disagreements$' "$work/crash1.err" \
  && grep -Eq 'parallel warmup shard 0: 1 key, ' "$work/crash1.err" || fail "summary of one failed shard: $(cat "$work/crash1.err")"
single crash1
run_only crash1iso 'cpu_.*/M:1/N:256/' TUNEBENCH_ISOLATE_SWEEP=1 CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_FAULT_INJECT=abort-shard=0 \
  || fail "isolated sweep of one key with a crash: $(cat "$work/crash1iso.err")"
grep -Eq 'isolated sweep: 1 key in a child process in [0-9.]+ s, 1 tuned, 1 child process failed$' "$work/crash1iso.err" \
  || fail "summary of one failed child: $(cat "$work/crash1iso.err")"
single crash1iso

# A config that leaves a sticky CUDA error ends its shard; fresh shards in further rounds skip
# it, every key gets tuned, and no benchmark ever runs it.
run sticky PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_FAULT_INJECT=sticky-config=BLOCK_N=16,BLOCK_K=128 \
  || fail "sticky run failed: $(cat "$work/sticky.err")"
grep -q 'parallel warmup round 2' "$work/sticky.err" || fail "no further round after a sticky error: $(cat "$work/sticky.err")"
[ "$(keys sticky)" -eq 4 ] || fail "not every key was tuned after sticky errors: $(keys sticky)"
[ "$(grep -c manual_time "$work/sticky.out")" -eq 4 ] && ! grep -q 'ERROR OCCURRED' "$work/sticky.out" \
  || fail "a benchmark failed after sticky errors in the sweep: $(cat "$work/sticky.out")"
TUNEBENCH_CACHE="$work/sticky.sqlite" "$cache_cli" show cpu_mxfp4_gemm M=1,N=512,K=128 \
  | grep -q 'launch_failed  BLOCK_N=16,BLOCK_K=128' || fail "the sticky config was not recorded as failed"

# Without the parallel warmup, TUNEBENCH_ISOLATE_SWEEP=1 (the default "auto" does this for GPU
# keys) sweeps in one child process on the first device: a sticky error costs a child, and
# every key still gets tuned while the failing config is recorded.
run isolated CUDA_VISIBLE_DEVICES=6,7 TUNEBENCH_ISOLATE_SWEEP=1 TUNEBENCH_FAULT_INJECT=sticky-config=BLOCK_N=16,BLOCK_K=128 \
  || fail "isolated sweep failed: $(cat "$work/isolated.err")"
grep -q 'isolated sweep: 4 keys in a child process' "$work/isolated.err" || fail "no isolated sweep: $(cat "$work/isolated.err")"
grep -qx '\[shard 0\] tunebench-shard: CUDA_VISIBLE_DEVICES=6' "$work/isolated.err" || fail "the child was not on the first device"
grep -q 'isolated sweep round 2' "$work/isolated.err" || fail "no further round after a sticky error"
[ "$(sources isolated)" = "tuned=4" ] || fail "keys the isolated sweep tuned are not recorded as tuned: $(sources isolated)"
[ "$(keys isolated)" -eq 4 ] || fail "not every key was tuned in the isolated sweep: $(keys isolated)"
[ "$(grep -c manual_time "$work/isolated.out")" -eq 4 ] && ! grep -q 'ERROR OCCURRED' "$work/isolated.out" \
  || fail "a benchmark failed after the isolated sweep: $(cat "$work/isolated.out")"
TUNEBENCH_CACHE="$work/isolated.sqlite" "$cache_cli" show cpu_mxfp4_gemm M=1,N=512,K=128 \
  | grep -q 'launch_failed  BLOCK_N=16,BLOCK_K=128' || fail "the sticky config was not recorded as failed"
# USE_FLAGTUNE=1: a best left by a plain sweep does not answer an exhaustive search, so the keys
# go to the child; once the child has swept the expanded space, a rerun finds nothing to sweep.
again() {  # again NAME ENV... : bench on the tiny set with the existing cache of NAME
  local name=$1; shift
  env TUNEBENCH_CACHE="$work/$name.sqlite" "$@" "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ \
    --benchmark_min_time=0.01 >"$work/$name.again.out" 2>"$work/$name.again.err"
}
again isolated TUNEBENCH_ISOLATE_SWEEP=1 USE_FLAGTUNE=1 || fail "exhaustive isolated sweep: $(cat "$work/isolated.again.err")"
grep -q 'isolated sweep: 4 keys in a child process' "$work/isolated.again.err" \
  || fail "plain bests answered an exhaustive search: $(cat "$work/isolated.again.err")"
again isolated TUNEBENCH_ISOLATE_SWEEP=1 USE_FLAGTUNE=1 || fail "exhaustive rerun: $(cat "$work/isolated.again.err")"
! grep -q 'isolated sweep' "$work/isolated.again.err" || fail "a finished exhaustive search was swept again"
[ "$(grep -c manual_time "$work/isolated.again.out")" -eq 4 ] || fail "exhaustive rerun: $(cat "$work/isolated.again.out")"
# A config that never returns: the watchdog kills the child after TUNEBENCH_HANG_TIMEOUT seconds
# without progress, names shard, key and config, records the config as timeout, and fresh
# children finish the keys without it.
run hang CUDA_VISIBLE_DEVICES=6,7 PARALLEL_WARMUP_GPUS=2 TUNEBENCH_HANG_TIMEOUT=2 \
  TUNEBENCH_FAULT_INJECT=hang-config=BLOCK_N=16,BLOCK_K=128 || fail "run with a hanging config failed: $(cat "$work/hang.err")"
grep -Eq 'WARNING: shard [01] \(CUDA_VISIBLE_DEVICES=[67]\) hung on cpu_mxfp4_gemm/[^ ]* \[BLOCK_N=16,BLOCK_K=128\] for 2 s' \
  "$work/hang.err" || fail "the hang was not reported with shard, key and config: $(cat "$work/hang.err")"
[ "$(keys hang)" -eq 4 ] || fail "not every key was tuned after hangs: $(keys hang)"
[ "$(grep -c manual_time "$work/hang.out")" -eq 4 ] && ! grep -q 'ERROR OCCURRED' "$work/hang.out" \
  || fail "a benchmark failed after hangs in the sweep: $(cat "$work/hang.out")"
TUNEBENCH_CACHE="$work/hang.sqlite" "$cache_cli" show cpu_mxfp4_gemm M=1,N=512,K=128 \
  | grep -q 'timeout  BLOCK_N=16,BLOCK_K=128' || fail "the hanging config was not recorded as timeout"
pgrep -f "tunebench_shard=.*$work" >/dev/null && fail "a hung child outlived the sweep"
set +e; env TUNEBENCH_HANG_TIMEOUT=soon PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_ >/dev/null 2>"$work/badhang.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q "TUNEBENCH_HANG_TIMEOUT='soon': expected seconds" "$work/badhang.err" || fail "bad TUNEBENCH_HANG_TIMEOUT: rc $rc"

# auto (the default) keeps host-only sweeps in-process; 0 always does; a bad value is refused.
run auto || fail "plain run failed"
! grep -q 'isolated sweep' "$work/auto.err" || fail "a host-only sweep was isolated by default"
env TUNEBENCH_ISOLATE_SWEEP=yes "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/bad.err" && fail "bad TUNEBENCH_ISOLATE_SWEEP accepted"
grep -qx "bench: TUNEBENCH_ISOLATE_SWEEP='yes': expected auto, 0 or 1" "$work/bad.err" || fail "bad value message: $(cat "$work/bad.err")"

# scripts/warmup_scaling.sh: a sweep per N, the table, and the replay check through compare.py.
OUT="$work/scaling" CUDA_VISIBLE_DEVICES=6,7 BENCH="$bench" "$here/../scripts/warmup_scaling.sh" "1 2" \
  --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 >"$work/scaling.txt" 2>"$work/scaling.err" \
  || fail "warmup_scaling.sh failed: $(cat "$work/scaling.err")"
grep -Eq '^ +1 +4 +[0-9.]+ +1\.00 ' "$work/scaling.txt" || fail "no N=1 row: $(cat "$work/scaling.txt")"
grep -Eq '^ +2 +4 +[0-9.]+ +[0-9.]+ +2 +[0-9]+ ' "$work/scaling.txt" || fail "no N=2 row: $(cat "$work/scaling.txt")"
grep -q 'OVERALL_GEOMEAN' "$work/scaling.txt" || fail "no compare.py verdict: $(cat "$work/scaling.txt")"
grep -Eq '^  N=2: parallel warmup shard 1: [0-9]+ keys' "$work/scaling.txt" || fail "no shard lines: $(cat "$work/scaling.txt")"
set +e; "$here/../scripts/warmup_scaling.sh" "2 4" >/dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 2 ] || fail "warmup_scaling.sh accepted counts not starting at 1"

# SIGINT during the sweep: children terminated and reaped, exit 130, the cache sound.
rm -f "$work/int.sqlite"
set -m
env TUNEBENCH_CACHE="$work/int.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" \
  --benchmark_filter='cpu_.*decode_ep' --benchmark_min_time=0.01 --benchmark_out="$work/int.json" >/dev/null 2>"$work/int.err" &
pid=$!
set +m
for _ in $(seq 50); do grep -q 'tunebench-shard: CUDA' "$work/int.err" 2>/dev/null && break; sleep 0.1; done
sleep 1
kill -INT "$pid"
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 130 ] || fail "interrupted bench exited $rc, expected 130: $(cat "$work/int.err")"
sleep 0.5
# (Shards repeat the parent's arguments, so $work/int.json singles out this run's.)
! pgrep -f -- "$work/int.json.*--tunebench_shard=" >/dev/null || fail "a shard outlived the parent: $(pgrep -af -- --tunebench_shard=)"
/usr/bin/python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0]; sys.exit(r != "ok")' \
  "$work/int.sqlite" || fail "cache after SIGINT fails integrity_check"
[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'tunebench-warmup-*')" ] || fail "warmup scratch folder left behind: $(ls -A "$TMPDIR")"

# Host (CPU) ops share the host's cores: shards time them one at a time, never concurrently, so
# the seconds the shards spent tuning (from the per-shard lines) fit in the sweep's wall time.
# Concurrent shards on shared cores spend about twice the wall time between them.
rm -f "$work/host.sqlite"
env TUNEBENCH_CACHE="$work/host.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" \
  --tunebench_shapes="$here/../runs/shape/dsv4f_decode_tp4.yaml" --benchmark_filter='cpu_.*/M:(4|8|16|32)/' \
  --benchmark_min_time=0.01 >/dev/null 2>"$work/host.err" || fail "host-op warmup: $(cat "$work/host.err")"
wall=$(sed -n 's/.*parallel warmup: 8 keys on 2 shards in \([0-9.]*\) s, .*/\1/p' "$work/host.err")
tuning=$(sed -n 's/.*parallel warmup shard [01]: [0-9]* keys\{0,1\}, \([0-9.]*\) s tuning in .*/\1/p' "$work/host.err" | awk '{s += $1} END {print s + 0}')
[ -n "$wall" ] && awk -v t="$tuning" -v w="$wall" 'BEGIN {exit !(t <= w + 0.2)}' \
  || fail "shards timed host ops concurrently: ${tuning} s of tuning in a ${wall} s sweep: $(grep '^bench:' "$work/host.err")"
[ "$(keys host)" -eq 8 ] || fail "host-op warmup stored $(keys host) keys, expected 8"

# SIGHUP (a closed terminal, an ssh drop) and SIGQUIT end the sweep like SIGTERM: children
# ended and reaped, the scratch folder under TMPDIR removed, finished keys kept, the keys'
# leases given up, and the signal re-raised (exit status 128 + the signal).
for sig in HUP QUIT; do
  rm -rf "$work/$sig.sqlite" "$work/$sig-tmp" && mkdir "$work/$sig-tmp"
  ( ulimit -c 0; exec env TMPDIR="$work/$sig-tmp" TUNEBENCH_CACHE="$work/$sig.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 \
    "$bench" --tunebench_shapes="$here/../runs/shape/dsv4f_decode_tp4.yaml" --benchmark_filter=cpu_ --benchmark_min_time=0.01 \
    --benchmark_out="$work/$sig.json" >/dev/null 2>"$work/$sig.err" ) &
  pid=$!
  for _ in $(seq 50); do [ "$(grep -c 'tunebench-shard: CUDA' "$work/$sig.err" 2>/dev/null)" -eq 2 ] && break; sleep 0.1; done
  sleep 1
  kill -"$sig" "$pid"
  set +e; wait "$pid"; rc=$?; set -e
  [ "$rc" -eq $((128 + $(kill -l "$sig"))) ] || fail "bench on SIG$sig exited $rc: $(cat "$work/$sig.err")"
  sleep 0.5
  ! pgrep -f -- "$work/$sig.json.*--tunebench_shard=" >/dev/null || fail "a shard outlived SIG$sig: $(pgrep -af -- --tunebench_shard=)"
  [ -z "$(ls -A "$work/$sig-tmp")" ] || fail "SIG$sig left the scratch folder: $(ls -R "$work/$sig-tmp")"
  kept=$(sed -n 's/.*interrupted during the autotune sweep; \([0-9]*\) finished keys\{0,1\} kept; the run directory .* stays .running.$/\1/p' "$work/$sig.err")
  [ -n "$kept" ] && [ "$(keys "$sig")" -le "$kept" ] || fail "SIG$sig: finished keys not reported: $(cat "$work/$sig.err")"
  # No lease outlives the run: a later one would find keys held by a process that is gone.
  leases=$(/usr/bin/python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from leases").fetchone()[0])' "$work/$sig.sqlite")
  [ "$leases" -eq 0 ] || fail "SIG$sig left $leases key leases in the cache"
done

# A SIGINT that was ignored when bench started (a background job of a non-interactive shell,
# nohup) stays ignored: the sweep, interrupted over and over, finishes as if nothing happened.
rm -f "$work/ign.sqlite"
( trap '' INT; exec env TUNEBENCH_CACHE="$work/ign.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" \
  --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 >"$work/ign.out" 2>"$work/ign.err" ) &
pid=$!
for _ in $(seq 100); do [ -e "$work/ign.err" ] && break; sleep 0.05; done  # the trap is set before the redirection
while kill -INT "$pid" 2>/dev/null; do sleep 0.05; done
set +e; wait "$pid"; rc=$?; set -e
[ "$rc" -eq 0 ] || fail "bench with SIGINT ignored exited $rc: $(cat "$work/ign.err")"
! grep -q 'interrupted' "$work/ign.err" && grep -Eq 'parallel warmup: 4 keys on 2 shards in [0-9.]+ s, [45] tuned, 0 shards failed' "$work/ign.err" \
  || fail "an ignored SIGINT stopped the sweep: $(cat "$work/ign.err")"
[ "$(grep -c manual_time "$work/ign.out")" -eq 4 ] || fail "bench with SIGINT ignored: $(cat "$work/ign.out")"

# Values of PARALLEL_WARMUP_GPUS: 1 and empty are a silent no-op; bad ones and N > devices stop.
run one PARALLEL_WARMUP_GPUS=1 CUDA_VISIBLE_DEVICES=6,7 || fail "N=1"
! grep -q 'parallel warmup' "$work/one.err" || fail "N=1 was not a no-op"
run empty PARALLEL_WARMUP_GPUS= || fail "empty N"
for bad in 0 -2 two 1.5 02 +2 10000; do
  set +e; PARALLEL_WARMUP_GPUS=$bad "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/bad.err"; rc=$?; set -e
  [ "$rc" -eq 2 ] && grep -q "PARALLEL_WARMUP_GPUS='$bad'" "$work/bad.err" || fail "PARALLEL_WARMUP_GPUS=$bad: rc $rc $(cat "$work/bad.err")"
done
set +e; env TUNEBENCH_CACHE="$work/n.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,6 "$bench" \
  --tunebench_shapes="$tiny" --benchmark_filter=cpu_ >/dev/null 2>"$work/dup.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q "lists '6' twice" "$work/dup.err" || fail "a repeated device token was accepted: $(cat "$work/dup.err")"
# Shards work in a scratch folder under TMPDIR: one that is missing or not a folder is named.
set +e; env TMPDIR="$work/nonexistent" TUNEBENCH_CACHE="$work/tmpdir.sqlite" TUNEBENCH_RUNS="$work/tmpdir-runs" PARALLEL_WARMUP_GPUS=2 \
  CUDA_VISIBLE_DEVICES=6,7 "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ >/dev/null 2>"$work/tmpdir.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && [ "$(grep -c . "$work/tmpdir.err")" -eq 1 ] &&
  grep -q "bench: TMPDIR='$work/nonexistent': .*expected an existing folder for the sweep's scratch files" "$work/tmpdir.err" \
  || fail "a missing TMPDIR: rc $rc $(cat "$work/tmpdir.err")"
[ -z "$(ls -A "$work/tmpdir-runs" 2>/dev/null)" ] || fail "a missing TMPDIR left a run directory"
# A TMPDIR that is set but empty means /tmp, as for every program that reads it.
run emptytmp TMPDIR= PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 || fail "an empty TMPDIR was refused: $(cat "$work/emptytmp.err")"
grep -q 'parallel warmup: 4 keys on 2 shards' "$work/emptytmp.err" || fail "no sweep with an empty TMPDIR: $(cat "$work/emptytmp.err")"
# Only the entries given to shards must differ: a repeat past the N-th is not used.
run dup3 PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7,6 || fail "a repeat past the shards' entries was refused: $(cat "$work/dup3.err")"
unset_err=$(env -u CUDA_VISIBLE_DEVICES TUNEBENCH_CACHE="$work/n.sqlite" PARALLEL_WARMUP_GPUS=2 "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_ 2>&1 >/dev/null) && fail "N=2 with no device accepted"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  [[ "$unset_err" == *"no CUDA device is visible (CUDA_VISIBLE_DEVICES is unset"* ]] || fail "no device, variable unset: $unset_err"
fi
set +e; env TUNEBENCH_CACHE="$work/n.sqlite" TUNEBENCH_RUNS="$work/n-runs" PARALLEL_WARMUP_GPUS=3 CUDA_VISIBLE_DEVICES=6,7 "$bench" \
  --tunebench_shapes="$tiny" --benchmark_filter=cpu_ >/dev/null 2>"$work/n.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'PARALLEL_WARMUP_GPUS=3 but only 2 devices are visible' "$work/n.err" || fail "N > tokens: rc $rc $(cat "$work/n.err")"
! grep -q 'tunebench-shard' "$work/n.err" || fail "a shard started although N > tokens"
[ -z "$(ls -A "$work/n-runs" 2>/dev/null)" ] || fail "a refused run left a run directory: $(ls -R "$work/n-runs")"
# A cache locked by another process past the store's retries (about 60 s) loses no sweep: the
# shards' winners are kept for the run, said in one line, and the benchmarks run them.
rm -f "$work/locked.sqlite"
TUNEBENCH_CACHE="$work/locked.sqlite" TUNEBENCH_RUNS="$work/locked-runs" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter='cpu_.*M:1/N:256/' --benchmark_min_time=0.01 >/dev/null 2>&1 || fail "could not make the cache to lock"
/usr/bin/python3 - "$work/locked.sqlite" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
time.sleep(80)
c.execute("ROLLBACK")
PY
holder=$!
sleep 1
set +e; env TUNEBENCH_CACHE="$work/locked.sqlite" TUNEBENCH_RUNS="$work/locked-runs" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 \
  "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 --benchmark_out="$work/locked.json" \
  >/dev/null 2>"$work/locked.err"; rc=$?; set -e
kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true
[ "$rc" -eq 0 ] || fail "a locked cache ended the run ($rc): $(cat "$work/locked.err")"
[ "$(grep -c "the sweep's results were not stored in .*locked.sqlite.*3 keys kept for this run only" "$work/locked.err")" -eq 1 ] \
  || fail "no one-line notice of the keys kept: $(cat "$work/locked.err")"
/usr/bin/python3 -c '
import json, sys
b = [x for x in json.load(open(sys.argv[1]))["benchmarks"] if x.get("run_type") == "iteration"]
assert len(b) == 4 and not any(x.get("error_occurred") for x in b), b
' "$work/locked.json" || fail "the benchmarks of a locked cache did not run their tuned configs"
echo "parallel_warmup: all checks passed"
