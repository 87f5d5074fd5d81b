#!/usr/bin/env bash
# TUNEBENCH_ITERATIONS end to end with the CPU op (no GPU needed): a benchmark whose config has a
# stored time gets its iteration count up front (no probe rounds: each repetition is one call),
# under the names a probed run reports; a bad value is one line.
set -euo pipefail
build=${1:?usage: iteration_sizing_test.sh BUILD_DIR}
bench=$build/bench/bench
source "$(dirname "$0")/lib.sh"

set +e
TUNEBENCH_ITERATIONS=fixed "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ >"$work/bad.out" 2>"$work/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "TUNEBENCH_ITERATIONS=fixed exited $rc"
[ "$(wc -l <"$work/bad.err")" = 1 ] && grep -q "TUNEBENCH_ITERATIONS='fixed': expected sized or probed" "$work/bad.err" \
  || fail "bad TUNEBENCH_ITERATIONS message: $(cat "$work/bad.err")"

# A filter anchored on the reported name's end selects what it selects without sizing.
filter='cpu_.*/manual_time$'
run() {  # NAME MIN_TIME [VAR=VALUE...]: one run of the tiny set into $work/NAME.json
  local name=$1 min_time=$2
  shift 2
  env "$@" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
    --benchmark_out="$work/$name.json" >"$work/$name.out" 2>"$work/$name.err" || fail "$name: $(cat "$work/$name.err")"
}
edited_cache() {  # NAME SQL: a copy of the test's cache, $work/NAME.sqlite, with SQL applied
  cp "$TUNEBENCH_CACHE" "$work/$1.sqlite"
  /usr/bin/python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' \
    "$work/$1.sqlite" "$2"
}
note_is_short_calls() {  # NAME MIN_TIME: run NAME's short-benchmark note counts its short calls and names some
  /usr/bin/python3 - "$work/$1.json" "$work/$1.err" "$2" <<'EOF' || fail "$1: the short-benchmark note is not the JSON's calls under min_time: $(cat "$work/$1.err")"
import json, re, sys
unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
doc = json.load(open(sys.argv[1]))
short = {b["run_name"].removesuffix("/manual_time") for b in doc["benchmarks"]
         if b.get("run_type") == "iteration" and b["iterations"] * b["real_time"] * unit[b["time_unit"]] < float(sys.argv[3])}
note = [l for l in open(sys.argv[2]) if "ran less than" in l]
count = int(re.match(r"bench: (\d+) sized benchmarks? ran less than", note[0]).group(1)) if note else 0
named = set(re.findall(r"(cpu_\S+?): [0-9.e+-]+ s", note[0])) if note else set()
sys.exit(0 if count == len(short) and named <= short else 1)
EOF
}
run cold 0.01                              # empty cache: tuned in the loop, so probed
run sized 0.01                             # the cache answers every key
# Probed with a min_time no single iteration reaches, even on a loaded machine: rounds are run.
run probed 0.2 TUNEBENCH_ITERATIONS=probed
"$bench" --tunebench_shapes="$tiny" --benchmark_filter="$filter" --benchmark_min_time=0.01 --benchmark_repetitions=3 \
  --benchmark_out="$work/reps.json" >/dev/null 2>"$work/reps.err" || fail "repetitions: $(cat "$work/reps.err")"
grep -Eq '^bench: timing: .*, [0-9]+ benchmarks? \([0-9]+ with iteration counts sized from stored times\)' \
  "$work/sized.err" || fail "no sized count in the timing line: $(cat "$work/sized.err")"
# The note of short benchmarks counts those whose calls measured less than min_time: none
# on a quiet machine, but a cold run timed under load stores times the sized run then beats.
note_is_short_calls sized 0.01
# --benchmark_min_time=0 (Google Benchmark reports its first round of one iteration): one iteration.
run zero 0
# Stored times 100000 times longer than the runs are now (a host op tuned on a loaded machine,
# exaggerated so that even this machine's load cannot make one run reach min_time): the counts
# fall short of min_time, and one line says so and what to do.
edited_cache stale "UPDATE measurements SET p50_ns = p50_ns * 100000"
run stale 1 TUNEBENCH_CACHE="$work/stale.sqlite"
grep -Eq '^bench: [0-9]+ sized benchmarks? ran less than --benchmark_min_time \(1 s\) of runs, .*--tunebench_iterations=probed' \
  "$work/stale.err" || fail "no note of counts sized from stale times: $(cat "$work/stale.err")"
note_is_short_calls stale 1

