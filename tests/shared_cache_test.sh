#!/usr/bin/env bash
# One cache shared by several bench processes, and a sweep whose bench is killed, with the CPU op
# (no GPU needed): each key is tuned by one process (the others wait for its result, and take the
# key over when that process dies or stops making progress); the stored best is the config the
# processes timed; the keys a SIGKILLed parallel warmup finished are in the cache,
# and the next run neither tunes them again nor leaves the dead run's scratch folder behind; a
# check leaves that folder as it is, and a folder whose keys its cache cannot take is kept.
set -euo pipefail
bench=${1:?usage: shared_cache_test.sh BENCH TUNEBENCH_CACHE_CLI}
cache_cli=${2:?usage: shared_cache_test.sh BENCH TUNEBENCH_CACHE_CLI}
source "$(dirname "$0")/lib.sh"
tp4=$here/../runs/shape/dsv4f_decode_tp4.yaml
sources() {  # sources NAME: "cache=N tuned=M" of run NAME (its run directory's configs.json)
  /usr/bin/python3 -c 'import json,sys,collections; c=collections.Counter(e["source"] for e in json.load(open(sys.argv[1]))["configs"]); print(" ".join(f"{k}={v}" for k,v in sorted(c.items())))' \
    "$(ls -d "$work/$1-runs"/* | tail -1)/configs.json"
}
tuned() { sources "$1" | tr ' ' '\n' | sed -n 's/^tuned=//p' | awk '{s += $1} END {print s + 0}'; }
start() {  # start NAME FILTER SHAPES ENV... : bench in the background on $work/shared.sqlite; pid in $pid
  local name=$1 filter=$2 shapes=$3; shift 3
  env TUNEBENCH_CACHE="$work/shared.sqlite" TUNEBENCH_RUNS="$work/$name-runs" "$@" "$bench" --tunebench_shapes="$shapes" \
    --benchmark_filter="$filter" --benchmark_min_time=0.01 >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
}
# Every key has a best with an ok measurement, and every process timed that best: the config a
# run tuned (or waited for) is the one the cache keeps, and the one the next run times.
measured_best() {  # measured_best RUN...: the runs that shared the cache
  TUNEBENCH_CACHE="$work/shared.sqlite" "$cache_cli" export "$work/export.json"
  local records=()
  for r in "$@"; do records+=("$(ls -d "$work/$r-runs"/* | tail -1)/configs.json"); done
  /usr/bin/python3 - "$work/export.json" "${records[@]}" <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))["entries"]
assert entries, "empty cache"
best = {}
for e in entries:
    ok = {m["config"]: m["p50_ns"] for m in e["measurements"] if m["status"] == "ok"}
    b = e["best"]
    assert b, (e["key"], "no best")
    assert b["config"] in ok, (e["key"], b, "best without an ok measurement")
    best[(e["key"]["op"], e["key"]["tuning_key"])] = b["config"]
for path in sys.argv[2:]:
    for c in json.load(open(path))["configs"]:
        k = (c["op"], c["tuning_key"])
        assert best.get(k) == c["config"], (path, k, c["source"], "timed", c["config"], "the cache keeps", best.get(k))
PY
}

# 1. Three processes started together with overlapping filters (8 keys in all, each wanted by two
# or three of them; the CPU op tunes in bench itself): each key is tuned once.
rm -f "$work/shared.sqlite" "$work/shared.sqlite-wal" "$work/shared.sqlite-shm"  # a cache goes with its WAL files
start p1 'cpu_.*/M:(4|8|16)/' "$tp4"; p1=$pid
start p2 'cpu_.*/M:(8|16|32)/' "$tp4"; p2=$pid
start p3 'cpu_.*/M:(4|16|32)/' "$tp4"; p3=$pid
for p in $p1 $p2 $p3; do wait "$p" || fail "a process sharing the cache failed: $(cat "$work"/p?.err)"; done
for p in p1 p2 p3; do
  [ "$(grep -c manual_time "$work/$p.out")" -eq 6 ] && ! grep -q 'ERROR OCCURRED' "$work/$p.out" || fail "$p: $(cat "$work/$p.out")"
