#!/usr/bin/env python3
"""The cost of tunebench-cache import and export on a cache of real size.

    scripts/cache_transfer_bench.py [--rows N] [--tool PATH] [--keep DIR]

Writes an export of N measurement rows (default 1,000,000) of cpu_mxfp4_gemm, 49 configs (its
expanded space) per tuning key plus each key's best, imports it into a fresh cache, exports the
cache again, and prints for each step the rows, the seconds and the tool's peak resident memory
(getrusage of the child), with its CPU seconds, which a busy machine disturbs less. The rows are made up but pass import's checks, so the checks are
measured too. Needs only Python's standard library and the built tool.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BLOCK_N = [4, 8, 16, 32, 64, 128, 256]
BLOCK_K = [64, 128, 256, 512, 1024, 2048, 4096]
CONFIGS = [f"BLOCK_N={n},BLOCK_K={k}" for n in BLOCK_N for k in BLOCK_K]


def write_export(path, rows):
    """An export of `rows` measurements, a line per row; returns (keys, bests)."""
    now = int(time.time()) - 3600
    keys = (rows + len(CONFIGS) - 1) // len(CONFIGS)
    written = 0
    with open(path, "w") as f:
        f.write('{"tunebench_cache_schema": 3, "entries": [\n')
        for i in range(keys):
            key = {"op": "cpu_mxfp4_gemm", "kernel_version": "cpu_mxfp4_gemm-1", "tuning_key": f"M={i + 1},N=256,K=512",
                   "device_name": "bench CPU", "device_cc": "", "toolkit": "host", "timing_mode": "host"}
            n = min(len(CONFIGS), rows - written)
            best = {"config": CONFIGS[0], "p50_ns": 20000 + i, "updated_at": now}
            f.write(("," if i else "") + '{"key": ' + json.dumps(key) + ', "best": ' + json.dumps(best) +
                    ', "measurements": [\n')
            for j in range(n):
                p50 = 20000 + i + 37 * j
                m = {"config": CONFIGS[j], "status": "ok", "p20_ns": p50 - 100, "p50_ns": p50, "p80_ns": p50 + 100,
                     "error": "", "measured_at": now, "device_uuid": "", "host": "bench-host"}
                f.write(("," if j else "") + json.dumps(m) + "\n")
            f.write("]}\n")
            written += n
        f.write("]}\n")
    return keys, keys


def timed(cmd):
    """Runs `cmd`; returns (wall seconds, CPU seconds, peak RSS in MiB) of that child alone."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"cache_transfer_bench: {' '.join(cmd)} exited {proc.returncode}: {err.strip()}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0  # KiB on Linux


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="measurement rows (default 1000000)")
    p.add_argument("--tool", default=os.path.join(here, "..", "build", "cache", "tunebench-cache"),
                   help="the tunebench-cache binary (default build/cache/tunebench-cache)")
    p.add_argument("--keep", help="a folder to keep the files in (default: a temporary one, removed)")
    a = p.parse_args()
    if a.rows < 1:
        sys.exit("cache_transfer_bench: --rows: expected a count >= 1")
    if not os.access(a.tool, os.X_OK):
        sys.exit(f"cache_transfer_bench: --tool {a.tool}: not an executable (build first: scripts/build.sh)")
    with tempfile.TemporaryDirectory() as scratch:
        work = a.keep or scratch
        os.makedirs(work, exist_ok=True)
        source, cache, out = (os.path.join(work, n) for n in ("rows.json", "cache.sqlite", "export.json"))
        for f in (cache, cache + "-wal", cache + "-shm", out):
            if os.path.exists(f):
                os.remove(f)
        keys, bests = write_export(source, a.rows)
        tool = [a.tool, "--cache=" + cache]
        print(f"{a.rows} measurement rows and {bests} best configs over {keys} keys; "
              f"export file {os.path.getsize(source) / 2**20:.0f} MiB", flush=True)
        print("| step | wall s | CPU s (user + sys) | peak RSS MiB |")
        print("|---|---|---|---|")
        for step, cmd in (("import", tool + ["import", source]), ("export", tool + ["export", out])):
            seconds, cpu, rss = timed(cmd)
            print(f"| {step} | {seconds:.1f} | {cpu:.1f} | {rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
