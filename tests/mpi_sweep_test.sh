#!/usr/bin/env bash
# The MPI sweep end to end with the CPU op (docs/multi-node.md): 4 ranks under mpirun on this
# host tune every key once, give the benchmarks and JSON names of a one-process run on rank 0's
# stdout alone, redo a killed rank's keys, leave no process after SIGINT to mpirun, and refuse
# more ranks per host than GPU entries on every rank. Skipped where bench was built without MPI.
set -uo pipefail
bench=$1
tool=$2
mpirun=$(command -v mpirun) || { echo "SKIP: no mpirun"; exit 0; }
if ! grep -q "TUNEBENCH_WITH_MPI:BOOL=ON" "$(dirname "$bench")/../CMakeCache.txt" 2>/dev/null; then
  echo "SKIP: bench built without MPI"
  exit 0
fi
source "$(dirname "$0")/lib.sh"

# What a container and root need of Open MPI; the oversubscription lets 4 ranks share 2 cores.
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
[[ $(id -u) -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset CUDA_VISIBLE_DEVICES
args=(--tunebench_shapes="$here/data/dsv4f_decode_tiny.yaml" --benchmark_filter='^cpu_mxfp4_gemm/'
      --benchmark_min_time=0.01 --tunebench_runs="$work/runs")
names() { /usr/bin/python3 -c 'import json,sys; print("\n".join(sorted(b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"] if not b.get("error_occurred"))))' "$1"; }

# One process: the reference names.
TUNEBENCH_CACHE=$work/one.sqlite "$bench" "${args[@]}" --benchmark_out="$work/one.json" >"$work/one.out" 2>"$work/one.err" ||
  fail "one-process run: $(tail -3 "$work/one.err")"
keys=$(names "$work/one.json" | wc -l)
((keys == 4)) || fail "one-process run: expected 4 benchmarks, got $keys"

# 4 ranks: every key tuned once, on rank 0's stdout once, the same names.
TUNEBENCH_CACHE=$work/mpi.sqlite timeout 300 "$mpirun" -np 4 --enable-recovery "$bench" "${args[@]}" \
  --benchmark_out="$work/mpi.json" >"$work/mpi.out" 2>"$work/mpi.err" || fail "mpirun -np 4: $(grep bench: "$work/mpi.err" | tail -3)"
diff <(names "$work/one.json") <(names "$work/mpi.json") || fail "the MPI run's names differ from the one-process run's"
for n in $(names "$work/one.json"); do
  c=$(grep -c -F "${n}" "$work/mpi.out")
  [[ $c == 1 ]] || fail "$n is $c times on stdout, expected once (rank 0's alone)"
done
! grep -q $'\x1b\\[' "$work/mpi.out" || fail "colour codes in the redirected stdout of an MPI run"
grep -q "MPI sweep: 4 keys on 4 ranks" "$work/mpi.err" || fail "no MPI sweep summary: $(grep bench: "$work/mpi.err")"
sweep=$(ls "$work"/runs/*/sweep.jsonl | tail -1)
tuned=$(grep -c '"record":"tuned"' "$sweep")
[[ $tuned == 4 ]] || fail "expected 4 keys tuned once each in $sweep, got $tuned tuned records"
[[ $(grep '"record":"tuned"' "$sweep" | grep -o '"key":"[^"]*"' | sort -u | wc -l) == 4 ]] || fail "a key was tuned twice"
grep -q '"worker":"rank [123]"' "$sweep" || fail "no key was swept on a rank above 0"
/usr/bin/python3 - "$work/mpi.json" <<'PY' || fail "JSON context"
import json, sys
c = json.load(open(sys.argv[1]))["context"]
assert c["mpi_ranks"] == "4" and c["mpi_lost_ranks"] == "" and c["tunebench_host"], c
assert c["mpi_rank_devices"].startswith("0="), c
# Worker seconds are the ranks' children's own, never less than the kernel time they timed.
assert 0 < float(c["tunebench_sweep_kernel_seconds"]) <= float(c["tunebench_sweep_worker_seconds"]), c
PY
"$tool" --cache="$work/mpi.sqlite" list | grep -c cpu_mxfp4_gemm | grep -qx 4 || fail "the cache lacks keys"
host=$(hostname)
/usr/bin/python3 -c 'import sqlite3,sys; r=sqlite3.connect(sys.argv[1]).execute("select count(*), count(distinct host) from measurements where host=?", (sys.argv[2],)).fetchone(); assert r[0] > 0, r' \
  "$work/mpi.sqlite" "$host" || fail "cache rows do not carry the host"

# A rank killed once handed its first key: its keys are redone by the others, the run completes.
TUNEBENCH_FAULT_INJECT=kill-rank=2 TUNEBENCH_HANG_TIMEOUT=3 TUNEBENCH_CACHE=$work/kill.sqlite timeout 300 \
  "$mpirun" -np 4 --enable-recovery "$bench" "${args[@]}" --benchmark_out="$work/kill.json" >"$work/kill.out" 2>"$work/kill.err"
grep -q "rank 2 silent for 3 s: counted lost" "$work/kill.err" || fail "the killed rank was not reported: $(grep bench: "$work/kill.err")"
diff <(names "$work/one.json") <(names "$work/kill.json") || fail "a killed rank lost benchmarks"
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["context"]["mpi_lost_ranks"] == "2"' "$work/kill.json" ||
  fail "mpi_lost_ranks does not name rank 2"

# SIGINT to mpirun mid-sweep: no rank and no child left, the cache whole.
TUNEBENCH_FAULT_INJECT=hang-config=BLOCK_N=16,BLOCK_K=128 TUNEBENCH_CACHE=$work/int.sqlite \
  "$mpirun" -np 4 --enable-recovery "$bench" "${args[@]}" >/dev/null 2>"$work/int.err" &
pid=$!
for _ in $(seq 100); do grep -q "tunebench-shard: CUDA_VISIBLE_DEVICES" "$work/int.err" && break; sleep 0.2; done
sleep 1
# Each rank's scratch folder names the cache its child's keys go to, so that a run after a
# SIGKILL merges what the child finished (tests/shared_cache_test.sh, part 6). Checked after the
# SIGINT below, so that a failure leaves no process.
owners=("$TMPDIR"/tunebench-mpi-*/owner)
bad_owner=""
[[ -e ${owners[0]} ]] || bad_owner="no MPI scratch folder under $TMPDIR mid-sweep"
for o in "${owners[@]}"; do
  [[ -e $o ]] && ! grep -qx "cache=$work/int.sqlite" "$o" && bad_owner="$o does not name the cache its keys go to: $(cat "$o")"
done
kill -INT $pid
wait $pid
[[ -z $bad_owner ]] || fail "$bad_owner"
sleep 1
left=$(pgrep -f -- "--tunebench_runs=$work/runs" | wc -l)
[[ $left == 0 ]] || fail "$left processes left after SIGINT to mpirun: $(pgrep -af -- "--tunebench_runs=$work/runs")"
/usr/bin/python3 -c 'import sqlite3,sys; assert sqlite3.connect(sys.argv[1]).execute("pragma integrity_check").fetchone()[0] == "ok"' \
  "$work/int.sqlite" || fail "the cache is damaged after SIGINT"

# One rank is a plain run.
TUNEBENCH_CACHE=$work/mpi.sqlite "$mpirun" -np 1 "$bench" "${args[@]}" --benchmark_out="$work/np1.json" >"$work/np1.out" 2>"$work/np1.err" ||
  fail "mpirun -np 1: $(tail -3 "$work/np1.err")"
diff <(names "$work/one.json") <(names "$work/np1.json") || fail "mpirun -np 1 names differ"

# More ranks on a host than its GPU entries: one line on every rank, exit status 2.
CUDA_VISIBLE_DEVICES=0 TUNEBENCH_CACHE=$work/mpi.sqlite "$mpirun" -np 2 "$bench" "${args[@]}" >"$work/dev.out" 2>"$work/dev.err"
[[ $(grep -c "^bench: rank [01]: " "$work/dev.err") == 2 ]] || fail "expected a line from each rank: $(cat "$work/dev.err")"
grep -q "^bench: rank 1: local rank 1 on .* 1 GPU entry" "$work/dev.err" || fail "rank 1's line: $(cat "$work/dev.err")"
[[ ! -s $work/dev.out ]] || fail "a refused run wrote to stdout"
# A launcher's variables without a launcher (left from another job): a warning and a plain run.
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 TUNEBENCH_CACHE=$work/mpi.sqlite "$bench" "${args[@]}" \
  --benchmark_out="$work/stale.json" >/dev/null 2>"$work/stale.err" || fail "stale launcher variables: $(tail -3 "$work/stale.err")"
grep -q "^bench: WARNING: OMPI_COMM_WORLD_SIZE=2 says 2 ranks, but MPI started this process alone" "$work/stale.err" \
  || fail "no warning for stale launcher variables: $(grep bench: "$work/stale.err")"
diff <(names "$work/one.json") <(names "$work/stale.json") || fail "the plain run under stale variables lost benchmarks"
echo "PASS"