done
total=$(( $(tuned p1) + $(tuned p2) + $(tuned p3) ))
[ "$(TUNEBENCH_CACHE="$work/shared.sqlite" "$cache_cli" list | wc -l)" -eq 8 ] || fail "the shared cache lacks keys"
[ "$total" -eq 8 ] || fail "8 keys were tuned $total times by 3 processes sharing the cache: $(sources p1) / $(sources p2) / $(sources p3)"
measured_best p1 p2 p3 || fail "a process timed another config than the cache keeps for its key"
echo "three processes: 8 keys tuned once; $(cat "$work"/p?.err | grep -c 'being tuned by another process') waits"

# 2. The holder dies (SIGKILL) while another process waits for its key: the waiter says it waits,
# then takes the key over and tunes it. The holder hangs on a config (an injected fault) so that
# it holds the key as long as the test needs.
rm -f "$work/shared.sqlite" "$work/shared.sqlite-wal" "$work/shared.sqlite-shm"  # a cache goes with its WAL files
one='cpu_.*/M:1/N:512/'
start holder "$one" "$tiny" TUNEBENCH_FAULT_INJECT=hang-config=BLOCK_N=16,BLOCK_K=128; holder=$pid
for _ in $(seq 100); do
  [ -n "$(/usr/bin/python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select pid from leases").fetchone() or "")' "$work/shared.sqlite" 2>/dev/null)" ] && break
  sleep 0.1
done
start waiter "$one" "$tiny"; waiter=$pid
for _ in $(seq 100); do grep -q 'being tuned by another process' "$work/waiter.err" && break; sleep 0.1; done
grep -q "^bench: cpu_mxfp4_gemm M=1,N=512,K=128 is being tuned by another process (pid $holder on .*); waiting for its result, and taking over any whose process ends without one or stops making progress$" \
  "$work/waiter.err" || fail "no one-line note of the wait: $(cat "$work/waiter.err")"
kill -KILL "$holder"; wait "$holder" 2>/dev/null || true
wait "$waiter" || fail "the waiter failed after its holder died: $(cat "$work/waiter.err")"
grep -q "^bench: taking over cpu_mxfp4_gemm M=1,N=512,K=128 from pid $holder on .*: its process is gone$" "$work/waiter.err" \
  || fail "the waiter did not take over the key of a dead holder: $(cat "$work/waiter.err")"
[ "$(tuned waiter)" -eq 1 ] && ! grep -q 'ERROR OCCURRED' "$work/waiter.out" || fail "the key taken over was not tuned: $(cat "$work/waiter.out")"

# 3. A holder that lives but makes no progress (a kernel that never returns) is not waited for
# forever: after TUNEBENCH_HANG_TIMEOUT seconds without progress its key is taken over.
rm -f "$work/shared.sqlite" "$work/shared.sqlite-wal" "$work/shared.sqlite-shm"  # a cache goes with its WAL files
start stuck "$one" "$tiny" TUNEBENCH_HANG_TIMEOUT=2 TUNEBENCH_FAULT_INJECT=hang-config=BLOCK_N=16,BLOCK_K=128; stuck=$pid
for _ in $(seq 100); do grep -q . "$work/stuck.err" 2>/dev/null && [ -s "$work/shared.sqlite" ] && break; sleep 0.1; done
sleep 0.5
start patient "$one" "$tiny" TUNEBENCH_HANG_TIMEOUT=2; patient=$pid
wait "$patient" || fail "the waiter of a stuck holder failed: $(cat "$work/patient.err")"
kill -KILL "$stuck"; wait "$stuck" 2>/dev/null || true
grep -Eq "^bench: taking over cpu_mxfp4_gemm M=1,N=512,K=128 from pid $stuck on .*: it made no progress for [0-9]+ s$" "$work/patient.err" \
  || fail "a holder without progress was not taken over: $(cat "$work/patient.err")"

