#!/usr/bin/python3
"""The A/B verdict of scripts/ab_test.sh over per-process samples.

usage: scripts/ab_verdict.py --a RESULTS.json [...] --b RESULTS.json [...] --out DIR
                             [--resolution R] [--aa]

Each RESULTS.json is one replay process's Google Benchmark JSON. A process's repetitions share
its state (memory placement, clocks, ...), so they are one sample of the run-to-run variation,
not several: each benchmark's sample from a process is that process's median (its median
aggregate, else its one iteration). Per side, DIR/a.json and DIR/b.json are Google Benchmark JSON
whose repetitions are those per-process medians (compare.py's U test then works on independent
samples, as it assumes), with a median aggregate per benchmark.

Per benchmark: the ratio of medians B/A, its 95% interval by bootstrap over the processes
(scipy.stats.bootstrap, percentile method, fixed seed), the Mann-Whitney U test's p-value
(scipy.stats.mannwhitneyu, two-sided), and a verdict: "slower" (the interval above 1 and U p <
0.05), "faster" (below 1, likewise), "no difference" (the interval inside [1/(1+R), 1+R], R the
resolution asked for), else "inconclusive" (more rounds would narrow it). With fewer than
MIN_PROCESSES processes a side the percentile bootstrap is too narrow (scripts/ab_null_rate.py:
its interval excluded 1 for identical normal samples in 34% of trials at 2 a side, 7.3% at 4,
2.3% at 8), so no benchmark is called slower or faster. Times are compared in seconds, whatever unit each file reports. DIR/verdict.json
holds them; the table goes to stdout. Benchmarks that failed in any process are left out: the
summary line counts them, a line each names them with the side and the error, and verdict.json
lists them ("failed": benchmark, sides, error); so are those that ran in some processes only,
without an error ("missing": benchmark, processes). Exit status: 0, 1 nothing to compare, 2 bad
usage or input.
"""

import argparse
import collections
import json
import os
import statistics
import sys

UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
MIN_PROCESSES = 8  # a side, for a verdict of slower or faster (4 rounds of A B B A)


def fail(message, status=2):
    print("ab_verdict: " + message, file=sys.stderr)
    sys.exit(status)


def seconds(b, key):
    return float(b[key]) * UNIT_S.get(b.get("time_unit", "ns"), 1e-9)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not Google Benchmark JSON ({type(e).__name__})")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        fail(f"{path}: not Google Benchmark JSON (no 'benchmarks' list)")
    return doc


def process_samples(doc):
    """name -> (the process's median real_time, in its unit; its cpu_time; the entry), and
    failed name -> its error message."""
    iterations, medians, failed = {}, {}, {}
    for b in doc["benchmarks"]:
        name = b.get("run_name", b.get("name", ""))
        if b.get("error_occurred"):
            failed.setdefault(name, str(b.get("error_message", "")))
        elif b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
            medians[name] = b
        elif b.get("run_type") == "iteration":
            iterations.setdefault(name, []).append(b)
    out = {}
    for name, runs in iterations.items():
        if name in failed:
            continue
        # In seconds: two files may report one benchmark in different units.
        if name in medians:
            out[name] = (seconds(medians[name], "real_time"), seconds(medians[name], "cpu_time"), runs[0])
        else:
            out[name] = (statistics.median(seconds(r, "real_time") for r in runs),
                         statistics.median(seconds(r, "cpu_time") for r in runs), runs[0])
    return out, failed


