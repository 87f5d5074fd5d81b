#!/usr/bin/env bash
# End-to-end checks of the bench binary: stable listing, JSON that compare.py reads, the
# no-GPU notice, and one-line errors with the right exit status on bad input.
set -euo pipefail
bench=${1:?usage: bench_cli_test.sh BENCH TUNEBENCH_CACHE_CLI}
cache_cli=${2:?usage: bench_cli_test.sh BENCH TUNEBENCH_CACHE_CLI}
source "$(dirname "$0")/lib.sh"

# Names do not depend on flags: listing with other flags gives the same names.
"$bench" --benchmark_list_tests >"$work/list1"
"$bench" --benchmark_list_tests --tunebench_seed=7 --benchmark_min_time=0.01 --benchmark_repetitions=3 >"$work/list2"
cmp -s "$work/list1" "$work/list2" || fail "benchmark names changed with flags"
# 5 ops x 60 shapes (2 GEMMs x (9 decode + 6 prefill) x 2 sets), on every machine.
[ "$(wc -l <"$work/list1")" -eq 300 ] || fail "expected 300 families, got $(wc -l <"$work/list1")"
for name in cpu_mxfp4_gemm/dsv4f_prefill_tp4/M:16384/N:4096/K:512 mxfp4_gemm/dsv4f_decode_ep/M:8/N:4096/K:4096 \
            mxfp4_moe/dsv4f_decode_ep/M:8/N:4096/K:4096/E:256/topk:6 bf16_gemm/dsv4f_prefill_ep/M:512/N:4096/K:2048 \
            bf16_moe/dsv4f_prefill_tp4/M:4096/N:1024/K:4096/E:256/topk:6; do
  grep -qx "$name/manual_time" "$work/list1" || fail "missing family $name"
done

# Two runs to JSON; compare.py pairs them by name and runs its U test over the repetitions.
for run in a b; do
  "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_mxfp4 --benchmark_min_time=0.01 \
    --benchmark_repetitions=9 --benchmark_out="$work/$run.json" --benchmark_out_format=json \
    >"$work/$run.console" 2>"$work/$run.err" || fail "bench run $run exited $?: $(cat "$work/$run.err")"
done
# The second run finds every config in the cache: its in-loop sweep line says so instead of zeros.
grep -q 'in the timing loop): [0-9.]* s kernel time in .*, [1-9][0-9]* timed runs$' "$work/a.err" \
  || fail "run a's in-loop sweep line: $(grep 'sweep' "$work/a.err")"
grep -qx "bench: sweep (race, in the timing loop): nothing timed, no key was tuned here" "$work/b.err" \
  || fail "run b's in-loop sweep line: $(grep 'sweep' "$work/b.err")"
# A shape whose host workload cannot be allocated (1.1 TB of activations) is an error entry that
# names the shape, not 'std::bad_alloc'. Only where the kernel refuses such an allocation
# outright (overcommit 0 or 2); with overcommit 1 it would be granted and touched.
if [ "$(cat /proc/sys/vm/overcommit_memory 2>/dev/null)" != 1 ]; then
  printf 'name: huge_set\ngemms:\n  - {name: g, n: 256, k: 16384}\nshapes:\n  - {m: 16777216, calls: 1}\n' >"$work/huge.yaml"
  "$bench" --tunebench_shapes="$work/huge.yaml" --benchmark_filter='^cpu_' --benchmark_min_time=0.01 \
    >"$work/huge.out" 2>"$work/huge.err" || true
  grep -q "out of host memory for the workload of M=16777216 N=256 K=16384" "$work/huge.out" \
    || fail "a shape too large for the host: $(cat "$work/huge.out" "$work/huge.err")"
fi
# Its context likewise: no busy fraction where nothing ran, run a's a fraction of its runs.
/usr/bin/python3 - "$work/a.json" "$work/b.json" <<'PY' || fail "in-loop sweep figures in the JSON context"
import json, sys
a, b = (json.load(open(f))["context"] for f in sys.argv[1:])
assert 0 < float(a["tunebench_sweep_busy_fraction"]) <= 1 and int(a["tunebench_sweep_timed_runs"]) > 0, a
assert "tunebench_sweep_busy_fraction" not in b and b["tunebench_sweep_timed_runs"] == "0", b
PY
/usr/bin/python3 - "$work/a.json" "$here/../CMakeLists.txt" <<'PY' || fail "JSON content"
import json, math, re, sys
d = json.load(open(sys.argv[1]))
ctx = d["context"]
for key in ("tunebench_version", "tunebench_git_revision", "tunebench_shapes", "cuda_devices"):
    assert key in ctx, key
# The version is the CMake project's; the revision 12 hex digits (and "-dirty"), or "unknown".
version = re.search(r"project\(tunebench VERSION ([0-9.]+)", open(sys.argv[2]).read()).group(1)
assert ctx["tunebench_version"] == version, (ctx["tunebench_version"], version)
assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?|unknown", ctx["tunebench_git_revision"]), ctx["tunebench_git_revision"]
runs = [b for b in d["benchmarks"] if b["run_type"] == "iteration"]
assert len(runs) == 4 * 9, len(runs)
names = {b["run_name"] for b in runs}
assert "cpu_mxfp4_gemm/dsv4f_decode_tiny/M:4/N:512/K:128/manual_time" in names, names
for b in runs:
    assert b["time_unit"] == "ms", b
    assert not b.get("error_occurred"), b
    assert b["real_time"] > 0 and math.isfinite(b["real_time"]), b
    assert b["label"].startswith("BLOCK_N="), b
    assert b["TFLOP/s"] > 0 and b["GB/s"] > 0, b