# 4. Two parallel warmups started together on one cache: the keys are swept once, by one of
# them or split between them; the other waits for the results.
rm -f "$work/shared.sqlite" "$work/shared.sqlite-wal" "$work/shared.sqlite-shm"  # a cache goes with its WAL files
four='cpu_.*/M:(4|8|16|32)/'
start w1 "$four" "$tp4" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7; w1=$pid
start w2 "$four" "$tp4" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7; w2=$pid
wait "$w1" || fail "warmup 1: $(cat "$work/w1.err")"
wait "$w2" || fail "warmup 2: $(cat "$work/w2.err")"
total=$(( $(tuned w1) + $(tuned w2) ))
[ "$total" -eq 8 ] || fail "two parallel warmups on one cache tuned 8 keys $total times: $(grep '^bench: ' "$work/w1.err" "$work/w2.err")"
measured_best w1 w2 || fail "a process timed another config than the cache keeps for its key (parallel warmups)"
[ -z "$(ls -A "$TMPDIR")" ] || fail "scratch left behind: $(ls -A "$TMPDIR")"

# 5. SIGKILL of the parent during a parallel warmup (its shards die with it): the keys finished
# by then are in the cache; the next run merges what is left in the dead run's scratch folder,
# removes it (one line), takes over the dead run's leases and sweeps only the keys left.
rm -f "$work/shared.sqlite" "$work/shared.sqlite-wal" "$work/shared.sqlite-shm"  # a cache goes with its WAL files
start killed 'cpu_' "$tp4" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7; killed=$pid
for _ in $(seq 600); do [ "$(grep -c 'tunebench-shard: tuned' "$work/killed.err" 2>/dev/null)" -ge 4 ] && break; sleep 0.1; done
kill -KILL "$killed"; wait "$killed" 2>/dev/null || true
sleep 0.5
! pgrep -f -- "--tunebench_shard=.*$TMPDIR" >/dev/null || fail "a shard outlived its killed parent"
finished=$(grep -c 'tunebench-shard: tuned' "$work/killed.err")
[ "$finished" -ge 4 ] || fail "the sweep did not get far enough to test: $(cat "$work/killed.err")"
[ -n "$(ls -A "$TMPDIR")" ] || fail "a SIGKILL left no scratch folder (nothing to test)"
cached=$(TUNEBENCH_CACHE="$work/shared.sqlite" "$cache_cli" list 2>/dev/null | wc -l)
# A doubled key counts twice among the finished sweeps; a key finished in the last moment may be
# in the scratch folder alone.
[ "$cached" -ge $((finished / 2)) ] || fail "$finished keys were finished, $cached reached the cache before the SIGKILL"
TUNEBENCH_CACHE="$work/shared.sqlite" "$cache_cli" list | awk '{print $2}' | sort >"$work/before.keys"
# A check first (what a user tries before a run) merges and removes nothing: it says that the
# folder is there for a run to merge, and leaves it and the cache as the SIGKILL left them.
ls -AR "$TMPDIR" >"$work/scratch.before"
env TUNEBENCH_CACHE="$work/shared.sqlite" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7 "$bench" --tunebench_shapes="$tp4" \
  --benchmark_filter=cpu_ --tunebench_check=1 >"$work/check.out" 2>"$work/check.err" || fail "the check failed: $(cat "$work/check.err")"
grep -Eqx "bench: check passed: 18 benchmarks selected, [0-9]+ keys? to tune \(parallel warmup\); nothing was run or tuned, and 1 scratch folder of sweeps whose bench is gone \(killed\) under $TMPDIR was left for a run to merge" \
  "$work/check.out" || fail "the check does not say that a run would merge the dead run's folder: $(cat "$work/check.out" "$work/check.err")"
[ "$(ls -AR "$TMPDIR")" = "$(cat "$work/scratch.before")" ] || fail "the check changed the dead run's scratch folder: $(cat "$work/check.err")"
[ "$(TUNEBENCH_CACHE="$work/shared.sqlite" "$cache_cli" list | wc -l)" -eq "$cached" ] || fail "the check merged keys into the cache"
start next 'cpu_' "$tp4" PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,7; next=$pid
wait "$next" || fail "the run after the SIGKILL failed: $(cat "$work/next.err")"
[ "$(grep -c 'removed 1 scratch folder of sweeps whose bench is gone (killed) under' "$work/next.err")" -eq 1 ] \
  || fail "no one line about the dead run's scratch folder: $(cat "$work/next.err")"
