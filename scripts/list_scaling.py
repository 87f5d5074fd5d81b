#!/usr/bin/python3
"""How bench's planning scales with the size of a shape set: the wall time and peak memory of
`bench --benchmark_list_tests` (reading the shape file, making and registering every benchmark,
selecting and listing them) against the number of shapes.

usage: scripts/list_scaling.py [--bench PATH] [--counts 1000,10000,100000] [--gemms G]

For each count S a shape file is written into a temporary folder: one set with S entries of
`shapes` (M = 1 .. S), G gemms (default 1, so S shapes are S (M, N, K) triples) and a `moe:`
block, so every op of bench gets a benchmark per shape (bench: 5 benchmarks a shape). One line a
count: shapes, benchmarks listed, seconds, peak resident MB, and seconds per 1000 shapes, which
stays about flat when the planning is linear in the number of shapes. A count above bench's limit
on shapes (README, "Shape sets") shows bench's one-line refusal instead. BENCH (or --bench)
defaults to build/bench/bench.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def shape_file(path, shapes, gemms):
    with open(path, "w", encoding="utf-8") as f:
        f.write("name: scaling\nmoe: {experts: 256, top_k: 6}\ngemms:\n")
        for g in range(gemms):
            f.write(f"  - {{name: g{g}, n: {4096 + 32 * g}, k: 4096}}\n")
        f.write("shapes:\n")
        f.writelines(f"  - {{m: {m}, calls: 1}}\n" for m in range(1, shapes + 1))


def list_once(bench, shapes_path):
    """(benchmarks listed, seconds, peak resident MB, first stderr line, exit status)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        child = subprocess.Popen([bench, "--benchmark_list_tests", f"--tunebench_shapes={shapes_path}"],
                                 stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        listed = sum(1 for _ in out)
        err.seek(0)
        first = err.read().decode("utf-8", "replace").strip().splitlines()
        return listed, seconds, usage.ru_maxrss / 1024, first[0] if first else "", child.returncode


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default=os.environ.get("BENCH", os.path.join(here, "build/bench/bench")))
    parser.add_argument("--counts", default="1000,3000,10000,30000,100000")
    parser.add_argument("--gemms", type=int, default=1)
    args = parser.parse_args()
    try:
        counts = [int(c) for c in args.counts.split(",")]
        if any(c < 1 for c in counts) or args.gemms < 1:
            raise ValueError
    except ValueError:
        print(f"list_scaling.py: --counts {args.counts}: expected positive integers separated by commas", file=sys.stderr)
        sys.exit(2)
    if not os.access(args.bench, os.X_OK):
        print(f"list_scaling.py: no bench at {args.bench} (build first: scripts/build.sh)", file=sys.stderr)
        sys.exit(2)
    print(f"{'shapes':>9} {'benchmarks':>11} {'seconds':>8} {'peak MB':>8} {'s/1000 shapes':>14}")
    with tempfile.TemporaryDirectory() as work:
        for count in counts:
            path = os.path.join(work, f"scaling-{count}.yaml")
            entries = -(-count // args.gemms)
            shape_file(path, entries, args.gemms)
            listed, seconds, peak, first_err, rc = list_once(args.bench, path)
            os.remove(path)
            if rc != 0:
                print(f"{entries * args.gemms:>9} refused (exit {rc}, {seconds:.2f} s): {first_err}")
                continue
            print(f"{entries * args.gemms:>9} {listed:>11} {seconds:>8.2f} {peak:>8.0f} "
                  f"{1000 * seconds / (entries * args.gemms):>14.4f}", flush=True)


if __name__ == "__main__":
    main()