PY
# Run a tuned the 4 keys and cached them; run b found them there.
[ "$("$cache_cli" list | wc -l)" -eq 4 ] || fail "expected 4 tuned keys in the cache: $("$cache_cli" list)"
cmp -s <(grep -o 'BLOCK_N=[0-9]*,BLOCK_K=[0-9]*' "$work/a.console") <(grep -o 'BLOCK_N=[0-9]*,BLOCK_K=[0-9]*' "$work/b.console") \
  || fail "run b did not use the configs run a tuned"
"$cache_cli" evict cpu_mxfp4_gemm M=1,N=256,K=512 >/dev/null || fail "evict failed"
[ "$("$cache_cli" list | wc -l)" -eq 3 ] || fail "evict left the key in the cache"
"$bench" --tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' --benchmark_min_time=0.01 >/dev/null 2>&1 \
  || fail "rerun after evict failed"
[ "$("$cache_cli" list | wc -l)" -eq 4 ] || fail "the evicted key was not tuned again"
# A best this op cannot run (an edited row, faster than anything real) is dropped when the key is
# tuned again, so the new winner takes its place instead of the key being retuned every run.
/usr/bin/python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE best SET config = ?, p50_ns = 1 WHERE tuning_key = ?", ("BLOCK_N=99,BLOCK_K=128", "M=1,N=256,K=512")); c.commit()' \
  "$TUNEBENCH_CACHE"
for attempt in 1 2; do
  "$bench" --tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' --benchmark_min_time=0.01 \
    >/dev/null 2>"$work/unrunnable-best.err" || fail "a run over an unrunnable best failed: $(cat "$work/unrunnable-best.err")"
  n=$(grep -c "cached config 'BLOCK_N=99,BLOCK_K=128' of .* is not one this op can run; tuning again" "$work/unrunnable-best.err" || true)
  [ "$n" -eq $((attempt == 1 ? 1 : 0)) ] || fail "run $attempt over an unrunnable best: $(cat "$work/unrunnable-best.err")"
done
"$cache_cli" show cpu_mxfp4_gemm M=1,N=256,K=512 | grep -q "best: BLOCK_N=99" && fail "the unrunnable best stayed in the cache"

# --benchmark_color as Google Benchmark reads it, bench making the console reporter: colour to a
# file only when asked, none when told no (and none by default: a.console above is a file).
"$bench" --tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' --benchmark_min_time=0.01 \
  --benchmark_color=true >"$work/colour.console" 2>/dev/null || fail "--benchmark_color=true run failed"
grep -q $'\x1b\\[' "$work/colour.console" || fail "--benchmark_color=true wrote no colour"
! grep -q $'\x1b\\[' "$work/a.console" || fail "colour codes in a console file without --benchmark_color"