grep -Eq "under $TMPDIR; ([0-9]+ finished keys? from them merged into the dead run's own cache $work/shared.sqlite|no finished key from them merged)\$" \
  "$work/next.err" || fail "the line about the dead run's scratch folder does not name its cache: $(cat "$work/next.err")"
grep -q "from pid $killed on .*: its process is gone" "$work/next.err" || fail "the dead run's leases were not taken over: $(cat "$work/next.err")"
[ -z "$(ls -A "$TMPDIR")" ] || fail "the dead run's scratch folder is still there: $(ls -A "$TMPDIR")"
merged=$(sed -n "s|.*; \([0-9]*\) finished keys\{0,1\} from them merged into the dead run's own cache $work/shared.sqlite\$|\1|p" "$work/next.err")
left=$(sed -n 's/.*parallel warmup: \([0-9]*\) keys\{0,1\} on 2 shards.*/\1/p' "$work/next.err")
[ -n "$left" ] && [ "$left" -le $((18 - cached)) ] || fail "the next run swept $left keys, $cached of 18 were cached: $(cat "$work/next.err")"
sed -n 's/.*tunebench-shard: tuned cpu_mxfp4_gemm\/dsv4f_decode_tp4\/M:\([0-9]*\)\/N:\([0-9]*\)\/K:\([0-9]*\)\/.*/M=\1,N=\2,K=\3/p' \
  "$work/next.err" | sort -u >"$work/again.keys"
[ -z "$(comm -12 "$work/before.keys" "$work/again.keys")" ] || fail "keys finished before the SIGKILL were tuned again: $(comm -12 "$work/before.keys" "$work/again.keys")"
[ "$(grep -c manual_time "$work/next.out")" -eq 18 ] && ! grep -q 'ERROR OCCURRED' "$work/next.out" || fail "the next run: $(cat "$work/next.out")"
echo "SIGKILL: $finished sweeps finished, $cached keys in the cache, ${merged:-0} merged from the scratch folder, $left swept again"

# 6. A SIGKILLed MPI sweep leaves a tunebench-mpi-* scratch folder per rank, with its child's
# store (child-N.sqlite) of the keys it finished. Fabricated here as a killed rank leaves it: an
# owner file naming a process that is gone and the cache its keys go to, and a store holding a
# tuned key. The next run merges the key into that cache (as a parallel warmup's shard-N.sqlite),
# removes the folder, and does not tune the key again.
rm -f "$work/shared.sqlite" "$work/shared.sqlite-wal" "$work/shared.sqlite-shm"  # a cache goes with its WAL files
one='cpu_.*/M:1/N:256/'
TUNEBENCH_CACHE="$work/child.sqlite" TUNEBENCH_RUNS="$work/child-runs" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter="$one" --benchmark_min_time=0.01 >/dev/null 2>&1 || fail "the run that makes the child's store failed"
sh -c 'exit 0' & gone=$!
wait "$gone"
dead=$TMPDIR/tunebench-mpi-dead01
mkdir "$dead"
for f in "$work"/child.sqlite*; do mv "$f" "$dead/child-0${f#"$work"/child}"; done
mkfifo "$dead/child-0.keys"
printf 'pid=%s\nstarted=1\ninstance=%s/%s\nhost=%s\ncache=%s\n' "$gone" "$(cat /proc/sys/kernel/random/boot_id)" \
  "$(readlink /proc/self/ns/pid)" "$(hostname)" "$work/shared.sqlite" >"$dead/owner"
# A check merges and removes nothing, whichever cache it is given: the dead run's own (opened
# read-only by the check) or another one (the dead run's cache then gets nothing either).
echo '{"tunebench_cache_schema": 3, "entries": []}' >"$work/empty.json"
"$cache_cli" --cache="$work/shared.sqlite" import "$work/empty.json" >/dev/null || fail "cannot make an empty cache"
for c in shared other; do
  TUNEBENCH_CACHE="$work/$c.sqlite" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="$one" --tunebench_check=1 \
    >"$work/check.out" 2>"$work/check.err" || fail "the check on $c.sqlite failed: $(cat "$work/check.err")"
  grep -qx "bench: check passed: 1 benchmark selected, 1 key to tune (in-process sweep); nothing was run or tuned, and 1 scratch folder of sweeps whose bench is gone (killed) under $TMPDIR was left for a run to merge" \
    "$work/check.out" || fail "the check on $c.sqlite: $(cat "$work/check.out" "$work/check.err")"
  [ -s "$dead/child-0.sqlite" ] && [ -s "$dead/owner" ] || fail "the check on $c.sqlite removed the dead run's scratch folder: $(cat "$work/check.err")"
  [ -z "$("$cache_cli" --cache="$work/shared.sqlite" list)" ] || fail "the check on $c.sqlite merged keys into the dead run's cache"
