#!/usr/bin/python3
"""Predicted MPI sweep time against ranks, from the per-key times of a run's sweep.jsonl.

    scripts/mpi_sweep_model.py runs/<run>/sweep.jsonl [--ranks 1,2,4,8,16,64] [--scale 1]
                               [--retime-fraction 0.25] [--startup 1.0] [--per-key-coord 0.005]

Model (docs/multi-node.md): the keys' sweep seconds (`tuned` records) are dealt largest first to
the least-loaded of R ranks (what rank 0's queue does), each rank paying --startup seconds
for its child process; then rank 0 alone re-times the finalists of the keys swept elsewhere,
(R-1)/R of them, each costing --retime-fraction of its sweep; rank 0 spends --per-key-coord
seconds per key on messages and cache writes, which overlap the sweep but bound it below.
--scale multiplies every key's time (the expanded space: its configs over the default's).
"""
import argparse
import heapq
import json
import sys


def key_seconds(path):
    seconds = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line
            if r.get("record") == "tuned":
                seconds[r["key"]] = max(seconds.get(r["key"], 0.0), float(r["seconds"]))
    if not seconds:
        sys.exit(f"mpi_sweep_model: {path}: no 'tuned' records, expected a run's sweep.jsonl")
    return sorted(seconds.values(), reverse=True)


def predict(costs, ranks, a):
    loads = [(a.startup, i) for i in range(ranks)]
    heapq.heapify(loads)
    for c in costs:
        load, i = heapq.heappop(loads)
        heapq.heappush(loads, (load + c, i))
    makespan = max(load for load, _ in loads)
    coord = a.per_key_coord * len(costs)
    retime = a.retime_fraction * sum(costs) * (ranks - 1) / ranks
    return max(makespan, coord) + retime, makespan, retime, coord


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sweep_jsonl")
    p.add_argument("--ranks", default="1,2,4,8,16,64")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--retime-fraction", type=float, default=0.25)
    p.add_argument("--startup", type=float, default=1.0)
    p.add_argument("--per-key-coord", type=float, default=0.005)
    a = p.parse_args()
    try:
        ranks = [int(r) for r in a.ranks.split(",")]
        if any(r < 1 for r in ranks):
            raise ValueError
    except ValueError:
        sys.exit(f"mpi_sweep_model: --ranks={a.ranks}: expected positive integers separated by commas")
    costs = [c * a.scale for c in key_seconds(a.sweep_jsonl)]
    serial = predict(costs, 1, a)[0]
    print(f"{len(costs)} keys, {sum(costs):.1f} s of sweep, largest key {costs[0]:.1f} s")
    print(f"{'ranks':>5} {'sweep s':>8} {'re-time s':>9} {'coord s':>8} {'total s':>8} {'speedup':>8}  bound by")
    for r in ranks:
        total, makespan, retime, coord = predict(costs, r, a)
        bound = "largest key" if makespan <= costs[0] + a.startup + 1e-9 and r > 1 else "sweep"
        if retime > makespan:
            bound = "re-timing on rank 0"
        if coord > makespan:
            bound = "rank 0's coordination"
        print(f"{r:>5} {makespan:>8.1f} {retime:>9.1f} {coord:>8.2f} {total:>8.1f} {serial / total:>8.2f}  {bound}")


if __name__ == "__main__":
    main()
