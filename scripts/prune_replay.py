#!/usr/bin/env python3
"""What the race's pruning (TUNEBENCH_PRUNE_FACTOR) would have cost and missed on a sweep made
without it: scripts/prune_replay.py CACHE [FACTOR ...]

CACHE is a config cache whose keys were swept with TUNEBENCH_PRUNE_FACTOR=0 (every config run at
least once on every key). For each op and shape but M (a group), the keys are replayed from the
smallest M up, as a shard visits them: a key's configs that ran more than FACTOR x the best on the
key with half its M (only where that best took 200 us or more), or were pruned there, are not run.
Per factor (default 2 3 4 5): the screen's kernel seconds left (one run of each config not
pruned, its stored p50), against all of them; the keys whose best config was pruned and how much
slower the best left is; and the largest factor any key's winner needed (its time over the best
on each smaller M of its group, the chain included). A shard's first key is not pruned by bench;
here every group starts at its smallest M, so the seconds left are a lower bound.
"""
import collections
import sqlite3
import sys

LONG_NS = 200_000  # the race prunes only by keys whose best run took this long (race_sweep.cpp)


def field(key, name):
    for part in key.split(","):
        k, _, v = part.partition("=")
        if k == name:
            return v
    return None


def groups_of(rows):
    times = collections.defaultdict(dict)
    for op, key, config, status, p50 in rows:
        if status == "ok" and p50:
            times[(op, key)][config] = p50
    groups = collections.defaultdict(list)
    for (op, key) in times:
        rest = ",".join(p for p in key.split(",") if not p.startswith("M="))
        groups[(op, rest)].append((int(field(key, "M")), (op, key)))
    for g in groups.values():
        g.sort()
    return times, groups


def replay(times, groups, factor):
    cost, misses = 0, []
    for members in groups.values():
        prev = None
        for m, key in members:
            t = times[key]
            run = set(t)
            if prev is not None and prev[0] * 2 == m:
                pt, prun = prev[1], prev[2]
                best = min(pt[c] for c in prun)
                if best >= LONG_NS:
                    kept = {c for c in t if c not in pt or (c in prun and pt[c] <= factor * best)}
                    run = kept or run
            cost += sum(t[c] for c in run)
            ratio = min(t[c] for c in run) / min(t.values())
            if ratio > 1.01:
                misses.append(f"{key[0]} {key[1]}: {ratio:.3f}")
            prev = (m, t, run)
    return cost, misses


def needed(times, groups):
    worst = 1.0
    for members in groups.values():
        for i, (m, key) in enumerate(members):
            t = times[key]
            winner = min(t, key=t.get)
            for _, smaller in members[:i]:
                s = times[smaller]
                if winner in s and min(s.values()) >= LONG_NS:
                    worst = max(worst, s[winner] / min(s.values()))
    return worst


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    try:
        factors = [float(f) for f in argv[2:]] or [2, 3, 4, 5]
    except ValueError as e:
        print(f"prune_replay: {e}: expected factors, e.g. 4", file=sys.stderr)
        return 2
    try:
        db = sqlite3.connect(f"file:{argv[1]}?mode=ro", uri=True)
        rows = db.execute("SELECT op, tuning_key, config, status, p50_ns FROM measurements").fetchall()
    except sqlite3.Error as e:
        print(f"prune_replay: {argv[1]}: {e}: expected a tunebench config cache", file=sys.stderr)
        return 2
    pruned = sum(1 for r in rows if r[3] == "pruned")
    if pruned:
        print(f"prune_replay: {argv[1]}: {pruned} rows are pruned: expected a cache swept with "
              "TUNEBENCH_PRUNE_FACTOR=0", file=sys.stderr)
        return 2
    times, groups = groups_of(rows)
    if not times:
        print(f"prune_replay: {argv[1]}: no measured key", file=sys.stderr)
        return 1
    total = sum(sum(t.values()) for t in times.values())
    print(f"{len(times)} keys in {len(groups)} groups; one run of every config: {total / 1e9:.1f} s of kernel time")
    print(f"largest factor a winner needed: {needed(times, groups):.2f}")
    for f in factors:
        cost, misses = replay(times, groups, f)
        print(f"factor {f:g}: {cost / 1e9:.1f} s of it left ({cost / total:.0%}); "
              f"best pruned on {len(misses)} keys" + (": " + "; ".join(misses) if misses else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
