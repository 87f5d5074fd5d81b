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
import math
import os
import pathlib
import sqlite3
import sys

LONG_NS = 200_000  # the race prunes only by keys whose best run took this long (race_sweep.cpp)
APPLICATION_ID = 0x54424E43  # "TBNC", a tunebench config cache
KEY = "op, kernel_version, tuning_key, device_name, device_cc, toolkit, timing_mode"


def field(key, name):
    for part in key.split(","):
        k, _, v = part.partition("=")
        if k == name:
            return v
    return None


def groups_of(rows):
    """Times per key (the cache key's seven fields) and the keys of each group (the key but M),
    by M; keys without a decimal M are left out."""
    times = collections.defaultdict(dict)
    for *key, config, status, p50 in rows:
        m = field(key[2], "M")
        if status == "ok" and p50 and m is not None and m.isdigit():
            times[tuple(key)][config] = p50
    groups = collections.defaultdict(list)
    for key in times:
        rest = ",".join(p for p in key[2].split(",") if not p.startswith("M="))
        groups[key[:2] + (rest,) + key[3:]].append((int(field(key[2], "M")), key))
    for g in groups.values():
        g.sort()
    return times, groups


def replay(times, bests, groups, factor):
    cost, misses = 0, []
    for members in groups.values():
        prev = None
        for m, key in members:
            t = times[key]
            run = set(t)
            if prev is not None and prev[0] * 2 == m:
                pt, prun, pkey = prev[1], prev[2], prev[3]
                # What bench divides by: the half key's stored best, here where the replay ran it.
                stored = bests.get(pkey)
                best = pt[stored] if stored in prun else min(pt[c] for c in prun)
                if best >= LONG_NS:
                    kept = {c for c in t if c not in pt or (c in prun and pt[c] <= factor * best)}
                    run = kept or run
            cost += sum(t[c] for c in run)
            ratio = min(t[c] for c in run) / min(t.values())
            if ratio > 1.01:
                misses.append(f"{key[0]} {key[2]}: {ratio:.3f}")
            prev = (m, t, run, key)
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
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) < 2:
        print("usage: scripts/prune_replay.py CACHE [FACTOR ...] (--help says more)", file=sys.stderr)
        return 2
    path = argv[1]
    factors = []
    for text in argv[2:] or ["2", "3", "4", "5"]:
        try:
            f = float(text)
        except ValueError:
            f = math.nan
        if not math.isfinite(f) or f <= 1 or "_" in text:
            print(f"prune_replay: factor '{text}': expected a number above 1, e.g. 4", file=sys.stderr)
            return 2
        factors.append(f)
    if not os.path.isfile(path):
        print(f"prune_replay: {path}: not a file, expected a tunebench config cache", file=sys.stderr)
        return 2
    try:
        # A file: URI, escaped, so no character of the path is read as part of the URI.
        db = sqlite3.connect(pathlib.Path(path).resolve().as_uri() + "?mode=ro", uri=True)
        app = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if app != APPLICATION_ID or version > 5:
            raise sqlite3.DatabaseError(f"application_id {app:#x}, schema {version}")
        rows = db.execute(f"SELECT {KEY}, config, status, p50_ns FROM measurements").fetchall()
        bests = {tuple(r[:7]): r[7] for r in db.execute(f"SELECT {KEY}, config FROM best")}
    except sqlite3.Error as e:
        print(f"prune_replay: {path}: {e}: expected a tunebench config cache (schema 5 or older)", file=sys.stderr)
        return 2
    pruned = sum(1 for r in rows if r[-2] == "pruned")
    if pruned:
        print(f"prune_replay: {path}: {pruned} rows are pruned: expected a cache swept with "
              "TUNEBENCH_PRUNE_FACTOR=0 (into a fresh cache: a cached key is not swept again)", file=sys.stderr)
        return 2
    times, groups = groups_of(rows)
    if not times:
        print(f"prune_replay: {path}: no measured key with a decimal M", file=sys.stderr)
        return 1
    total = sum(sum(t.values()) for t in times.values())
    print(f"{len(times)} keys in {len(groups)} groups; one run of every config: {total / 1e9:.1f} s of kernel time")
    print(f"largest factor a winner needed: {needed(times, groups):.2f}")
    for f in factors:
        cost, misses = replay(times, bests, groups, f)
        print(f"factor {f:g}: {cost / 1e9:.1f} s of it left ({cost / total:.0%}); "
              f"best pruned on {len(misses)} keys" + (": " + "; ".join(misses) if misses else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
