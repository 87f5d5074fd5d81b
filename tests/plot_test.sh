#!/usr/bin/env bash
# scripts/plot.py on a CPU run of bench (no GPU needed): the pictures of a run directory (latency
# per shape set, the sweep timeline) are non-empty PNGs of a readable size, with their SVGs; a
# file that is not Google Benchmark JSON is refused in one line.
set -euo pipefail
bench=${1:?usage: plot_test.sh BENCH}
here=$(cd "$(dirname "$0")" && pwd)
plot=$here/../scripts/plot.py
tiny=$here/data/dsv4f_decode_tiny.yaml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset TUNEBENCH_SHAPES TUNEBENCH_SEED USE_FLAGTUNE TUNEBENCH_FAULT_INJECT PARALLEL_WARMUP_GPUS REPLAY_FROM TUNEBENCH_SWEEP
export TUNEBENCH_KERNEL_CACHE=$work/kernels TUNEBENCH_RUNS=$work/runs TUNEBENCH_CACHE=$work/cache.sqlite

# The isolated sweep keeps sweep.jsonl in the run directory: the timeline's source.
TUNEBENCH_ISOLATE_SWEEP=1 "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 \
  --benchmark_repetitions=3 >"$work/bench.out" 2>"$work/bench.err" || fail "bench: $(cat "$work/bench.err")"
run_dir=$(ls -d "$work"/runs/*/ | head -1)
[ -f "$run_dir/sweep.jsonl" ] || fail "no sweep.jsonl in $run_dir"
/usr/bin/python3 "$plot" "$run_dir" >"$work/plot.out" 2>"$work/plot.err" || fail "plot.py: $(cat "$work/plot.err")"
for stem in latency-dsv4f_decode_tiny sweep-timeline; do
  [ -s "$run_dir/$stem.svg" ] || fail "no $stem.svg: $(cat "$work/plot.out")"
  /usr/bin/python3 - "$run_dir/$stem.png" <<'PY' || fail "$stem.png is not a readable picture"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert width >= 400 and height >= 200, (width, height)
assert len(data) > 10000, len(data)
print(sys.argv[1], width, height, len(data))
PY
done
grep -q "latency-dsv4f_decode_tiny.png" "$work/plot.out" || fail "plot.py did not list what it wrote"
# --out puts them elsewhere; a JSON file works as well as its run directory.
/usr/bin/python3 "$plot" "$run_dir/results.json" --out "$work/pictures" >/dev/null 2>&1 || fail "plot.py --out"
[ -s "$work/pictures/latency-dsv4f_decode_tiny.png" ] || fail "--out wrote nothing there"

# An A/B folder of scripts/ab_test.sh: the ratio of each benchmark with its interval.
BENCH="$bench" "$here/../scripts/ab_test.sh" --rounds 1 FLAGGEMS_MXFP4_FOLDSCALE 0 1 --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_ --benchmark_min_time=0.01 >/dev/null 2>"$work/ab.err" || fail "ab_test.sh: $(cat "$work/ab.err")"
ab_dir=$(ls -d "$work"/runs/ab-*/ | head -1)
/usr/bin/python3 "$plot" "$ab_dir" >/dev/null 2>"$work/ab-plot.err" || fail "plot.py on an A/B folder: $(cat "$work/ab-plot.err")"
[ -s "$ab_dir/ab-ratio.png" ] && [ -s "$ab_dir/ab-ratio.svg" ] || fail "no ab-ratio picture in $ab_dir"
# Two inputs into one folder: each picture named after its input, none overwritten.
/usr/bin/python3 "$plot" "$ab_dir" "$run_dir" --out "$work/both" >/dev/null 2>"$work/both.err" || fail "plot.py, two inputs: $(cat "$work/both.err")"
ab_name=$(basename "$ab_dir") run_name=$(basename "$run_dir")
for f in "ab-ratio-$ab_name.png" "latency-dsv4f_decode_tiny-$run_name.png"; do
  [ -s "$work/both/$f" ] || fail "two inputs into one --out: no $f ($(ls "$work/both" | tr '\n' ' '))"
done

# Not Google Benchmark JSON: one line naming the file, a non-zero exit, nothing written.
printf 'name,real_time\nx,1\n' >"$work/results.csv"
echo '{"configs": []}' >"$work/other.json"
for bad in "$work/results.csv" "$work/other.json" "$work/missing.json" "$work/pictures"; do
  if /usr/bin/python3 "$plot" "$bad" --out "$work/bad" >"$work/bad.out" 2>"$work/bad.err"; then fail "plot.py accepted $bad"; fi
  [ "$(wc -l <"$work/bad.err")" = 1 ] && grep -q "^plot.py: $bad: " "$work/bad.err" || fail "message for $bad: $(cat "$work/bad.err")"
  [ -z "$(ls "$work/bad" 2>/dev/null)" ] || fail "plot.py wrote pictures for $bad"
done
echo "plot.py: ok"
