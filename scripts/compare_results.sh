#!/usr/bin/env bash
# compare.py's verdict on two Google Benchmark JSON files, as the A/B scripts print it:
#   scripts/compare_results.sh A.json B.json
# Stops with one line when a file cannot be read or is not Google Benchmark's JSON (exit status
# 2), and when every benchmark of a file failed (exit status 1: failed entries have time 0 and
# would compare as +0.0000 or -1.0000); warns when some did; no colour codes when stdout is not a
# terminal.
# COMPARE_PY (default /usr/share/benchmark/compare.py, Debian's libbenchmark-tools) and PYTHON
# (default /usr/bin/python3, which has Debian's scipy) name compare.py and its interpreter.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: scripts/compare_results.sh A.json B.json" >&2
  exit 2
fi
python=${PYTHON:-/usr/bin/python3}
compare=${COMPARE_PY:-/usr/share/benchmark/compare.py}
if [ ! -f "$compare" ]; then
  echo "compare_results: no compare.py at $compare (install libbenchmark-tools or set COMPARE_PY); compare with:" >&2
  echo "  compare.py benchmarks $1 $2" >&2
  exit 1
fi
"$python" - "$1" "$2" <<'PY'
import json, sys
docs = {}
for path in sys.argv[1:]:  # all inputs checked before anything is compared
    expected = "expected a Google Benchmark JSON file (bench --benchmark_out or a run folder's results.json)"
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        print(f"compare_results: {path}: {e.strerror}, {expected}", file=sys.stderr)
        sys.exit(2)
    except ValueError as e:
        print(f"compare_results: {path}: not valid JSON ({e}), {expected}", file=sys.stderr)
        sys.exit(2)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) or \
            not all(isinstance(b, dict) for b in doc["benchmarks"]):
        print(f"compare_results: {path}: no \"benchmarks\" list of objects, {expected}", file=sys.stderr)
        sys.exit(2)
    docs[path] = doc
for path in sys.argv[1:]:
    runs = [b for b in docs[path]["benchmarks"] if b.get("run_type") == "iteration"]
    failed = [b["name"] for b in runs if b.get("error_occurred")]
    if runs and len(failed) == len(runs):
        sys.exit(f"compare_results: every benchmark failed in {path} (first: {failed[0]}: "
                 f"{runs[0].get('error_message', '')}): nothing to compare")
    if failed:
        print(f"compare_results: WARNING: {len(failed)} benchmarks failed in {path}; compare.py shows them as "
              f"+0.0000 or -1.0000 (first: {failed[0]})", file=sys.stderr)
PY
color=()
[ -t 1 ] || color=(--no-color)
exec "$python" "$compare" "${color[@]}" benchmarks "$1" "$2"
