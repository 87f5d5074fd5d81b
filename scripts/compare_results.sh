#!/usr/bin/env bash
# compare.py's verdict on two Google Benchmark JSON files, as the A/B scripts print it:
#   scripts/compare_results.sh A.json B.json
# Stops with one line when a file cannot be read or is not Google Benchmark's JSON (exit status
# 2: also an entry without a name, or one that did not fail without finite real_time and
# cpu_time >= 0), and when a file holds no benchmarks or every benchmark of it failed (exit
# status 1: failed entries have time 0 and would compare as +0.0000 or -1.0000); warns when some
# did; no colour codes when stdout is not a terminal.
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
import json, math, sys

def esc(text):
    """Control characters as \\xNN, so that a message stays one line and sends no terminal codes."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(text))

def refuse(path, what):
    expected = "expected a Google Benchmark JSON file (bench --benchmark_out or a run folder's results.json)"
    print(f"compare_results: {esc(path)}: {what}, {expected}", file=sys.stderr)
    sys.exit(2)

def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0

docs = {}
for path in sys.argv[1:]:  # all inputs checked before anything is compared
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        refuse(path, e.strerror)
    except ValueError as e:
        refuse(path, f"not valid JSON ({esc(e)})")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) or \
            not all(isinstance(b, dict) for b in doc["benchmarks"]):
        refuse(path, "no \"benchmarks\" list of objects")
    for i, b in enumerate(doc["benchmarks"]):
        if not isinstance(b.get("name"), str) or not b["name"]:
            refuse(path, f"benchmarks[{i}] has no \"name\"")
        if not b.get("error_occurred") and not (number(b.get("real_time")) and number(b.get("cpu_time"))):
            refuse(path, f"benchmarks[{i}] ({esc(b['name'])}): real_time and cpu_time must be finite numbers >= 0, "
                         f"not {esc(b.get('real_time'))} and {esc(b.get('cpu_time'))}")
    docs[path] = doc
for path in sys.argv[1:]:
    if not docs[path]["benchmarks"]:
        sys.exit(f"compare_results: {esc(path)} holds no benchmarks: nothing to compare")
    runs = [b for b in docs[path]["benchmarks"] if b.get("run_type") == "iteration"]
    failed = [b["name"] for b in runs if b.get("error_occurred")]
    if runs and len(failed) == len(runs):
        sys.exit(f"compare_results: every benchmark failed in {esc(path)} (first: {esc(failed[0])}: "
                 f"{esc(runs[0].get('error_message', ''))}): nothing to compare")
    if failed:
        print(f"compare_results: WARNING: {len(failed)} benchmarks failed in {esc(path)}; compare.py shows them as "
              f"+0.0000 or -1.0000 (first: {esc(failed[0])})", file=sys.stderr)
PY
color=()
[ -t 1 ] || color=(--no-color)
exec "$python" "$compare" "${color[@]}" benchmarks "$1" "$2"