# Stored times far shorter than the runs (a cache tuned on a quiet machine, timed under load):
# the counts run far past min_time, and one line says so. 100 ns for every row, not the stored
# times over 50: a cold run tuned under ctest -j2's load once stored times over 50 x the runs'
# (seen in a clean-clone CI run), and no host run of the CPU op is as short as 100 ns.
edited_cache fast "UPDATE measurements SET p50_ns = 100 WHERE p50_ns IS NOT NULL"
run fast 0.001 TUNEBENCH_CACHE="$work/fast.sqlite"
grep -Eq '^bench: [0-9]+ sized benchmarks? ran more than 4 x --benchmark_min_time \(0.001 s\) of runs, .*--tunebench_iterations=probed' \
  "$work/fast.err" || fail "no note of counts sized from times too short: $(cat "$work/fast.err")"
# A min_time shorter than any run: every count is one iteration, the least there is, so no call
# is named as running past min_time (the runs are as long as their stored times said).
run single 0.000001
! grep -q "ran more than" "$work/single.err" || fail "single-iteration calls named as overruns: $(cat "$work/single.err")"
# A time measured on another host (an imported row) sizes nothing: it may be off by any factor.
edited_cache imported "UPDATE measurements SET host = 'elsewhere'"
run imported 0.01 TUNEBENCH_CACHE="$work/imported.sqlite"
grep -Eq '^bench: timing: .*\(0 with iteration counts sized from stored times\)' "$work/imported.err" \
  || fail "a time from another host sized a count: $(cat "$work/imported.err")"

python3 - "$work" "$TUNEBENCH_CACHE" <<'PY' || fail "iteration sizing"
import json, os, sqlite3, sys
work, cache = sys.argv[1], sys.argv[2]

def load(name):
    doc = json.load(open(os.path.join(work, name + ".json")))
    stage = json.load(open(os.path.join(doc["context"]["tunebench_run_dir"], "timing_stage.json")))
    return doc, {b["name"]: b for b in stage["benchmarks"]}

def names(doc):
    return sorted({b["name"] for b in doc["benchmarks"] if b.get("run_type") == "iteration"})

cold, cold_stage = load("cold")
sized, sized_stage = load("sized")
probed, probed_stage = load("probed")
reps, reps_stage = load("reps")
n = len(cold_stage)
assert n >= 4, n
assert cold["context"]["tunebench_timing_sized_benchmarks"] == "0", cold["context"]
assert sized["context"]["tunebench_timing_sized_benchmarks"] == str(n), sized["context"]
assert sized["context"]["tunebench_iterations"] == "sized"
assert probed["context"]["tunebench_timing_sized_benchmarks"] == "0"
assert probed["context"]["tunebench_iterations"] == "probed"
zero, _ = load("zero")
assert all(b["iterations"] == 1 for b in zero["benchmarks"] if b.get("run_type") == "iteration"), zero["benchmarks"]
# The same names whichever way the count was found: compare.py and dashboards pair them.
for doc in (cold, sized, probed, reps):
    assert names(doc) == names(cold), names(doc)
    for b in doc["benchmarks"]:
        assert "iterations:" not in b["name"] and "iterations:" not in b["run_name"], b["name"]
for b in sized["benchmarks"]:
    family = b["name"][: -len("/manual_time")]
    stage = sized_stage[family]
    # Sized: the count given up front, run in one call (the stage counts every call's runs).
    assert stage["sized_iterations"] == b["iterations"], (family, stage, b["iterations"])
    assert stage["runs"] == b["iterations"], (family, stage, b["iterations"])
    # The count is 1.4 x min_time over the stored p50 of the config it ran (the label).
    m, n, k = (int(p.split(":")[1]) for p in family.split("/")[2:5])
    p50 = sqlite3.connect(cache).execute(
        "SELECT p50_ns FROM measurements WHERE op = ? AND tuning_key = ? AND config = ? AND status = 'ok'",
        (family.split("/")[0], f"M={m},N={n},K={k}", b["label"])).fetchone()[0]
    assert b["iterations"] == max(1, round(1.4 * 0.01 / (p50 * 1e-9))), (family, p50, b["iterations"])
for b in probed["benchmarks"]:
    family = b["name"][: -len("/manual_time")]
    assert probed_stage[family]["sized_iterations"] is None
    assert probed_stage[family]["runs"] > b["iterations"], (family, probed_stage[family], b)  # the probe rounds
for family, stage in reps_stage.items():
    assert stage["runs"] == 3 * stage["sized_iterations"], (family, stage)
# The wall's split: preparing and setting up (the warm-up run) are parts of a benchmark's calls.
for stage in list(cold_stage.values()) + list(reps_stage.values()):
    assert stage["setup_seconds"] > 0, stage
    assert stage["prepare_seconds"] + stage["setup_seconds"] + stage["kernel_seconds"] <= stage["seconds"], stage
PY
echo "iteration sizing: ok"
