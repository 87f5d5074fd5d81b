#!/usr/bin/env bash
# The A/B method on the CPU op (no GPU needed): an A/A flags no more benchmarks than its false-
# positive rate allows, the positive control (TUNEBENCH_FAULT_INJECT=slowdown, every timed run
# 2x longer) is flagged slower everywhere with the injected ratio in the interval, failed
# benchmarks are counted and named in the verdict, ab_fold_test.sh --aa is the A/A of FOLDSCALE=0,
# a failing process is named with bench's exit status, and bad arguments get one line and exit
# status 2 before any run.
set -euo pipefail
bench=${1:?usage: ab_method_test.sh BENCH}
source "$(dirname "$0")/lib.sh"
ab=$here/../scripts/ab_test.sh
export BENCH=$bench
# One thread: the CPU op's OpenMP threads on a small, shared machine move whole processes (README).
export OMP_NUM_THREADS=1
common=(--tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01)
verdict() {  # one line per benchmark of the last A/B: verdict|ratio|ci_low|ci_high
  /usr/bin/python3 -c 'import json,sys
for b in json.load(open(sys.argv[1]))["benchmarks"]: print("|".join(str(b[k]) for k in ("verdict", "ratio", "ci_low", "ci_high")))' \
    "$(ls -d "$work"/runs/ab-*/ | tail -1)/verdict.json"
}

# A/A: both sides identical; at 95% intervals about 5% flag; of 4 benchmarks, at most 1.
"$ab" --rounds 4 --aa FLAGGEMS_MXFP4_FOLDSCALE 0 "${common[@]}" >"$work/aa.txt" 2>"$work/aa.err" || fail "A/A: $(cat "$work/aa.err")"
grep -Eq '^A/A: [0-9]+ of 4 benchmarks flagged' "$work/aa.txt" || fail "no A/A line: $(cat "$work/aa.txt")"
flagged=$(verdict | grep -Ec '^(slower|faster)\|' || true)
[ "$flagged" -le 1 ] || fail "the A/A flagged $flagged of 4: $(cat "$work/aa.txt")"
[ "$(ls -d "$work"/runs/ab-*/ | tail -1)"/a-8.json ] && [ -f "$(ls -d "$work"/runs/ab-*/ | tail -1)/b-8.json" ] \
  || fail "the per-process files are not kept beside the merged ones"

# Positive control: B's every timed run takes twice as long; each benchmark slower, 2 in its
# interval widened by 5% either way (other load on a small machine moves whole processes).
"$ab" --rounds 4 TUNEBENCH_FAULT_INJECT none slowdown=1 "${common[@]}" >"$work/pc.txt" 2>"$work/pc.err" \
  || fail "positive control: $(cat "$work/pc.err")"
while IFS='|' read -r v ratio low high; do
  [ "$v" = slower ] || fail "the positive control was not flagged slower ($v, B/A $ratio): $(cat "$work/pc.txt")"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$low') / 1.05 <= 2.0 <= float('$high') * 1.05 else 1)" \
    || fail "the injected ratio 2 is outside [$low, $high]: $(cat "$work/pc.txt")"
done < <(verdict)
[ "$(verdict | wc -l)" = 4 ] || fail "not 4 benchmarks in the verdict"
# The merged files are Google Benchmark JSON whose repetitions are the 8 per-process medians.
/usr/bin/python3 - "$(ls -d "$work"/runs/ab-*/ | tail -1)/b.json" <<'PY' || fail "b.json is not the merged per-process medians"
import json, sys
d = json.load(open(sys.argv[1]))
its = [b for b in d["benchmarks"] if b["run_type"] == "iteration"]
assert len(its) == 4 * 8 and all(b["repetitions"] == 8 for b in its), len(its)
assert d["context"]["tunebench_ab_processes"] == "8"
PY

# A benchmark that one process did not run at all (no error) is named and counted, not dropped.
aa_dir=$(ls -d "$work"/runs/ab-*/ | head -1)
mkdir -p "$work/partial"
/usr/bin/python3 - "$aa_dir" "$work/partial" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "[ab]-*.json"))):
    d = json.load(open(f))
    if os.path.basename(f) == "b-2.json":
        gone = d["benchmarks"][0]["run_name"]
        d["benchmarks"] = [b for b in d["benchmarks"] if b.get("run_name") != gone]
    json.dump(d, open(os.path.join(sys.argv[2], os.path.basename(f)), "w"))
PY
/usr/bin/python3 "$here/../scripts/ab_verdict.py" --a "$work"/partial/a-*.json --b "$work"/partial/b-*.json \
  --out "$work/partial/out" >"$work/partial.txt" || fail "ab_verdict.py on a partial process: $(cat "$work/partial.txt")"
grep -Eq '^verdict: 3 benchmarks, .*; 1 benchmark missing from some processes is left out$' "$work/partial.txt" \
  && grep -q '^left out: .* ran in 15 of 16 processes$' "$work/partial.txt" \
  || fail "a benchmark missing from one process was not reported: $(cat "$work/partial.txt")"

