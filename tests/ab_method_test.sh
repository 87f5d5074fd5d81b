#!/usr/bin/env bash
# The A/B method on the CPU op (no GPU needed): an A/A flags no more benchmarks than its false-
# positive rate allows, the positive control (TUNEBENCH_FAULT_INJECT=slowdown, every timed run
# 2x longer) is flagged slower everywhere with the injected ratio in the interval, and bad
# arguments get one line and exit status 2.
set -euo pipefail
bench=${1:?usage: ab_method_test.sh BENCH}
here=$(cd "$(dirname "$0")" && pwd)
ab=$here/../scripts/ab_test.sh
tiny=$here/data/dsv4f_decode_tiny.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset TUNEBENCH_SHAPES TUNEBENCH_SEED USE_FLAGTUNE TUNEBENCH_FAULT_INJECT PARALLEL_WARMUP_GPUS REPLAY_FROM TUNEBENCH_SWEEP
export TUNEBENCH_KERNEL_CACHE=$work/kernels TUNEBENCH_RUNS=$work/runs TUNEBENCH_CACHE=$work/cache.sqlite BENCH=$bench
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

# Bad arguments: one line, exit status 2, before any run.
for bad in "--rounds 0 X 0 1" "--rounds x X 0 1" "--resolution 2 X 0 1" "--aa X" "X 0"; do
  set +e
  # shellcheck disable=SC2086
  "$ab" $bad >/dev/null 2>"$work/bad.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/bad.err")" = 1 ] || fail "ab_test.sh $bad: exit $rc, $(cat "$work/bad.err")"
done
echo "A/B method: ok"