def merged(docs, side, names):
    """One Google Benchmark JSON whose repetitions are the per-process medians."""
    samples = [process_samples(d)[0] for d in docs]
    context = dict(docs[0]["context"])
    context["tunebench_ab_side"] = side
    context["tunebench_ab_processes"] = str(len(docs))
    benchmarks = []
    for family_index, name in enumerate(names):
        values = [s[name] for s in samples]
        for i, (real, cpu, entry) in enumerate(values):
            e = {k: v for k, v in entry.items() if k in ("name", "run_name", "label", "threads")}
            scale = UNIT_S.get(values[0][2].get("time_unit", "ns"), 1e-9)  # the first process's unit
            e.update({"name": name, "run_name": name, "run_type": "iteration", "family_index": family_index,
                      "per_family_instance_index": 0, "repetitions": len(values), "repetition_index": i,
                      "iterations": 1, "real_time": real / scale, "cpu_time": cpu / scale,
                      "time_unit": values[0][2].get("time_unit", "ns")})
            benchmarks.append(e)
        median = dict(benchmarks[-1])
        median.update({"name": name + "_median", "run_type": "aggregate", "aggregate_name": "median",
                       "real_time": statistics.median(v[0] for v in values) / scale,
                       "cpu_time": statistics.median(v[1] for v in values) / scale})
        median.pop("repetition_index", None)
        benchmarks.append(median)
    return {"context": context, "benchmarks": benchmarks}