# Every run has its own directory with the configs it used; a replay runs exactly those, with
# nothing tuned, even when the cache has forgotten them.
record=$(ls -d "$work"/runs/* | head -1)
for f in configs.json manifest.json; do [ -s "$record/$f" ] || fail "run directory $record lacks $f"; done
OMP_NUM_THREADS=2 "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_mxfp4 --benchmark_min_time=0.01 >/dev/null 2>&1
latest=$(ls -d "$work"/runs/* | tail -1)
[ -s "$latest/results.json" ] || fail "the JSON did not go to the run directory $latest"
/usr/bin/python3 - "$latest/manifest.json" "$latest/results.json" <<'PY' || fail "manifest.json lacks status complete or the results path, or says another timing"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["status"] == "complete" and m["results"].endswith("/results.json"), m
# A run of host ops alone is host-timed, whatever --tunebench_timing says of GPU ops: the manifest
# and the JSON context say so alike, as the host ops' cache keys do.
assert m["timing_mode"] == "host", m["timing_mode"]
assert json.load(open(sys.argv[2]))["context"]["timing_mode"] == "host", json.load(open(sys.argv[2]))["context"]
import socket  # "host" is the machine's name, as the JSON context's tunebench_host; "cpu" its CPU model
assert m["host"] == socket.gethostname() and m["cpu"] and m["cpu"] != m["host"], m
# the CPU op's thread count is part of what a run was
assert m["env"].get("OMP_NUM_THREADS") == "2", m["env"]
PY
# The latency table: a row per benchmark and the trace-weighted total, on the console and as
# Markdown in the run directory; with --benchmark_format=json stdout stays pure JSON.
[ "$(grep -c '^| cpu_mxfp4_gemm |' "$latest/latency.md")" -eq 4 ] || fail "latency.md rows: $(cat "$latest/latency.md")"
grep -q 'Trace-weighted total of cpu_mxfp4_gemm' "$latest/latency.md" || fail "no trace-weighted total"
"$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_mxfp4 --benchmark_min_time=0.01 --benchmark_format=json \
  2>/dev/null | /usr/bin/python3 -c 'import json,sys; json.load(sys.stdin)' || fail "--benchmark_format=json output is not pure JSON"
rm -f "$work/replay-cache.sqlite"
TUNEBENCH_CACHE="$work/replay-cache.sqlite" REPLAY_FROM="$record" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_mxfp4 --benchmark_min_time=0.01 >"$work/replay.console" 2>"$work/replay.err" || fail "replay failed"
replayed=$(ls -d "$work"/runs/* | tail -1)
/usr/bin/python3 - "$record/configs.json" "$replayed/configs.json" "$work/replay.console" <<'PY' || fail "the replay did not run the recorded configs"
import json, sys
rec = {c["benchmark"]: c["config"] for c in json.load(open(sys.argv[1]))["configs"]}
rep = {c["benchmark"]: c["config"] for c in json.load(open(sys.argv[2]))["configs"]}
assert rec == rep, (rec, rep)
console = open(sys.argv[3]).read()
for name, config in rec.items():
    assert any(line.startswith(name + "/") and line.rstrip().endswith(config) for line in console.splitlines()), name
PY
[ "$(TUNEBENCH_CACHE="$work/replay-cache.sqlite" "$cache_cli" list | wc -l)" -eq 0 ] || fail "the replay tuned something"
[ "$(grep -c '"source": "replayed"' "$replayed/configs.json")" -eq 4 ] || fail "replayed configs not recorded as such"
# A replayed config that no longer runs is evicted and its key tuned live, with a marker in the
# log and the JSON context; when the eviction fails, the marker says so and the bad config
# still never comes back.
mkdir -p "$work/bad-run"
/usr/bin/python3 - "$record/configs.json" "$work/bad-run/configs.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["configs"][0]["config"] = "BLOCK_N=16,BLOCK_K=48"  # not a multiple of 32: the op throws
json.dump(doc, open(sys.argv[2], "w"))
PY
for inject in none evict-fails; do
  marker=compile_cpu_mxfp4_gemm_evicted
  [ "$inject" = none ] || marker=compile_cpu_mxfp4_gemm_no_evict
  TUNEBENCH_FAULT_INJECT=$inject REPLAY_FROM="$work/bad-run" "$bench" --tunebench_shapes="$tiny" \
    --benchmark_filter=cpu_mxfp4 --benchmark_min_time=0.01 --benchmark_out="$work/bad-$inject.json" \
    >"$work/bad.console" 2>"$work/bad.err" || fail "replay with a bad config failed: $(cat "$work/bad.err")"
  [ "$(grep -c "\[$marker\]" "$work/bad.err")" -eq 1 ] || fail "expected one $marker line: $(cat "$work/bad.err")"
  grep -q "^bench: WARNING: 1 benchmark was not in $work/bad-run, or had a recorded config that could not run here or failed, and got its config as in a normal run" \
    "$work/bad.err" || fail "the warning of one benchmark tuned live: $(cat "$work/bad.err")"
  grep -q "^bench: WARNING: 1 benchmark was not in .*tuned now (cpu_mxfp4_gemm/[^;]*; configs.json says which" \
    "$work/bad.err" || fail "the warning does not name its benchmark: $(cat "$work/bad.err")"
  ! grep -q 'ERROR OCCURRED' "$work/bad.console" || fail "the fallback did not run the benchmark"
  ! grep -q 'BLOCK_K=48' "$work/bad.console" || fail "the bad config came back"
  /usr/bin/python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["context"]; assert sys.argv[2] in c, c' \
    "$work/bad-$inject.json" "$marker" || fail "$marker not in the JSON context"
done
# A recorded config the op cannot run (not one of its configs, or not for that shape: an edited
# configs.json) is never run, whatever it is: it takes the same path, named with its source.
first=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["configs"][0]["benchmark"])' "$record/configs.json")
for bad in BLOCK_N=99999999999999,BLOCK_K=128 BLOCK_N=17,BLOCK_K=128 garbage FOO=1 BLOCK_N=0,BLOCK_K=128; do
  /usr/bin/python3 - "$record/configs.json" "$work/bad-run/configs.json" "$bad" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["configs"][0]["config"] = sys.argv[3]
json.dump(doc, open(sys.argv[2], "w"))
PY
  set +e; REPLAY_FROM="$work/bad-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
    --benchmark_min_time=0.01 >"$work/bad.console" 2>"$work/bad.err"; rc=$?; set -e
  [ "$rc" -eq 0 ] || fail "replay of the unrunnable config $bad exited $rc: $(cat "$work/bad.err")"
  [ "$(grep -c "\[compile_cpu_mxfp4_gemm_evicted\] replayed config '$bad' of $first (from $work/bad-run/configs.json) is not one this op can run (" "$work/bad.err")" -eq 1 ] \
    || fail "replay of the unrunnable config $bad: expected one marker line: $(cat "$work/bad.err")"
  grep -q "; not in the cache; tuning the key live$" "$work/bad.err" \
    || fail "a replayed config the cache never held was not said to be absent from it: $(cat "$work/bad.err")"
  grep -q "^$first/manual_time .*BLOCK_N=[0-9]*,BLOCK_K=[0-9]*$" "$work/bad.console" && ! grep -qF "$bad" "$work/bad.console" \
    || fail "replay of the unrunnable config $bad did not tune live: $(cat "$work/bad.console")"
  grep -q '"source": "tuned"' "$(ls -d "$work"/runs/* | tail -1)/configs.json" || fail "config replacing $bad not recorded as tuned"
done
# A recorded config holding control characters is quoted escaped: one line, no terminal codes.
/usr/bin/python3 - "$record/configs.json" "$work/bad-run/configs.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["configs"][0]["config"] = "BLOCK_N=16\x1b[31m\nBLOCK_K=128"
json.dump(doc, open(sys.argv[2], "w"))
PY
set +e; REPLAY_FROM="$work/bad-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
  --benchmark_min_time=0.01 >"$work/bad.console" 2>"$work/bad.err"; rc=$?; set -e
[ "$rc" -eq 0 ] || fail "replay of a config with control characters exited $rc: $(cat "$work/bad.err")"
grep -qF "replayed config 'BLOCK_N=16\x1b[31m\nBLOCK_K=128' of $first" "$work/bad.err" \
  || fail "a replayed config's control characters were not escaped: $(cat -A "$work/bad.err")"
! grep -q $'\e' "$work/bad.err" || fail "an escape character reached the terminal: $(cat -A "$work/bad.err")"
# A recorded config of any length is quoted cut, so its line stays a line.
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["configs"][0]["config"]="BLOCK_N=" + "9" * 100000; json.dump(d, open(sys.argv[2], "w"))' \
  "$record/configs.json" "$work/bad-run/configs.json"
REPLAY_FROM="$work/bad-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
  --benchmark_min_time=0.01 >/dev/null 2>"$work/bad.err" || fail "replay of a 100000-character config failed"
grep -q "replayed config 'BLOCK_N=9*\.\.\.' of $first" "$work/bad.err" && [ "$(wc -L <"$work/bad.err")" -lt 1000 ] \
  || fail "a 100000-character config was quoted whole: $(head -c 600 "$work/bad.err")"

sed 's/cpu_mxfp4_gemm-1/cpu_mxfp4_gemm-0/' "$record/configs.json" >"$work/old-configs.json"
mkdir -p "$work/old-run" && cp "$work/old-configs.json" "$work/old-run/configs.json"
set +e; REPLAY_FROM="$work/old-run" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/old.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'a replay must run the same kernels on the same device' "$work/old.err" \
  || fail "a replay of another kernel version was not refused: rc $rc $(cat "$work/old.err")"
set +e; REPLAY_FROM="$work/nowhere" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/nowhere.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'nowhere: no such folder' "$work/nowhere.err" || fail "a missing replay dir: rc $rc"
# A run stopped before its end (manifest still "running", no configs.json) and a record that
# lists one benchmark twice are refused with what is wrong.
mkdir -p "$work/stopped-run" && printf '{"status": "running"}\n' >"$work/stopped-run/manifest.json"
set +e; REPLAY_FROM="$work/stopped-run" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/stopped.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'that run did not complete (interrupted)' "$work/stopped.err" || fail "an interrupted replay dir: rc $rc $(cat "$work/stopped.err")"
mkdir -p "$work/twice-run"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["configs"].append(dict(d["configs"][0], config="BLOCK_N=16,BLOCK_K=128")); json.dump(d, open(sys.argv[2], "w"))' \
  "$record/configs.json" "$work/twice-run/configs.json"
set +e; REPLAY_FROM="$work/twice-run" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/twice.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'is recorded twice' "$work/twice.err" || fail "a record listing a benchmark twice: rc $rc $(cat "$work/twice.err")"
mkdir -p "$work/blank-manifest-run" && cp "$record/configs.json" "$work/blank-manifest-run/" \
  && printf '{}\n' >"$work/blank-manifest-run/manifest.json"
set +e; REPLAY_FROM="$work/blank-manifest-run" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/blank.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'manifest.json: no "status" (not the manifest.json bench writes in a run directory)' "$work/blank.err" \
  || fail "a manifest without a status: rc $rc $(cat "$work/blank.err")"
printf '{"status": 1}\n' >"$work/blank-manifest-run/manifest.json"
set +e; REPLAY_FROM="$work/blank-manifest-run" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/blank.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'manifest.json: "status": 1, expected a string' "$work/blank.err" \
  || fail "a manifest whose status is a number: rc $rc $(cat "$work/blank.err")"
: >"$work/blank-manifest-run/manifest.json"
set +e; REPLAY_FROM="$work/blank-manifest-run" "$bench" --tunebench_shapes="$tiny" >/dev/null 2>"$work/blank.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'manifest.json: empty (expected the manifest.json bench writes in a run directory)' "$work/blank.err" \
  || fail "an empty manifest: rc $rc $(cat "$work/blank.err")"
# A record of no benchmarks (what a run that ran none writes) replays nothing, and says so.
mkdir -p "$work/empty-run" && cp "$record/manifest.json" "$work/empty-run/"
printf '{"tunebench_run_record": 1, "configs": []}\n' >"$work/empty-run/configs.json"
REPLAY_FROM="$work/empty-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
  --benchmark_min_time=0.01 >/dev/null 2>"$work/empty.err" || fail "a replay of an empty record failed: $(cat "$work/empty.err")"
grep -q "^bench: WARNING: REPLAY_FROM=$work/empty-run: configs.json records no benchmarks: nothing is replayed" "$work/empty.err" \
  && grep -q "^bench: WARNING: 1 benchmark was not in $work/empty-run, .*($first;" "$work/empty.err" \
  || fail "a replay of an empty record did not say it replays nothing: $(cat "$work/empty.err")"
# The replay dir's manifest.json is checked too: a run not "complete", another device or (where
# the run times GPU ops) another timing mode is refused naming the file and the field; another
# tunebench version or git revision (an A/B across builds) and a dir without a manifest (an older
# bench) only warn.
edited_manifest() {  # DIR FIELD VALUE: a copy of the record run with one manifest field changed
  rm -rf "$1" && mkdir -p "$1" && cp "$record/configs.json" "$1/"
  /usr/bin/python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); m[sys.argv[3]]=sys.argv[4]; json.dump(m, open(sys.argv[2], "w"))' \
    "$record/manifest.json" "$1/manifest.json" "$2" "$3"
}
for field_value in "status=running" "device=NVIDIA H200"; do
  field=${field_value%%=*}
  edited_manifest "$work/edited-run" "$field" "${field_value#*=}"
  set +e; REPLAY_FROM="$work/edited-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
    --benchmark_min_time=0.01 >/dev/null 2>"$work/edited.err"; rc=$?; set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$work/edited.err")" -eq 1 ] && grep -q "edited-run/manifest.json: $field " "$work/edited.err" \
    || fail "a replay dir whose manifest has $field_value was not refused: rc $rc $(cat "$work/edited.err")"
done
# A host op is host-timed whatever the recorded run's GPU timing was (an older bench recorded
# the GPU setting, `kernel` by default, on a run of host ops alone): a run of host ops replays it.
for timing in event kernel; do
  edited_manifest "$work/edited-run" timing_mode "$timing"
  REPLAY_FROM="$work/edited-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
    --benchmark_min_time=0.01 >/dev/null 2>"$work/edited.err" || fail "a host-op replay of timing_mode $timing failed: $(cat "$work/edited.err")"
  grep -q '"source": "replayed"' "$(ls -d "$work"/runs/* | tail -1)/configs.json" || fail "a host-op replay of timing_mode $timing did not replay"
done
for field in tunebench_version tunebench_git_revision; do
  edited_manifest "$work/edited-run" "$field" "0.0.0-elsewhere"
  REPLAY_FROM="$work/edited-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
    --benchmark_min_time=0.01 >"$work/edited.console" 2>"$work/edited.err" || fail "a replay of another $field failed: $(cat "$work/edited.err")"
  [ "$(grep -c "WARNING: .*edited-run/manifest.json: $field '0.0.0-elsewhere'" "$work/edited.err")" -eq 1 ] \
    || fail "a replay of another $field did not warn once: $(cat "$work/edited.err")"
  grep -q '"source": "replayed"' "$(ls -d "$work"/runs/* | tail -1)/configs.json" || fail "a replay of another $field did not replay"
done
rm -f "$work/edited-run/manifest.json"
REPLAY_FROM="$work/edited-run" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
  --benchmark_min_time=0.01 >/dev/null 2>"$work/edited.err" || fail "a replay dir without manifest.json failed: $(cat "$work/edited.err")"
grep -q "WARNING: .*edited-run has no manifest.json" "$work/edited.err" || fail "a replay dir without manifest.json did not warn: $(cat "$work/edited.err")"

# scripts/ab_test.sh: a record run, 2 rounds of A B B A replays, compare.py's U test over the
# per-process medians (4 per side), the verdict table (tests/ab_method_test.sh checks its figures).
BENCH="$bench" "$here/../scripts/ab_test.sh" --rounds 2 FLAGGEMS_MXFP4_FOLDSCALE 0 1 --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_ --benchmark_min_time=0.01 >"$work/ab.txt" 2>"$work/ab.err" || fail "ab_test.sh: $(cat "$work/ab.err")"
grep -q 'manual_time_pvalue.*U Test, Repetitions: 4 vs 4' "$work/ab.txt" || fail "ab_test.sh printed no U test: $(cat "$work/ab.txt")"
grep -Eq '^verdict: 4 benchmarks, ' "$work/ab.txt" || fail "ab_test.sh printed no verdict: $(cat "$work/ab.txt")"
set +e; "$here/../scripts/ab_test.sh" 'NOT A VAR' 0 1 >/dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 2 ] || fail "ab_test.sh accepted a bad variable name"
set +e; BENCH="$bench" "$here/../scripts/ab_test.sh" X 0 1 --benchmark_out="$work/x.json" >/dev/null 2>"$work/abo.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'ab_test writes each run' "$work/abo.err" || fail "ab_test.sh accepted --benchmark_out"
# scripts/compare_results.sh checks both inputs first: one line naming the file, exit 2.
echo '{"benchmarks": [' >"$work/cut.json"
echo '[1, 2]' >"$work/list.json"
# Entries compare.py would die on: a time that is not a number, no name, a NaN time.
echo '{"benchmarks": [{"name": "x", "run_type": "iteration", "real_time": "abc", "cpu_time": 1}]}' >"$work/strtime.json"
echo '{"benchmarks": [{"run_type": "iteration", "real_time": 1, "cpu_time": 1}]}' >"$work/noname.json"
echo '{"benchmarks": [{"name": "x", "run_type": "iteration", "real_time": NaN, "cpu_time": 1}]}' >"$work/nan.json"
for bad in "$work/none.json" "$work/cut.json" "$work/list.json" "$work" "$work/strtime.json" "$work/noname.json" \
  "$work/nan.json"; do
  set +e; "$here/../scripts/compare_results.sh" "$work/a.json" "$bad" >/dev/null 2>"$work/cmp.err"; rc=$?; set -e
  [ "$rc" -eq 2 ] && [ "$(grep -c . "$work/cmp.err")" -eq 1 ] && grep -q "^compare_results: $bad: .*expected a Google Benchmark JSON file" \
    "$work/cmp.err" || fail "compare_results.sh on $bad: rc $rc $(cat "$work/cmp.err")"
done
echo '{"benchmarks": []}' >"$work/empty.json"
set +e; "$here/../scripts/compare_results.sh" "$work/a.json" "$work/empty.json" >/dev/null 2>"$work/cmp.err"; rc=$?; set -e
[ "$rc" -eq 1 ] && grep -q "holds no benchmarks: nothing to compare" "$work/cmp.err" \
  || fail "compare_results.sh on an empty list: rc $rc $(cat "$work/cmp.err")"

# USE_FLAGTUNE=1 sweeps the expanded space even for a key a plain sweep answered.
USE_FLAGTUNE=1 "$bench" --tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' --benchmark_min_time=0.01 \
  >/dev/null 2>&1 || fail "USE_FLAGTUNE=1 run failed"
[ "$("$cache_cli" show cpu_mxfp4_gemm M=1,N=256,K=512 | grep -c '^  ok')" -gt 9 ] \
  || fail "USE_FLAGTUNE=1 did not sweep the expanded space: $("$cache_cli" show cpu_mxfp4_gemm M=1,N=256,K=512)"

# scripts/plain_vs_exhaustive.sh: a kept exhaustive search is reused (EXHAUSTIVE_FROM); one that
# does not cover the selected benchmarks, a bad exhaustive.ms, or a cache flag are refused.
pve=$here/../scripts/plain_vs_exhaustive.sh
sel=(--tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*/N:256/')
BENCH="$bench" KEEP="$work/pve" "$pve" "${sel[@]}" >"$work/pve.txt" 2>&1 || fail "plain_vs_exhaustive: $(cat "$work/pve.txt")"
grep -Eq 'plain winner within 2% of the exhaustive best on [0-2]/2 keys' \
  "$work/pve.txt" || fail "plain_vs_exhaustive printed no verdict: $(cat "$work/pve.txt")"
[ -s "$work/pve/exhaustive.sqlite" ] && [ -s "$work/pve/plain.sqlite" ] && [ -s "$work/pve/exhaustive.ms" ] || fail "KEEP kept nothing"
BENCH="$bench" EXHAUSTIVE_FROM="$work/pve" "$pve" "${sel[@]}" >"$work/pve2.txt" 2>&1 || fail "EXHAUSTIVE_FROM: $(cat "$work/pve2.txt")"
grep -q "exhaustive search reused from $work/pve" "$work/pve2.txt" || fail "EXHAUSTIVE_FROM did not reuse: $(cat "$work/pve2.txt")"
set +e
BENCH="$bench" EXHAUSTIVE_FROM="$work/pve" "$pve" --tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*/N:512/' \
  >/dev/null 2>"$work/pve3.err"; rc=$?
BENCH="$bench" EXHAUSTIVE_FROM="$work/pve" "$pve" --tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' \
  >/dev/null 2>"$work/pve6.err"; rc6=$?
set -e
[ "$rc" -eq 2 ] && grep -q 'keys have no exhaustive measurements in .*must cover the selected benchmarks' "$work/pve3.err" \
  || fail "a kept search of other benchmarks was accepted: rc $rc $(cat "$work/pve3.err")"
[ "$rc6" -eq 2 ] && grep -q 'also holds 1 keys the selected benchmarks do not have' "$work/pve6.err" \
  || fail "a kept search of more benchmarks was accepted: rc $rc6 $(cat "$work/pve6.err")"
mkdir -p "$work/pvebad" && cp "$work/pve/exhaustive.sqlite" "$work/pvebad/" && echo "100 soon" > "$work/pvebad/exhaustive.ms"
set +e; BENCH="$bench" EXHAUSTIVE_FROM="$work/pvebad" "$pve" "${sel[@]}" >/dev/null 2>"$work/pve4.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && grep -q 'exhaustive.ms: expected two integers' "$work/pve4.err" || fail "bad exhaustive.ms: rc $rc $(cat "$work/pve4.err")"
set +e; BENCH="$bench" "$pve" --tunebench_cache="$work/mine.sqlite" >/dev/null 2>"$work/pve5.err"; rc=$?; set -e
[ "$rc" -eq 2 ] && [ ! -e "$work/mine.sqlite" ] || fail "plain_vs_exhaustive accepted --tunebench_cache: rc $rc"

/usr/bin/python3 /usr/share/benchmark/compare.py benchmarks "$work/a.json" "$work/b.json" >"$work/compare.txt" 2>&1 \
  || fail "compare.py: $(cat "$work/compare.txt")"
grep -q 'cpu_mxfp4_gemm/dsv4f_decode_tiny/M:1/N:256/K:512/manual_time_pvalue' "$work/compare.txt" \
  || fail "compare.py did not pair and U-test the runs: $(cat "$work/compare.txt")"

# No filter: the default. Without a GPU, one line says why the GPU families were skipped.
"$bench" --tunebench_shapes="$tiny" --benchmark_min_time=0.01 >"$work/default.console" 2>"$work/default.err" \
  || fail "default run exited $?"
grep -q 'cpu_mxfp4_gemm/dsv4f_decode_tiny/M:1/' "$work/default.console" || fail "default filter did not run the CPU families"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  [ "$(grep -c 'no CUDA device' "$work/default.err")" -eq 1 ] || fail "expected one no-GPU line, got: $(cat "$work/default.err")"
  grep -q 'GPU families skipped' "$work/default.err" || fail "no-GPU line does not say what was skipped"
fi

no_gpu=0
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then no_gpu=1; fi

# Without a GPU, selected GPU families are entries with error_occurred, and compare.py still
# reads the output.
if [ "$no_gpu" = 1 ]; then
  "$bench" --tunebench_shapes="$tiny" --benchmark_filter='^mxfp4' --benchmark_format=json >"$work/gpu.json" \
    2>"$work/gpu.err" || fail "GPU families without a GPU exited $?"
  [ "$(grep -c "selected GPU benchmarks cannot run and will be reported as errors (ERROR OCCURRED: 'no CUDA device: ...')" "$work/gpu.err")" -eq 1 ] \
    || fail "expected one skip line: $(cat "$work/gpu.err")"
  "$bench" --tunebench_shapes="$tiny" --benchmark_filter='^mxfp4_gemm/.*/M:1/N:256/' >/dev/null 2>"$work/gpu1.err" \
    || fail "one GPU family without a GPU exited $?"
  grep -q "no CUDA device (.*): 1 selected GPU benchmark cannot run and will be reported as an error (ERROR OCCURRED" \
    "$work/gpu1.err" || fail "the skip line of one GPU benchmark: $(cat "$work/gpu1.err")"
  /usr/bin/python3 - "$work/gpu.json" <<'PY' || fail "skipped GPU entries"
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
assert len(runs) == 8, len(runs)
for b in runs:
    assert b["error_occurred"] and b["error_message"].startswith("no CUDA device"), b
    assert b["time_unit"] == "us", b
PY
  /usr/bin/python3 /usr/share/benchmark/compare.py benchmarks "$work/gpu.json" "$work/gpu.json" >/dev/null 2>&1 \
    || fail "compare.py cannot read the skipped entries"
fi

# An interrupted run leaves an earlier --benchmark_out file whole, says in one line where its
# output is, and still ends by the signal; a finished one replaces it.
# (Job control on: without it a background job ignores SIGINT, as a Ctrl-C never would.)
echo '{"previous": true}' >"$work/keep.json"
set -m
"$bench" --benchmark_filter=cpu_mxfp4_gemm/dsv4f_prefill_ep/M:16384/ --benchmark_out="$work/keep.json" >/dev/null 2>"$work/int.err" &
pid=$!
set +m
sleep 2
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || fail "interrupted bench exited $rc, expected 130 (ended by SIGINT): $(cat "$work/int.err")"
grep -q previous "$work/keep.json" || fail "an interrupted run damaged the earlier output"
grep -qF "bench: interrupted: the results file is left as $(cd "$work" && pwd -P)/keep.json.incomplete" "$work/int.err" \
  || grep -qF "bench: interrupted: the results file is left as $work/keep.json.incomplete" "$work/int.err" \
  || fail "no line saying where the interrupted run's output is: $(cat "$work/int.err")"
[ -f "$work/keep.json.incomplete" ] || fail "the line names $work/keep.json.incomplete, which is not there"
"$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 \
  --benchmark_out="$work/keep.json" >/dev/null 2>&1 || fail "run to keep.json failed"
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["benchmarks"]' "$work/keep.json" \
  || fail "a finished run did not replace the output"
[ ! -e "$work/keep.json.incomplete" ] || fail "temporary output left behind"

# Bad input: one line naming the input, exit 2; a filter matching nothing: exit 1.
expect_error() {
  local want_rc=$1 want=$2; shift 2
  set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
  [ "$rc" -eq "$want_rc" ] || fail "$* exited $rc, expected $want_rc: $(cat "$work/err")"
  grep -qF -- "$want" "$work/err" || fail "$*: expected '$want' in: $(cat "$work/err")"
}
printf 'name: x\nmoe: {experts: 8, top_k: 2}\ngemms: [{name: a, n: 64, k: 100}]\nshapes: [{m: 1}]\n' >"$work/badk.yaml"
expect_error 2 "badk.yaml: gemms[0].k (line 3): K=100 is not a multiple of 32" "$bench" --tunebench_shapes="$work/badk.yaml"
expect_error 2 "--tunebench_shapes: $work/none: no such shape file or folder" "$bench" --tunebench_shapes="$work/none"
# Input refused after the plan (a replay folder, the sweep's devices) is still one line: the
# notice of a run without a GPU comes only after every check.
for refused in "REPLAY_FROM=$work/no-such-run" "PARALLEL_WARMUP_GPUS=2 CUDA_VISIBLE_DEVICES=6,6"; do
  set +e; env $refused "$bench" --tunebench_shapes="$tiny" >"$work/out" 2>"$work/err"; rc=$?; set -e
  [ "$rc" -eq 2 ] && [ "$(grep -c . "$work/err")" -eq 1 ] || fail "$refused: expected one line and exit 2, got $rc: $(cat "$work/err")"
done
# A set without moe: is a set for the non-routed ops; the routed op has no benchmarks on it.
printf 'name: plain\ngemms: [{name: a, n: 64, k: 128}]\nshapes: [{m: 1}]\n' >"$work/plain.yaml"
"$bench" --tunebench_shapes="$work/plain.yaml" --benchmark_list_tests >"$work/plain.list" 2>"$work/plain.err" \
  || fail "a set without moe: $(cat "$work/plain.err")"
printf '%s\n' cpu_mxfp4_gemm/plain/M:1/N:64/K:128/manual_time mxfp4_gemm/plain/M:1/N:64/K:128/manual_time \
  bf16_gemm/plain/M:1/N:64/K:128/manual_time | cmp -s - "$work/plain.list" \
  || fail "a set without moe listed: $(cat "$work/plain.list")"
expect_error 2 "TUNEBENCH_SEED='x': expected a non-negative integer below 2^64" env TUNEBENCH_SEED=x "$bench"
expect_error 2 "--tunebench_seed='18446744073709551616': expected a non-negative integer below 2^64" "$bench" --tunebench_seed=18446744073709551616
expect_error 2 "FLAGGEMS_MXFP4_FOLDSCALE='2': expected 0 or 1" env FLAGGEMS_MXFP4_FOLDSCALE=2 "$bench"
expect_error 2 "TUNEBENCH_TIMING='cupti': expected kernel, cudagraph or event" env TUNEBENCH_TIMING=cupti "$bench"
expect_error 2 "TUNEBENCH_COLD_L2='yes': expected 0 or 1" env TUNEBENCH_COLD_L2=yes "$bench"
expect_error 2 "USE_FLAGTUNE='on': expected 0 (plain autotune) or 1 (exhaustive)" env USE_FLAGTUNE=on "$bench"
expect_error 2 "config cache" "$bench" --tunebench_shapes="$tiny" --tunebench_cache=/proc/nope/cache.sqlite
# An error before measuring leaves no run folder, not even the TUNEBENCH_RUNS folder made for it.
expect_error 2 "config cache" env TUNEBENCH_RUNS="$work/fresh-runs/deeper" "$bench" --tunebench_shapes="$tiny" \
  --tunebench_cache=/proc/nope/cache.sqlite
[ ! -e "$work/fresh-runs" ] || fail "a run that failed before measuring left $(find "$work/fresh-runs")"
# A bare file name is a cache in the current folder, by variable or flag.
mkdir "$work/bare"
bench_abs=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")
for how in env flag; do
  args=(--tunebench_shapes="$tiny" --benchmark_filter='cpu_mxfp4.*M:1/N:256/' --benchmark_min_time=0.01)
  if [ "$how" = env ]; then cmd=(env TUNEBENCH_CACHE=env.sqlite "$bench_abs"); else cmd=("$bench_abs" --tunebench_cache=flag.sqlite); fi
  (cd "$work/bare" && "${cmd[@]}" "${args[@]}") >/dev/null 2>"$work/bare.err" || fail "a bare cache name ($how): $(cat "$work/bare.err")"
  [ -s "$work/bare/$how.sqlite" ] || fail "a bare cache name ($how) made no cache in the current folder: $(ls "$work/bare")"
done
# The run folder says where things were: the whole command line and the folder it ran in, and
# relative paths as absolute ones, in manifest.json and in the JSON context.
mkdir -p "$work/bare/sh" && cp "$tiny" "$work/bare/sh/"
(cd "$work/bare" && TUNEBENCH_CACHE=env.sqlite "$bench_abs" --tunebench_shapes=sh --benchmark_filter='cpu_mxfp4.*M:1/N:256/' \
  --benchmark_min_time=0.01 --benchmark_out=rel.json) >/dev/null 2>"$work/bare.err" || fail "relative paths: $(cat "$work/bare.err")"
/usr/bin/python3 - "$work/bare/rel.json" "$work/bare" "$bench_abs" <<'PY' || fail "relative paths recorded as given"
import json, os, sys
ctx = json.load(open(sys.argv[1]))["context"]
bare, exe = sys.argv[2], sys.argv[3]
assert ctx["tunebench_cache"] == bare + "/env.sqlite", ctx
assert ctx["tunebench_shapes"] == bare + "/sh", ctx
assert os.path.isabs(ctx["tunebench_run_dir"]), ctx
m = json.load(open(os.path.join(ctx["tunebench_run_dir"], "manifest.json")))
assert m["command"][0] == exe and m["command"][1] == "--tunebench_shapes=sh", m["command"]
assert m["cwd"] == bare and m["cache"] == bare + "/env.sqlite" and m["shapes"] == bare + "/sh", m
PY
expect_error 2 "--benchmark_out=$work: is a folder" "$bench" --benchmark_out="$work"
expect_error 2 "does not exist" "$bench" --benchmark_out="$work/no/such/out.json"
# The results are renamed onto --benchmark_out at the end: a FIFO (or a device) in its place is
# refused, by the check too, and left as it is; a link to a file gets the results in that file.
mkfifo "$work/out.fifo"
expect_error 2 "--benchmark_out=$work/out.fifo: a FIFO (named pipe), expected a regular file or a new file name" \
  "$bench" --tunebench_shapes="$tiny" --benchmark_out="$work/out.fifo"
expect_error 2 "a FIFO (named pipe), expected a regular file" "$bench" --tunebench_check=1 --benchmark_out="$work/out.fifo"
[ -p "$work/out.fifo" ] || fail "a refused FIFO was replaced"
ln -s "$work/gone.json" "$work/dangling.json"
expect_error 2 "a symbolic link to a missing target, expected a regular file" "$bench" --benchmark_out="$work/dangling.json"
echo old >"$work/linked.json"
ln -s linked.json "$work/link.json"
"$bench" --tunebench_shapes="$tiny" --benchmark_min_time=0.01 --benchmark_out="$work/link.json" >/dev/null 2>"$work/err" ||
  fail "a run to a link: $(cat "$work/err")"
[ -L "$work/link.json" ] || fail "--benchmark_out replaced the link it was given"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["benchmarks"]' "$work/linked.json" ||
  fail "the link's file did not get the results"
expect_error 2 "TUNEBENCH_KERNEL_CACHE='$tiny': is not a folder" env TUNEBENCH_KERNEL_CACHE="$tiny" "$bench"
expect_error 2 "TUNEBENCH_SHAPES: $work/none: no such shape file or folder" env TUNEBENCH_SHAPES="$work/none" "$bench"
expect_error 2 "--tunebench_nope: unknown flag" "$bench" --tunebench_nope=1
expect_error 2 "not a valid regex" "$bench" --benchmark_filter='M:(1'
runs_before=$(ls "$work/runs" | wc -l)
expect_error 2 "--benchmark_out_format='xml': expected console, json or csv" "$bench" --benchmark_out_format=xml
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "a bad output format left a run directory"
runs_before=$(ls "$work/runs" | wc -l)
expect_error 1 "matches no benchmark" "$bench" --tunebench_shapes="$tiny" --benchmark_filter=no_such_op
[ "$(grep -c . "$work/err")" -eq 1 ] || fail "a filter matching nothing printed more than one line: $(cat "$work/err")"
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "a filter matching nothing left a run directory"
[ ! -s "$work/out" ] || [ "$(grep -c . "$work/out")" -le 3 ] || fail "a failed run printed results"
# --help is Google Benchmark's usage, printed from inside Initialize, which then exits: no run folder.
runs_before=$(ls "$work/runs" | wc -l)
"$bench" --help >"$work/out" 2>&1 || fail "bench --help exited $?"
grep -q -- "--benchmark_filter" "$work/out" || fail "bench --help printed no usage: $(head -3 "$work/out")"
grep -q -- "--tunebench_shapes=PATH" "$work/out" || fail "bench --help left out tunebench's own flags: $(head -3 "$work/out")"
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "bench --help left a run directory"
# Google Benchmark 1.8's min time syntax gets tunebench's one line (1.7.1 would print two of its
# own), exit 2, before a run directory is made.
runs_before=$(ls "$work/runs" | wc -l)
expect_error 2 "--benchmark_min_time='100x': expected plain seconds, e.g. 0.5" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_min_time=100x
[ "$(grep -c . "$work/err")" -eq 1 ] || fail "--benchmark_min_time=100x printed more than one line: $(cat "$work/err")"
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "--benchmark_min_time=100x left a run directory"
# A time unit Google Benchmark 1.7.1 would answer with its usage text and exit status 0.
runs_before=$(ls "$work/runs" | wc -l)
expect_error 2 "--benchmark_time_unit='fortnight': expected ns, us, ms or s" "$bench" --tunebench_shapes="$tiny" \
  --benchmark_time_unit=fortnight
[ "$(grep -c . "$work/err")" -eq 1 ] || fail "--benchmark_time_unit=fortnight printed more than one line: $(cat "$work/err")"
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "--benchmark_time_unit=fortnight left a run directory"
# Control characters in a value or a path are escaped: the one-line error stays one line.
expect_error 2 "TUNEBENCH_SEED='1\n\x1b[31m2': expected a non-negative integer" env TUNEBENCH_SEED=$'1\n\e[31m2' "$bench"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "a seed with a newline printed $(wc -l <"$work/err") lines: $(cat -A "$work/err")"
! grep -q $'\e' "$work/err" || fail "an escape character reached the terminal: $(cat -A "$work/err")"
expect_error 2 "two\nlines: no such shape file or folder" "$bench" --tunebench_shapes="$work/two"$'\n'"lines"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "a shape path with a newline printed $(wc -l <"$work/err") lines: $(cat -A "$work/err")"
echo "bench_cli: all checks passed"