# Benchmarks that fail (GPU ops with no GPU visible) are counted in the summary and named in
# verdict.json, not dropped unseen; every process leaves its run directory beside the A/B folder.
CUDA_VISIBLE_DEVICES='' TUNEBENCH_RUNS=$work/runs-failed "$ab" --rounds 1 FLAGGEMS_MXFP4_FOLDSCALE 0 1 "${common[@]}" \
  '--benchmark_filter=^(cpu|mxfp4_gemm)' >/dev/null 2>"$work/failed.err" || fail "A/B with failing benchmarks: $(cat "$work/failed.err")"
failed_ab=$(ls -d "$work"/runs-failed/ab-*/)
grep -Eq '^verdict: 4 benchmarks, .*; 4 benchmarks failed on a side and are left out$' "$failed_ab/verdict.txt" \
  || fail "the verdict does not count the failed benchmarks: $(cat "$failed_ab/verdict.txt")"
/usr/bin/python3 - "$failed_ab/verdict.json" <<'PY' || fail "verdict.json does not name the failed benchmarks"
import json, sys
v = json.load(open(sys.argv[1]))
names = sorted(f["benchmark"] for f in v["failed"])
assert len(names) == 4 and all(n.startswith("mxfp4_gemm/") for n in names), names
assert all(f["sides"] == ["A", "B"] for f in v["failed"]), v["failed"]
assert "4 benchmarks failed on a side and are left out" in v["summary"], v["summary"]
PY
[ "$(find "$work/runs-failed" -mindepth 1 -maxdepth 1 -type d ! -name 'ab-*' | wc -l)" = 5 ] \
  || fail "not the 4K+1 = 5 run directories beside the A/B folder: $(ls "$work/runs-failed" | tr '\n' ' ')"

# ab_fold_test.sh --aa: the A/A of FOLDSCALE=0 (of the CPU op here: the later filter wins).
TUNEBENCH_RUNS=$work/runs-fold "$here/../scripts/ab_fold_test.sh" --aa --rounds 1 "${common[@]}" >"$work/fold.txt" \
  2>"$work/fold.err" || fail "ab_fold_test.sh --aa: $(cat "$work/fold.err")"
/usr/bin/python3 - "$(ls -d "$work"/runs-fold/ab-*/)/verdict.json" <<'PY' || fail "ab_fold_test.sh --aa is not the A/A of FOLDSCALE=0"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["aa"] is True and v["what"].startswith("FLAGGEMS_MXFP4_FOLDSCALE: A=0, B=0;"), (v["aa"], v["what"])
assert len(v["benchmarks"]) == 4, len(v["benchmarks"])
PY

# A replay that fails: which process, in ab_test's words, with bench's exit status passed through.
printf '#!/bin/sh\ncase "$*" in *--tunebench_check=1*) ;; *) if [ "${AB_X:-}" = 2 ]; then echo "bench: failed on purpose" >&2; exit 3; fi ;; esac\nexec "%s" "$@"\n' \
  "$bench" >"$work/failing-bench"
chmod +x "$work/failing-bench"
set +e
BENCH=$work/failing-bench "$ab" --rounds 1 AB_X 1 2 "${common[@]}" >/dev/null 2>"$work/replay.err"
rc=$?
set -e
[ "$rc" = 3 ] && grep -qx "ab_test: round 1, B (AB_X=2) failed (bench's exit status 3)" "$work/replay.err" \
  || fail "a failing replay: exit $rc, $(cat "$work/replay.err")"
# What it leaves is said: the record run and round 1's A stay (bench's), the A/B folder does not.
grep -Eq "^ab_test: stopped before the verdict; the 2 run directories, .* stay in $work/runs\$" "$work/replay.err" \
  || fail "a failing replay did not name the run directories it left: $(cat "$work/replay.err")"

# A replay stopped mid-run (SIGTERM: a background job of a script ignores SIGINT): the line also
# names the run directory it left half-made, whose manifest still says running.
printf '#!/bin/sh\ncase "$*" in *--tunebench_check=1*) ;; *) if [ "${AB_X:-}" = 2 ]; then "%s" "$@" --benchmark_min_time=5 & sleep 2; kill -TERM $!; wait $!; exit $?; fi ;; esac\nexec "%s" "$@"\n' \
  "$bench" "$bench" >"$work/stopped-bench"
