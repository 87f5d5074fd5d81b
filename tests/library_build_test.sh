#!/usr/bin/env bash
# Google Benchmark's "Library was built as DEBUG" (Debian's libbenchmark 1.7.1 lacks NDEBUG):
# wherever the library says so, the JSON context says what it does and does not affect
# (tunebench_library_build_note), as README.md does; where it does not, no note.
set -euo pipefail
bench=${1:?usage: library_build_test.sh BENCH README}
readme=${2:?usage: library_build_test.sh BENCH README}
source "$(dirname "$0")/lib.sh"

"$bench" --tunebench_shapes="$tiny" --benchmark_filter='^cpu_mxfp4_gemm/.*/M:1/N:256/' --benchmark_min_time=0.01 \
  --benchmark_out="$work/run.json" >"$work/console" 2>"$work/err" || fail "bench failed: $(cat "$work/err")"
warned=0
grep -q 'Library was built as DEBUG' "$work/console" "$work/err" && warned=1
/usr/bin/python3 - "$work/run.json" "$warned" "$readme" <<'PY' || fail "the JSON context's note on the library's build"
import json, sys
ctx = json.load(open(sys.argv[1]))["context"]
warned = sys.argv[2] == "1"
note = ctx.get("tunebench_library_build_note")
assert warned == (ctx["library_build_type"] == "debug"), (warned, ctx["library_build_type"])
if not warned:
    assert note is None, note
    sys.exit(0)
assert note, "library_build_type is debug and there is no tunebench_library_build_note"
for words in ("without NDEBUG", "consistency checks (BM_CHECK)", "outside the measured time", "manual times",
              "do not include them", "cpu_time"):
    assert words in note, (words, note)
readme = " ".join(open(sys.argv[3]).read().split())
for words in ("Library was built as DEBUG", "consistency checks (BM_CHECK) run, outside the measured time",
              "It does not affect the times bench reports", "`tunebench_library_build_note`"):
    assert words in readme, ("README.md lacks", words)
PY
echo "library_build: ok (library warned: $warned)"