def verdict_of(a, b, resolution):
    import numpy as np
    from scipy import stats
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ratio = float(np.median(b) / np.median(a))
    if len(a) < 2 or len(b) < 2:
        return ratio, None, None, None, "inconclusive"
    res = stats.bootstrap((a, b), lambda x, y, axis: np.median(y, axis=axis) / np.median(x, axis=axis),
                          vectorized=True, paired=False, confidence_level=0.95, n_resamples=9999,
                          method="percentile", random_state=np.random.default_rng(20261201))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    p = float(stats.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    enough = len(a) >= MIN_PROCESSES and len(b) >= MIN_PROCESSES
    if low > 1 and p < 0.05 and enough:
        verdict = "slower"
    elif high < 1 and p < 0.05 and enough:
        verdict = "faster"
    elif low >= 1 / (1 + resolution) and high <= 1 + resolution:
        verdict = "no difference"
    else:
        verdict = "inconclusive"
    return ratio, low, high, p, verdict


def main():
    parser = argparse.ArgumentParser(usage=__doc__.splitlines()[2].strip()[len("usage: "):])
    parser.add_argument("--a", nargs="+", required=True, metavar="RESULTS.json")
    parser.add_argument("--b", nargs="+", required=True, metavar="RESULTS.json")
    parser.add_argument("--out", required=True, metavar="DIR")
    parser.add_argument("--resolution", type=float, default=0.01, metavar="R")
    parser.add_argument("--aa", action="store_true", help="both sides identical: report the flag count as the A/A")
    parser.add_argument("--what", default="", help="what was compared, for the verdict's header")
    args = parser.parse_args()
    try:
        import numpy  # noqa: F401
        from scipy import stats  # noqa: F401
    except ImportError:
        fail("scipy is not installed (Debian: python3-scipy, which scripts/setup.sh installs)")
    if not 0 < args.resolution < 1:
        fail(f"--resolution {args.resolution}: expected a fraction between 0 and 1 (0.01 is 1%)")
    docs_a, docs_b = [load(p) for p in args.a], [load(p) for p in args.b]
    names, failed = None, {}  # failed: name -> {"benchmark", "sides", "error"}
    seen = collections.Counter()  # name -> processes that ran it
    for side, docs in (("A", docs_a), ("B", docs_b)):
        for d in docs:
            s, f = process_samples(d)
            seen.update(s.keys())
            for name, error in f.items():
                entry = failed.setdefault(name, {"benchmark": name, "sides": [], "error": error})
                if side not in entry["sides"]:
                    entry["sides"].append(side)
            names = set(s) if names is None else names & set(s)
    names = sorted(n for n in names if n not in failed) if names else []
    # Ran in some processes only, without an error (a filter or the shapes changed between them).
    total = len(docs_a) + len(docs_b)
    missing = [{"benchmark": n, "processes": seen[n]} for n in sorted(seen) if seen[n] < total and n not in failed]
    failed = [failed[n] for n in sorted(failed)]
    if failed:
        print(f"ab_verdict: left out, failed in a process: {' '.join(f['benchmark'] for f in failed)}", file=sys.stderr)
    if not names:
        fail("no benchmark ran in every process of both sides: nothing to compare", 1)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"--out {args.out}: {e.strerror}, expected a folder to write into")
    for side, docs in (("a", docs_a), ("b", docs_b)):
        with open(os.path.join(args.out, f"{side}.json"), "w", encoding="utf-8") as f:
            json.dump(merged(docs, side.upper(), names), f, indent=2)
    rows = []
    for name in names:
        a = [s[name][0] for s in (process_samples(d)[0] for d in docs_a)]
        b = [s[name][0] for s in (process_samples(d)[0] for d in docs_b)]
        unit = process_samples(docs_a[0])[0][name][2].get("time_unit", "ns")
        scale = UNIT_S.get(unit, 1e-9)
        ratio, low, high, p, verdict = verdict_of(a, b, args.resolution)
        rows.append({"benchmark": name, "time_unit": unit, "a_median": statistics.median(a) / scale,
                     "b_median": statistics.median(b) / scale, "ratio": ratio, "ci_low": low, "ci_high": high,
                     "u_test_p": p, "verdict": verdict, "a_samples_s": a, "b_samples_s": b})
    if args.what:
        print(f"A/B: {args.what}")
    width = max(len(r["benchmark"]) for r in rows)
    print(f"{'benchmark':<{width}}  {'A median':>12}  {'B median':>12}  {'B/A':>7}  {'95% interval':>17}  {'U p':>6}  verdict")
    for r in rows:
        interval = f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]" if r["ci_low"] is not None else "-"
        p = f"{r['u_test_p']:.3f}" if r["u_test_p"] is not None else "-"
        print(f"{r['benchmark']:<{width}}  {r['a_median']:>9.4g} {r['time_unit']:<2}  {r['b_median']:>9.4g} "
              f"{r['time_unit']:<2}  {r['ratio']:>7.4f}  {interval:>17}  {p:>6}  {r['verdict']}")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("slower", "faster", "no difference", "inconclusive")}
    flagged = counts["slower"] + counts["faster"]
    summary = (f"verdict: {len(rows)} benchmarks, {counts['slower']} slower, {counts['faster']} faster, "
               f"{counts['no difference']} no difference, {counts['inconclusive']} inconclusive "
               f"(B/A, 95% bootstrap intervals over {len(docs_a)} and {len(docs_b)} processes; "
               f"resolution {100 * args.resolution:g}%)")
    if failed:  # a benchmark missing from the table would otherwise pass unnoticed
        summary += (f"; {len(failed)} benchmark{'s' if len(failed) != 1 else ''} failed on a side and "
                    f"{'are' if len(failed) != 1 else 'is'} left out")
    if missing:
        summary += (f"; {len(missing)} benchmark{'s' if len(missing) != 1 else ''} missing from some processes "
                    f"{'are' if len(missing) != 1 else 'is'} left out")
    print(summary)
    if min(len(docs_a), len(docs_b)) < MIN_PROCESSES:
        print(f"(fewer than {MIN_PROCESSES} processes a side: no benchmark is called slower or faster; "
              f"run --rounds {MIN_PROCESSES // 2} or more)")
    if args.aa and min(len(docs_a), len(docs_b)) < MIN_PROCESSES:
        print("A/A: no false-positive rate: with fewer processes than that nothing can be flagged")
    elif args.aa:
        print(f"A/A: {flagged} of {len(rows)} benchmarks flagged ({100 * flagged / len(rows):.1f}%; "
              f"identical sides, so each flag is a false positive: about 5% expected at 95% intervals)")
    for f in failed:
        print(f"left out: {f['benchmark']} failed on {' and '.join(f['sides'])}: {f['error'] or '(no message)'}")
    for m in missing:
        print(f"left out: {m['benchmark']} ran in {m['processes']} of {total} processes")
    with open(os.path.join(args.out, "verdict.json"), "w", encoding="utf-8") as f:
        json.dump({"what": args.what, "resolution": args.resolution, "aa": args.aa, "processes_a": len(docs_a),
                   "processes_b": len(docs_b), "summary": summary, "benchmarks": rows, "failed": failed,
                   "missing": missing}, f,
                  indent=2)


if __name__ == "__main__":
    main()