chmod +x "$work/stopped-bench"
set +e
TUNEBENCH_RUNS=$work/runs-stopped BENCH=$work/stopped-bench "$ab" --rounds 1 AB_X 1 2 "${common[@]}" >/dev/null 2>"$work/stopped.err"
rc=$?
set -e
[ "$rc" = 143 ] || fail "a replay stopped by SIGTERM: exit $rc, expected 143: $(cat "$work/stopped.err")"
half=$(grep -l '"status": "running"' "$work"/runs-stopped/*/manifest.json | xargs -n1 dirname | xargs -n1 basename)
[ "$(echo "$half" | wc -w)" = 1 ] || fail "expected one half-made run directory, found: $half"
grep -Eq "^ab_test: stopped before the verdict; the 3 run directories, .* stay in $work/runs-stopped; $half stopped mid-run \(its manifest still says running\)\$" \
  "$work/stopped.err" || fail "the half-made run directory is not named: $(cat "$work/stopped.err")"

# Bad arguments or settings: one line, exit status 2, before any run (nothing left under
# TUNEBENCH_RUNS): ab_test's own checks, and bench's bad settings in bench's own line. Each case
# is ENVIRONMENT|ARGUMENTS|the line expected.
before=$(ls "$work/runs" | wc -l)
while IFS='|' read -r environment arguments expected; do
  set +e
  # shellcheck disable=SC2086
  env ${environment:+"$environment"} "$ab" $arguments >/dev/null 2>"$work/bad.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/bad.err")" = 1 ] && grep -Eq "$expected" "$work/bad.err" \
    || fail "ab_test.sh $environment $arguments: exit $rc, $(cat "$work/bad.err"), expected /$expected/"
done <<EOF
|--rounds 0 X 0 1|^ab_test: --rounds '0': 
|--rounds x X 0 1|^ab_test: --rounds 'x': 
|--resolution 2 X 0 1|^ab_test: --resolution '2': 
|--aa X|^usage: 
|X 0|^usage: 
|--rounds=2 --bogus X 1 2|^ab_test: unknown option --bogus
PYTHON=/nonexistent|X 0 1|^ab_test: PYTHON=/nonexistent: 
PYTHON=/bin/false|X 0 1|^ab_test: PYTHON=/bin/false does not import scipy
PYTHON=/bin/true|X 0 1|^ab_test: PYTHON=/bin/true does not import scipy
BENCH=$work|X 0 1|^ab_test: no bench at $work 
|X 0 1 ${common[*]} --benchmark_min_time=1s|^bench: --benchmark_min_time='1s': 
|X 0 1 --tunebench_shapes=/nonexist --benchmark_filter=cpu_|^bench: --tunebench_shapes: /nonexist: 
|X 0 1 --rounds 4|^ab_test: --rounds after VAR: 
|--aa X 0 1 ${common[*]}|^ab_test: '1': expected bench arguments as --name=value
|X 0 1 --help|^ab_test: --help: an A/B times benchmarks
|TUNEBENCH_FAULT_INJECT none slowdown=x ${common[*]}|^bench: TUNEBENCH_FAULT_INJECT='slowdown=x': 
TUNEBENCH_RUNS=/dev/null|X 0 1 ${common[*]}|^ab_test: TUNEBENCH_RUNS=/dev/null: expected a folder
|TUNEBENCH_RUNS $work/r1 $work/r2|^ab_test: TUNEBENCH_RUNS holds the A/B
TUNEBENCH_RUNS=$work/made/for/it|TUNEBENCH_FAULT_INJECT none slowdown=x ${common[*]}|^bench: TUNEBENCH_FAULT_INJECT='slowdown=x': 
|TUNEBENCH_CACHE $work/side-a.sqlite $work ${common[*]}|^bench: config cache $work: 
CUDA_VISIBLE_DEVICES=0|PARALLEL_WARMUP_GPUS 1 2 ${common[*]}|^bench: PARALLEL_WARMUP_GPUS=2 but only 1 device is visible
|CUDA_VISIBLE_DEVICES 0 abc ${common[*]}|^bench: CUDA_VISIBLE_DEVICES='abc': entry 'abc' is not a device
TUNEBENCH_CACHE=$work|X 0 1 ${common[*]}|^bench: config cache $work: 
EOF
[ ! -e "$work/side-a.sqlite" ] || fail "the check before an A/B made side A's cache"
[ ! -e "$work/made" ] || fail "a refused A/B left the folders it made for TUNEBENCH_RUNS"
# A BENCH that is not tunebench's (it names no run directory) is said so, not a silent exit.
set +e
BENCH=/bin/true "$ab" --aa X 0 "${common[@]}" >/dev/null 2>"$work/bad.err"
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "^ab_test: the record run: /bin/true named no run directory" "$work/bad.err" \
  || fail "BENCH=/bin/true: exit $rc, $(cat "$work/bad.err")"
# A filter that selects nothing is bench's exit status 1 (as a plain bench run), found by bench's
# check before the record run.
set +e
"$ab" X 0 1 --benchmark_filter=no_such_benchmark >/dev/null 2>"$work/bad.err"
rc=$?
set -e
[ "$rc" = 1 ] && [ "$(wc -l <"$work/bad.err")" = 1 ] && grep -q "^bench: --benchmark_filter='no_such_benchmark' matches no benchmark" "$work/bad.err" \
  || fail "a filter selecting nothing: exit $rc, $(cat "$work/bad.err")"
[ "$(ls "$work/runs" | wc -l)" = "$before" ] || fail "a refused A/B left a folder under TUNEBENCH_RUNS"
echo "A/B method: ok"
