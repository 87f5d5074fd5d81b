#!/usr/bin/env bash
# Cross-check of tunebench's CUPTI kernel times against Nsight Compute's gpu__time_duration on
# the same kernels (a 50 us spin kernel, mxfp4_gemm at M=8 and M=512 without split-K):
#   scripts/ncu_check.sh [RUNS]        (default 30 runs per kernel; needs a GPU and ncu)
# ncu runs with --cache-control none --clock-control none, so it neither flushes caches nor
# locks clocks between kernels and times them as tunebench does. Prints one row per kernel:
# CUPTI median, ncu median, and their difference in percent.
set -euo pipefail
runs=${1:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
harness=${PERF_HARNESS:-$here/build/tools/perf_harness}
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
[ -x "$harness" ] || { echo "ncu_check: no perf_harness at $harness (build first: scripts/build.sh)" >&2; exit 2; }
[ -x "$ncu" ] || { echo "ncu_check: ncu not found (set NCU=/path/to/ncu)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$harness" --crosscheck="$runs" >"$tmp/cupti.txt"
"$ncu" --metrics gpu__time_duration.sum --cache-control none --clock-control none --print-units base \
  --csv -k 'regex:^(spin|mxfp4_gemm)$' "$harness" --crosscheck="$runs" >"$tmp/ncu.csv" 2>"$tmp/ncu.err" || {
  cat "$tmp/ncu.err" >&2
  echo "ncu_check: ncu failed" >&2
  exit 1
}
/usr/bin/env python3 - "$tmp/cupti.txt" "$tmp/ncu.csv" "$runs" <<'PY'
import csv, statistics, sys
cupti_file, ncu_file, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
cupti = [(l.split()[1], float(l.split()[2]), float(l.split()[3])) for l in open(cupti_file) if l.startswith("crosscheck ")]
rows = [r for r in csv.DictReader(l for l in open(ncu_file) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
# Each case launches its kernel once untimed, then `runs` times back to back and `runs` times
# isolated, in the order of the CUPTI lines; ncu's times are compared with the isolated runs.
per_case = 2 * runs + 1
if len(rows) != per_case * len(cupti):
    sys.exit(f"ncu_check: expected {per_case * len(cupti)} profiled kernels, ncu reported {len(rows)}")
for l in open(cupti_file):
    if l.startswith("case "):
        print(l.rstrip())
print(f"{'kernel':<18} {'CUPTI isolated us':>18} {'CUPTI b2b us':>13} {'ncu us':>10} {'diff %':>8}")
worst = 0.0
for i, (name, isolated_ns, b2b_ns) in enumerate(cupti):
    chunk = rows[i * per_case + 1 + runs:(i + 1) * per_case]
    ncu_ns = statistics.median(float(r["Metric Value"].replace(",", "")) for r in chunk)
    diff = 100.0 * (isolated_ns - ncu_ns) / ncu_ns
    worst = max(worst, abs(diff))
    print(f"{name:<18} {isolated_ns / 1e3:>18.2f} {b2b_ns / 1e3:>13.2f} {ncu_ns / 1e3:>10.2f} {diff:>+8.2f}")
print(f"largest difference {worst:.2f}% (goal: within 2%)")
PY
