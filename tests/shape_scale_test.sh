#!/usr/bin/env bash
# Shape sets of real size: planning and listing are linear in the number of shapes (Google
# Benchmark 1.7.1's FindBenchmarks is quadratic under the filter ".", which bench never hands
# it), the names are the same whichever spelling of "everything" selects them, and a shape path
# beyond the stated limit (kMaxShapes, kMaxShapeFileBytes; README "Shape sets") is refused in
# one line, exit 2, at once.
set -euo pipefail
bench=${1:?usage: shape_scale_test.sh BENCH}
source "$(dirname "$0")/lib.sh"

# A set of COUNT entries of `shapes` (M = 1 .. COUNT) and GEMMS gemms, with moe: so every op of
# bench (5) gets a benchmark per shape.
shape_file() {  # FILE NAME COUNT [GEMMS]
  awk -v name="$2" -v count="$3" -v gemms="${4:-1}" 'BEGIN {
    print "name: " name; print "moe: {experts: 256, top_k: 6}"; print "gemms:"
    for (g = 0; g < gemms; g++) printf "  - {name: g%d, n: %d, k: 4096}\n", g, 4096 + 32 * g
    print "shapes:"
    for (m = 1; m <= count; m++) printf "  - {m: %d, calls: 1}\n", m
  }' >"$1"
}

# 30,000 shapes are 150,000 benchmarks: well within a minute when linear (seconds), hours when
# each family reallocates the whole list as Google Benchmark 1.7.1 does under ".".
shape_file "$work/big.yaml" big 30000
start=$SECONDS
set +e; timeout 120 "$bench" --benchmark_list_tests --tunebench_shapes="$work/big.yaml" >"$work/big.list" 2>"$work/big.err"; rc=$?; set -e
[ "$rc" -eq 0 ] || fail "listing 30000 shapes exited $rc after $((SECONDS - start)) s (124: still running at 120 s): $(head -c 300 "$work/big.err")"
[ "$(wc -l <"$work/big.list")" -eq 150000 ] || fail "listing 30000 shapes: expected 150000 benchmarks, got $(wc -l <"$work/big.list")"
grep -qx 'mxfp4_moe/big/M:30000/N:4096/K:4096/E:256/topk:6/manual_time' "$work/big.list" || fail "listing 30000 shapes: the last moe name is missing"

# Every spelling of "everything" lists the same names in the same order as no filter at all,
# for the shipped sets (tests/data/list_tests.txt) and a run's selection alike.
golden=$here/data/list_tests.txt
for filter in . all '' '^'; do
  "$bench" --benchmark_list_tests --benchmark_filter="$filter" >"$work/all.list"
  cmp -s "$golden" "$work/all.list" || fail "--benchmark_filter='$filter' lists other names than $golden"
done
"$bench" --benchmark_list_tests --benchmark_filter=-cpu_ >"$work/neg.list"
[ "$(wc -l <"$work/neg.list")" -eq 240 ] && ! grep -q '^cpu_' "$work/neg.list" || fail "--benchmark_filter=-cpu_ listed $(wc -l <"$work/neg.list") names"
"$bench" --tunebench_shapes="$tiny" --benchmark_filter=. --benchmark_min_time=0.01 --benchmark_format=json \
  2>/dev/null >"$work/run.json" || true  # GPU families fail without a GPU: only the names count here
/usr/bin/python3 - "$work/run.json" <<'PY' || fail "a run under --benchmark_filter=. did not run every benchmark once"
import json, sys
names = [b["name"] for b in json.load(open(sys.argv[1]))["benchmarks"]]
assert len(names) == 20 and len(set(names)) == 20, names
PY

# The limit: kMaxShapes (100,000) shapes in all, entries x gemms, over all the files of a folder.
expect_refused() {  # WHAT PATH PATTERN
  local rc
  start=$SECONDS
  set +e; timeout 60 "$bench" --benchmark_list_tests --tunebench_shapes="$2" >"$work/out" 2>"$work/err"; rc=$?; set -e
  [ "$rc" -eq 2 ] || fail "$1: exit status $rc, expected 2: $(head -c 300 "$work/err")"
  [ "$(wc -l <"$work/err")" -eq 1 ] && grep -q "$3" "$work/err" || fail "$1: expected one line matching '$3': $(head -c 300 "$work/err")"
  [ ! -s "$work/out" ] || fail "$1: listed benchmarks before refusing"
}
shape_file "$work/limit.yaml" limit 100000
"$bench" --benchmark_list_tests --tunebench_shapes="$work/limit.yaml" | tail -1 | grep -qx 'bf16_moe/limit/M:100000/N:4096/K:4096/E:256/topk:6/manual_time' \
  || fail "100000 shapes (the limit) were not listed"
shape_file "$work/over.yaml" over 100001
expect_refused "100001 shapes" "$work/over.yaml" "over.yaml: shapes (line 6): 100001 entries x 1 gemm = 100001 shapes, more than a run takes (100000)"
shape_file "$work/over2.yaml" over2 50001 2
expect_refused "50001 entries of 2 gemms" "$work/over2.yaml" "over2.yaml: shapes (line 7): 50001 entries x 2 gemms = 100002 shapes, more than a run takes (100000)"
mkdir "$work/folder"
shape_file "$work/folder/a.yaml" a 60000
shape_file "$work/folder/b.yaml" b 40001
expect_refused "two files over the limit together" "$work/folder" "b.yaml: shapes (line 6): 40001 entries x 1 gemm = 40001 shapes (100001 with the files before it), more than a run takes (100000)"
# A trace far beyond it (the 50 MB one) is refused before it is parsed.
truncate -s 50M "$work/trace.yaml"
expect_refused "a 50 MB shape file" "$work/trace.yaml" "trace.yaml: 52428800 bytes, larger than a shape file may be (8388608 bytes; a run takes at most 100000 shapes)"
[ $((SECONDS - start)) -le 5 ] || fail "a 50 MB shape file took $((SECONDS - start)) s to refuse"
echo "shape_scale: ok"