done
start mpi-next "$one" "$tiny"
wait "$pid" || fail "the run after a dead MPI sweep failed: $(cat "$work/mpi-next.err")"
grep -qx "bench: removed 1 scratch folder of sweeps whose bench is gone (killed) under $TMPDIR; 1 finished key from them merged into the dead run's own cache $work/shared.sqlite" \
  "$work/mpi-next.err" || fail "no one line naming the dead run's own cache: $(cat "$work/mpi-next.err")"
[ ! -e "$dead" ] || fail "the dead MPI sweep's scratch folder is still there: $(ls -A "$dead")"
[ "$(sources mpi-next)" = "cache=1" ] || fail "the key a dead MPI rank's child finished was tuned again: $(sources mpi-next)"

# 7. A dead run's folder whose finished keys its cache cannot take (here the cache is gone: a
# folder not there) is kept, in one line saying why, for a later run to merge; once the cache is
# back the next run merges the key and removes the folder. A worker store that cannot be read
# (shard-1.sqlite, not a database) never will be: its keys are tuned again.
TUNEBENCH_CACHE="$work/child.sqlite" TUNEBENCH_RUNS="$work/child-runs" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter="$one" --benchmark_min_time=0.01 >/dev/null 2>&1 || fail "the run that makes the shard's store failed"
dead=$TMPDIR/tunebench-warmup-dead02
mkdir "$dead"
for f in "$work"/child.sqlite*; do mv "$f" "$dead/shard-0${f#"$work"/child}"; done
echo "not a database" >"$dead/shard-1.sqlite"
printf 'pid=%s\nstarted=1\ninstance=%s/%s\nhost=%s\ncache=%s\n' "$gone" "$(cat /proc/sys/kernel/random/boot_id)" \
  "$(readlink /proc/self/ns/pid)" "$(hostname)" "$work/later/cache.sqlite" >"$dead/owner"
start kept "$one" "$tiny"
wait "$pid" || fail "the run beside a dead run's folder it cannot merge failed: $(cat "$work/kept.err")"
grep -qx "bench: kept 1 scratch folder of sweeps whose bench is gone (killed) under $TMPDIR for a later run to merge: its finished keys could not be merged into the dead run's own cache (config cache $work/later/cache.sqlite is missing)" \
  "$work/kept.err" || fail "no one line saying that the dead run's folder is kept and why: $(cat "$work/kept.err")"
[ -s "$dead/shard-0.sqlite" ] && [ -s "$dead/owner" ] || fail "a dead run's folder whose keys were not merged was removed"
mkdir "$work/later"
"$cache_cli" --cache="$work/later/cache.sqlite" import "$work/empty.json" >/dev/null || fail "cannot make the dead run's cache"
start merged "$one" "$tiny"
wait "$pid" || fail "the run that merges the kept folder failed: $(cat "$work/merged.err")"
grep -qx "bench: removed 1 scratch folder of sweeps whose bench is gone (killed) under $TMPDIR; 1 finished key from them merged into the dead run's own cache $work/later/cache.sqlite (1 worker store could not be read: its keys are tuned again when needed)" \
  "$work/merged.err" || fail "no one line saying that the kept folder was merged: $(cat "$work/merged.err")"
[ ! -e "$dead" ] || fail "the merged folder is still there: $(ls -A "$dead")"
[ "$("$cache_cli" --cache="$work/later/cache.sqlite" list | wc -l)" -eq 1 ] || fail "the kept folder's key is not in its cache"
echo "shared_cache: all checks passed"
