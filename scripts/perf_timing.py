#!/usr/bin/env python3
"""The timing stage's cost, an old way of timing against a new one, in one session:

    scripts/perf_timing.py [--filter F] [--rounds N] [--vary VAR=OLD,NEW] [--out DIR] [BENCH_ARGS...]

Runs bench once from an empty config cache with VAR=NEW (the sweep fills the cache), then, on
that cache, alternately VAR=OLD and VAR=NEW for --rounds rounds (default 1; 0: the first run
alone), each a whole process. --vary defaults to TUNEBENCH_TIMING_LOOP=eager,graph (the eager loop
against the graph-batched one); TUNEBENCH_ITERATIONS=probed,sized compares Google Benchmark's
probe rounds with counts sized up front; OLD equal to NEW is the A/A of the figure. From each run
directory's timing_stage.json it prints the stage's wall, kernel time (Google Benchmark's probes
included) and busy fraction, overall and per class of keys (op x decode/prefill), and from the
results the per-benchmark ratio NEW / OLD (median over rounds), with how many benchmarks lie
within 1% of 1. The first run's end-to-end wall is the main job's from a fresh cache. BENCH=PATH
names the binary (default build/bench/bench).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def run_bench(bench, args, env, log):
    started = time.monotonic()
    with open(log, "w") as err:
        rc = subprocess.run([bench] + args, env=env, stdout=subprocess.DEVNULL, stderr=err).returncode
    if rc != 0:
        sys.exit(f"perf_timing: {' '.join([bench] + args)} exited {rc} (log: {log})")
    return time.monotonic() - started


def key_class(name):
    op, bench_set = name.split("/")[:2]
    return f"{op} {'decode' if 'decode' in bench_set else 'prefill' if 'prefill' in bench_set else bench_set}"


def stage(runs_dir):
    dirs = sorted(p for p in pathlib.Path(runs_dir).iterdir() if (p / "timing_stage.json").is_file())
    return json.loads((dirs[-1] / "timing_stage.json").read_text())


def times(results):
    doc = json.loads(pathlib.Path(results).read_text())
    return {b["run_name"]: b["real_time"] for b in doc["benchmarks"] if b.get("run_type") == "iteration"}


def print_stage(label, s):
    # setup_seconds: the warm-up, eager cycle and batch capture of each benchmark's first call
    # (absent from a run directory written before it was recorded).
    print(f"{label}: {s['kernel_seconds']:.1f} s kernel time in {s['seconds']:.1f} s "
          f"({100 * s['busy_fraction']:.0f}% busy), {s['prepare_seconds']:.1f} s preparing, "
          f"{s.get('setup_seconds', 0):.1f} s setting up timed runs")
    classes = {}
    for b in s["benchmarks"]:
        c = classes.setdefault(key_class(b["name"]), [0, 0.0, 0.0, 0.0, 0.0])
        c[0] += 1
        c[1] += b["seconds"]
        c[2] += b["kernel_seconds"]
        c[3] += b["prepare_seconds"]
        c[4] += b.get("setup_seconds", 0)
    for name, (n, wall, kernel, prep, setup) in sorted(classes.items()):
        print(f"  {name:24s} {n:4d} benchmarks {wall:7.1f} s wall {kernel:7.1f} s kernel "
              f"{100 * kernel / wall if wall else 0:5.1f}% busy {prep:6.1f} s preparing {setup:6.2f} s setting up")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--filter", default="")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--out", default="")
    p.add_argument("--vary", default="TUNEBENCH_TIMING_LOOP=eager,graph")
    a, rest = p.parse_known_args()
    var, _, values = a.vary.partition("=")
    old, _, new = values.partition(",")
    if not var or not old or not new or "," in new:
        sys.exit(f"perf_timing: --vary={a.vary}: expected VAR=OLD,NEW (e.g. TUNEBENCH_ITERATIONS=probed,sized)")
    if a.rounds < 0:
        sys.exit(f"perf_timing: --rounds={a.rounds}: expected 0 (the fresh run alone) or more")
    here = pathlib.Path(__file__).resolve().parent.parent
    bench = os.environ.get("BENCH", str(here / "build/bench/bench"))
    if not os.access(bench, os.X_OK):
        sys.exit(f"perf_timing: no {bench} (build first: scripts/build.sh; BENCH=PATH names another)")
    work = pathlib.Path(a.out or tempfile.mkdtemp(prefix="perf_timing."))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    for v in ("REPLAY_FROM", "PARALLEL_WARMUP_GPUS", "TUNEBENCH_TIMING_LOOP", "TUNEBENCH_ITERATIONS", "USE_FLAGTUNE", var):
        env.pop(v, None)
    env["TUNEBENCH_CACHE"] = str(work / "configs.sqlite")
    env.setdefault("TUNEBENCH_KERNEL_CACHE", str(work / "kernels"))
    args = ([f"--benchmark_filter={a.filter}"] if a.filter else []) + rest
    ratios = {}
    for r in range(a.rounds + 1):
        for side, value in ([("new", new)] if r == 0 else [("old", old), ("new", new)]):
            tag = f"{r}-{side}"
            env["TUNEBENCH_RUNS"] = str(work / f"runs-{tag}")
            env[var] = value
            wall = run_bench(bench, args + [f"--benchmark_out={work / (tag + '.json')}"], env, work / f"{tag}.log")
            s = stage(work / f"runs-{tag}")
            print_stage(f"round {r} {var}={value} (whole process {wall:.1f} s"
                        f"{', empty cache' if r == 0 else ''})", s)
        if r > 0:
            n_, o_ = times(work / f"{r}-new.json"), times(work / f"{r}-old.json")
            for name in n_.keys() & o_.keys():
                ratios.setdefault(name, []).append(n_[name] / o_[name])
    med = {n: statistics.median(v) for n, v in ratios.items()}
    if med:
        within = sum(1 for v in med.values() if abs(v - 1) <= 0.01)
        print(f"{var} {new} / {old} per benchmark (median of {a.rounds} rounds): median {statistics.median(med.values()):.4f}, "
              f"{within} of {len(med)} within 1%; worst {min(med.values()):.4f} .. {max(med.values()):.4f}")
    print(f"perf_timing: runs kept in {work}")


if __name__ == "__main__":
    main()
