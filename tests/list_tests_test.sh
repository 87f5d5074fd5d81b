#!/usr/bin/env bash
# Benchmark names are the contract compare.py pairs runs by: the listing of the shipped shape
# sets must stay byte for byte what tests/data/list_tests.txt holds. After a deliberate change
# of names, regenerate it with: build/bench/bench --benchmark_list_tests > tests/data/list_tests.txt
set -euo pipefail
bench=${1:?usage: list_tests_test.sh BENCH}
golden=$(cd "$(dirname "$0")" && pwd)/data/list_tests.txt
unset TUNEBENCH_SHAPES
listing=$(mktemp)
trap 'rm -f "$listing"' EXIT
"$bench" --benchmark_list_tests >"$listing"
if ! diff -u "$golden" "$listing"; then
  echo "FAIL: bench --benchmark_list_tests differs from $golden (diff above: - golden, + now)" >&2
  exit 1
fi
