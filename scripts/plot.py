#!/usr/bin/python3
"""Pictures of tunebench results, one figure a question, as PNG and SVG.

usage: scripts/plot.py RUN_DIR_OR_JSON_OR_AB_DIR [more ...] [--out DIR]

For every Google Benchmark JSON given (a run directory's results.json, or a --benchmark_out file):
  latency-<set>.png/.svg   per shape set: each op's p50 against M (log axes), one panel per GEMM
                           (N, K); an op's baseline (Op::baseline, e.g. bf16_gemm for mxfp4_gemm)
                           dashed in the op's colour; throttled benchmarks (SM clock down > 5% in
                           the timing loop) circled
  roofline-<set>.png/.svg  per shape set: roofline% against M, where the run measured it
  speedup-<set>.png/.svg   per shape set with a baseline: baseline p50 / op p50 against M
For an A/B folder of scripts/ab_test.sh (or its verdict.json):
  ab-ratio.png/.svg        per benchmark the ratio B/A with its 95% interval, by verdict, the
                           resolution band shaded around 1
For a run directory with sweep.jsonl (a sweep in child processes):
  sweep-timeline.png/.svg  one lane per worker: each key from preparing to stored, by op and
                           decode/prefill, bench's re-timing on its own lane
The files go into the run directory (a JSON file: the folder it is in), or into --out DIR. A run
directory made with --benchmark_out=FILE holds no results.json: its manifest.json names the
results file, which is read instead (its sweep.jsonl is still the run directory's). Where several
inputs write into one folder, each file's name ends with its input's tag: the folder's name for a
run directory, an A/B folder or a results.json, the file's stem for any other JSON file
(ab-ratio-ab-20261201-131620.png); a tag two inputs share gets -2, -3, ... on the later ones, so
none overwrites another, and an input given twice (RUN and RUN/results.json) is plotted once.
Time is the median of the repetitions where there are some, else the single run.
Needs matplotlib (Debian: python3-matplotlib; scripts/setup.sh installs it). A bad input gets one
line on stderr and exit status 2, before any picture is written. Pictures are drawn into temporary
files and renamed into place, replacing only regular files: a symbolic link, FIFO or folder where
a picture goes is refused in one line (exit 2) before any is written, so nothing outside the
folder is ever written through a link.
"""

import argparse
import collections
import json
import math
import os
import re
import stat
import sys
import tempfile

NAME = re.compile(r"^(?P<op>[a-z0-9_]+)/(?P<set>[A-Za-z0-9_]+)/M:(?P<m>\d+)/N:(?P<n>\d+)/K:(?P<k>\d+)"
                  r"(?:/E:(?P<e>\d+)/topk:(?P<topk>\d+))?/manual_time$")
UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# Ops whose baseline the runs may hold (Op::baseline in the C++ ops; the JSON does not carry it).
BASELINE = {"mxfp4_gemm": "bf16_gemm", "mxfp4_moe": "bf16_moe"}
UMASK = os.umask(0)
os.umask(UMASK)


def fail(message):
    print("plot.py: " + message, file=sys.stderr)
    sys.exit(2)


def kind_of(path):
    """What `path` is, for one-line messages ("a FIFO (named pipe)", "a regular file", ...); None
    when nothing is there. A symbolic link is what it leads to, or says that it leads nowhere."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(path):
            return f"a symbolic link to {os.readlink(path)}, which does not exist"
        return None
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    for test, kind in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return kind
    return "not a regular file"


INPUTS = "expected a run directory, a Google Benchmark JSON file or an A/B folder"


def require_regular(path, expected):
    """Stops plot.py when something other than a regular file is at `path` (a FIFO would block the
    read); True when a regular file is there, False when nothing is."""
    kind = kind_of(path)
    if kind is not None and kind != "a regular file":
        fail(f"{path}: {kind}, {expected}")
    return kind is not None


def check_out_folder(out):
    """--out must be a folder, or a name where one can be made: the first of it and the folders
    above it that is there must be a folder (not a file, nor a link that leads nowhere)."""
    there = out
    while there and not os.path.lexists(there):
        there = os.path.dirname(there.rstrip(os.sep)) if there.rstrip(os.sep) else ""
    if not there:
        return
    kind = kind_of(there)
    if kind != "a folder":
        where = "" if there == out else f" ({there})"
        fail(f"--out {out}: {kind}{where}, expected a folder (or a new folder's name) to write the pictures into")


def load_results(path):
    """The Google Benchmark JSON at `path`; one line and exit 2 for anything else."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        fail(f"{path}: not Google Benchmark JSON ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) or not isinstance(doc.get("context"), dict):
        fail(f"{path}: not Google Benchmark JSON (expected an object with 'context' and a 'benchmarks' list)")
    # The entries the pictures use are checked here, so that a malformed one is refused before any
    # picture is drawn rather than ending the drawing half-way in a traceback.
    for i, b in enumerate(doc["benchmarks"]):
        if not isinstance(b, dict):
            fail(f"{path}: benchmarks[{i}] is not an object, expected Google Benchmark JSON")
        name = b.get("run_name", "")
        if not isinstance(name, str) or not NAME.match(name) or b.get("error_occurred"):
            continue
        time = b.get("real_time")
        if isinstance(time, bool) or not isinstance(time, (int, float)) or not math.isfinite(time) or time <= 0:
            fail(f"{path}: benchmark {b.get('name', name)}: 'real_time' is {json.dumps(time)}, "
                 f"expected a positive number (Google Benchmark JSON; a time on a log axis)")
        if b.get("time_unit", "ns") not in UNIT_S:
            fail(f"{path}: benchmark {b.get('name', name)}: 'time_unit' is {json.dumps(b.get('time_unit'))}, "
                 f"expected one of {', '.join(UNIT_S)}")
    return doc


def load_verdict(path):
    """The verdict.json of an A/B folder, checked before any picture is drawn."""
    try:
        with open(path, encoding="utf-8") as f:
            v = json.load(f)
        rows = v["benchmarks"]
        number = (int, float)
        if not isinstance(v["resolution"], number) or not isinstance(rows, list):
            raise TypeError("resolution or benchmarks")
        for r in rows:
            if not isinstance(r["benchmark"], str) or not isinstance(r["ratio"], number) or \
                    not all(e is None or isinstance(e, number) for e in (r["ci_low"], r["ci_high"])):
                raise TypeError(r.get("benchmark"))
            r["verdict"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        fail(f"{path}: not an A/B verdict of scripts/ab_test.sh ({type(e).__name__}), expected its verdict.json")
    return v


def run_results(folder):
    """The results file of a run directory: results.json, else the file its manifest.json names
    (a run made with --benchmark_out=FILE); None for a folder that is no run directory."""
    results = os.path.join(folder, "results.json")
    manifest = os.path.join(folder, "manifest.json")
    for name in (results, manifest):
        require_regular(name, "expected a regular file (a run directory's)")
    if os.path.isfile(results) or not os.path.isfile(manifest):
        return results if os.path.isfile(results) else None
    try:
        with open(manifest, encoding="utf-8") as f:
            named = json.load(f)["results"]
        if not isinstance(named, str):
            raise TypeError("'results' is not a string")
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{manifest}: no 'results' field naming the results file ({type(e).__name__}), "
             f"expected the manifest.json of a bench run directory")
    if not named:
        fail(f"{manifest}: 'results' is empty (the run wrote no results file), expected a run with JSON results")
    path = os.path.join(folder, named)  # an absolute name stays as it is
    if not require_regular(path, f"expected the results file {manifest} names, a regular file"):
        fail(f"{manifest}: the results file it names, {path}, does not exist")
    return path


def points(doc):
    """(op, set) -> (n, k) -> list of (m, seconds, roofline% or None, throttled)."""
    chosen = {}
    for b in doc["benchmarks"]:
        name = b.get("run_name", "")
        match = NAME.match(name) if isinstance(name, str) else None
        if not match or b.get("error_occurred"):
            continue
        median = b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"
        if not median and b.get("run_type") != "iteration":
            continue
        key = b["run_name"]
        if key in chosen and not median:
            continue
        start, end = b.get("sm_mhz_start"), b.get("sm_mhz_end")
        throttled = bool(start and end and end < 0.95 * start)
        if key in chosen:
            throttled = throttled or chosen[key][4]
        seconds = float(b["real_time"]) * UNIT_S.get(b.get("time_unit", "ns"), 1e-9)
        chosen[key] = (match, seconds, b.get("roofline%"), median, throttled)
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for match, seconds, roofline, _, throttled in chosen.values():
        gemm = (int(match["n"]), int(match["k"]))
        out[(match["op"], match["set"])][gemm].append((int(match["m"]), seconds, roofline, throttled))
    for by_gemm in out.values():
        for series in by_gemm.values():
            series.sort()
    return out


def time_unit(values):
    low = min(values)
    for name, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if low >= scale:
            return name, scale
    return "ns", 1e-9


def save(fig, out_dir, stem, written):
    """Draws into a new temporary file beside each picture's path (published by publish()), so
    nothing already at the path, a symbolic link above all, is ever opened for writing."""
    out_dir, tag = out_dir
    for ext in ("png", "svg"):
        path = os.path.join(out_dir, f"{stem}{tag}.{ext}")
        try:
            fd, temp = tempfile.mkstemp(prefix=".plot-", suffix=f".{ext}", dir=out_dir)
        except OSError as e:
            fail(f"{path}: {e.strerror or e}, expected a folder to write the pictures into")
        written.append((temp, path))
        try:
            os.fchmod(fd, 0o666 & ~UMASK)  # as a plain open() would have made it
            with os.fdopen(fd, "wb") as f:
                fig.savefig(f, format=ext, dpi=110 if ext == "png" else None, bbox_inches="tight")
        except OSError as e:
            fail(f"{path}: {e.strerror or e}, expected a folder to write the pictures into")


def publish(written):
    """Renames each drawn picture onto its path. Only a regular file there is replaced: anything
    else (a symbolic link, which a write would follow out of the folder, a FIFO, a folder) stops
    plot.py in one line before the first rename. A rename replaces a link that appears after the
    check, never the file it points to."""
    for _, path in written:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode) else \
                "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
            fail(f"{path}: {kind}, expected a regular file or nothing (plot.py replaces only its own pictures)")
    for temp, path in written:
        try:
            os.replace(temp, path)
        except OSError as e:
            fail(f"{path}: {e.strerror or e}, expected a folder to write the pictures into")


def panels(plt, count, title):
    cols = min(count, 3)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    fig.suptitle(title)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


def log_m_axis(ax):
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (tokens)")
    ax.grid(True, which="both", alpha=0.3)


def plain_log_y(ax, ticker):
    """Log y with ticks as plain numbers (6, 8, 10, not 6x10^0)."""
    ax.set_yscale("log")
    plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    low, high = ax.get_ylim()
    narrow = high / low < 10 if low > 0 else False  # under a decade: label every minor tick
    ax.yaxis.set_minor_formatter(ticker.FuncFormatter(
        lambda v, _: f"{v:g}" if narrow or f"{v:g}"[0] in "25" else ""))


def plot_sets(plt, ticker, data, source, out_dir, written):
    sets = sorted({s for (_, s) in data})
    colours = {}
    for set_name in sets:
        ops = sorted(op for (op, s) in data if s == set_name)
        gemms = sorted({g for op in ops for g in data[(op, set_name)]})
        shown = [op for op in ops if op not in BASELINE.values() or not any(BASELINE.get(o) == op for o in ops)]
        for op in ops:
            colours.setdefault(op, f"C{len(colours) % 10}")
        # Latency: each op against M, its baseline dashed in its colour.
        fig, axes = panels(plt, len(gemms), f"{set_name}: latency (p50) against M — {source}")
        for ax, gemm in zip(axes, gemms):
            every = [p[1] for op in ops for p in data[(op, set_name)].get(gemm, [])]
            unit, scale = time_unit(every)
            for op in shown:
                series = data[(op, set_name)].get(gemm, [])
                if series:
                    ax.plot([p[0] for p in series], [p[1] / scale for p in series], "o-", color=colours[op], label=op)
                    hot = [p for p in series if p[3]]
                    if hot:
                        labelled = any(line.get_label() == "SM clock fell > 5%" for line in ax.get_lines())
                        ax.plot([p[0] for p in hot], [p[1] / scale for p in hot], "o", markersize=12, mfc="none",
                                color="red", label="_" if labelled else "SM clock fell > 5%")
                base = BASELINE.get(op)
                base_series = data.get((base, set_name), {}).get(gemm, []) if base else []
                if base_series:
                    ax.plot([p[0] for p in base_series], [p[1] / scale for p in base_series], "s--",
                            color=colours[op], alpha=0.7, label=f"{base} (baseline of {op})")
            log_m_axis(ax)
            plain_log_y(ax, ticker)
            ax.set_ylabel(f"p50 ({unit})")
            ax.set_title(f"N={gemm[0]} K={gemm[1]}")
            ax.legend(fontsize=7)
        save(fig, out_dir, f"latency-{set_name}", written)
        plt.close(fig)
        # Roofline%: where the run measured it.
        with_roofline = [g for g in gemms if any(p[2] is not None for op in ops for p in data[(op, set_name)].get(g, []))]
        if with_roofline:
            fig, axes = panels(plt, len(with_roofline), f"{set_name}: roofline% against M — {source}")
            for ax, gemm in zip(axes, with_roofline):
                for op in ops:
                    series = [p for p in data[(op, set_name)].get(gemm, []) if p[2] is not None]
                    if series:
                        ax.plot([p[0] for p in series], [p[2] for p in series], "o-", color=colours[op], label=op)
                log_m_axis(ax)
                ax.set_ylim(0, 100)
                ax.set_ylabel("roofline% (roofline floor / time)")
                ax.set_title(f"N={gemm[0]} K={gemm[1]}")
                ax.legend(fontsize=7)
            save(fig, out_dir, f"roofline-{set_name}", written)
            plt.close(fig)
        # Speedup over the baseline, where both ran.
        pairs = [(op, BASELINE[op]) for op in ops if BASELINE.get(op) in ops]
        if pairs:
            fig, ax = plt.subplots(figsize=(6.4, 4.2))
            for op, base in pairs:
                for gemm in gemms:
                    own = {p[0]: p[1] for p in data[(op, set_name)].get(gemm, [])}
                    ref = {p[0]: p[1] for p in data[(base, set_name)].get(gemm, [])}
                    ms = sorted(set(own) & set(ref))
                    if ms:
                        ax.plot(ms, [ref[m] / own[m] for m in ms], "o-", label=f"{op} over {base}, N={gemm[0]} K={gemm[1]}")
            ax.axhline(1.0, color="grey", lw=1)
            log_m_axis(ax)
            ax.set_ylabel("speedup (baseline p50 / op p50)")
            ax.set_title(f"{set_name}: speedup over the baseline — {source}")
            ax.legend(fontsize=7)
            save(fig, out_dir, f"speedup-{set_name}", written)
            plt.close(fig)


def sweep_records(log_path):
    """The records of a sweep log; a torn last line (a killed run) is dropped, any other line that
    is not a record is an error."""
    with open(log_path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records = []
    for n, line in enumerate(lines, 1):
        try:
            r = json.loads(line)
            if not isinstance(r, dict) or not isinstance(r.get("record"), str):
                raise ValueError("not a record")
            if r["record"] in ("preparing", "tuned", "retimed"):
                float(r["time"])
                str(r["key"])
            records.append(r)
        except (ValueError, KeyError, TypeError):
            if n == len(lines):
                break  # torn by a killed run
            fail(f"{log_path}:{n}: not a record of a sweep log (a JSON object with record, key and time)")
    return records


def plot_timeline(plt, records, out_dir, written):
    starts, lanes, bars = {}, [], []
    for r in records:
        worker = r.get("worker", "?")
        lane = (r.get("round", 1), worker)
        if r.get("record") == "preparing":
            starts[(lane, r["key"])] = float(r["time"])
        elif r.get("record") == "tuned" and (lane, r["key"]) in starts:
            bars.append((lane, starts.pop((lane, r["key"])), float(r["time"]), r["key"]))
        elif r.get("record") == "retimed":
            bars.append((lane, float(r["time"]) - float(r.get("seconds", 0)), float(r["time"]), r["key"]))
        if lane not in lanes and r.get("record") in ("started", "preparing", "retimed"):
            lanes.append(lane)
    if not bars:
        return
    t0 = min(b[1] for b in bars)
    def kind_of(key):
        parts = key.split("/")
        return parts[0], "prefill" if len(parts) > 1 and "prefill" in parts[1] else "decode"
    kinds = sorted({kind_of(k) for *_, k in bars})
    colour = {kind: f"C{i % 10}" for i, kind in enumerate(kinds)}
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(lanes) + 2))
    for lane, start, end, key in bars:
        kind = kind_of(key)
        ax.barh(lanes.index(lane), end - start, left=start - t0, height=0.6, color=colour[kind], edgecolor="white",
                linewidth=0.3)
    for kind, c in colour.items():
        ax.barh(0, 0, color=c, label=f"{kind[0]} {kind[1]}")
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels([f"round {r}: {w}" for r, w in lanes])
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the first key was prepared")
    ax.set_title("sweep timeline: each key from preparing its workload to its stored winner")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    save(fig, out_dir, "sweep-timeline", written)
    plt.close(fig)


def plot_ab(plt, v, out_dir, written):
    rows = v["benchmarks"]
    resolution = float(v["resolution"])
    # Numbers in names compared as numbers: M:2 before M:16, each GEMM's M in order.
    rows = sorted(rows, key=lambda r: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", r["benchmark"])])
    colour = {"slower": "C3", "faster": "C2", "no difference": "C0", "inconclusive": "C7"}
    fig, ax = plt.subplots(figsize=(9, 0.22 * len(rows) + 1.6))
    ax.axvspan(1 / (1 + resolution), 1 + resolution, color="C0", alpha=0.12,
               label=f"no difference band (+-{100 * resolution:g}%)")
    ax.axvline(1.0, color="grey", lw=1)
    for i, r in enumerate(rows):
        low, high = r["ci_low"], r["ci_high"]
        err = [[r["ratio"] - low], [high - r["ratio"]]] if low is not None else None
        ax.errorbar(r["ratio"], i, xerr=err, fmt="o", color=colour.get(r["verdict"], "k"), ms=4, capsize=2)
    for verdict, c in colour.items():
        ax.plot([], [], "o", color=c, label=verdict)
    from matplotlib import ticker
    ends = [x for r in rows for x in (r["ci_low"], r["ci_high"], r["ratio"]) if x is not None and x > 0]
    if ends and max(ends) / min(ends) > 2:
        ax.set_xscale("log")  # ratios far apart: 0.5 and 2 equally far from 1
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    else:
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:.3g}"))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["benchmark"].replace("/manual_time", "") for r in rows], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("B / A (ratio of the medians of per-process medians; bars: 95% bootstrap interval)")
    ax.set_title(f"A/B{' (A/A)' if v.get('aa') else ''}: {v.get('what') or '?'}\n"
                 f"{v.get('processes_a', '?')} and {v.get('processes_b', '?')} processes per side", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="x", alpha=0.3)
    save(fig, out_dir, "ab-ratio", written)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     usage="scripts/plot.py RUN_DIR_OR_JSON_OR_AB_DIR [more ...] [--out DIR]")
    parser.add_argument("inputs", nargs="+", metavar="RUN_DIR_OR_JSON_OR_AB_DIR")
    parser.add_argument("--out", metavar="DIR", help="folder for the pictures (default: beside each input)")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        fail("matplotlib is not installed (Debian: apt-get install python3-matplotlib, or scripts/setup.sh)")
    # Every input read and checked before the first picture (and before --out is made), so a bad
    # one leaves nothing behind.
    jobs, seen = [], set()
    for given in args.inputs:
        kind = kind_of(given)
        if kind is None:
            fail(f"{given}: no such file or folder, {INPUTS}")
        if kind not in ("a folder", "a regular file"):
            fail(f"{given}: {kind}, {INPUTS}")
        verdict = given if os.path.basename(given) == "verdict.json" else \
            os.path.join(given, "verdict.json") if kind == "a folder" else None
        if verdict and require_regular(verdict, "expected a regular file (an A/B folder's verdict)"):
            folder = os.path.dirname(os.path.abspath(verdict))
            source = os.path.realpath(verdict)
            if source not in seen:
                seen.add(source)
                jobs.append(("ab", load_verdict(verdict), args.out or folder, os.path.basename(folder)))
            continue
        if os.path.isdir(given):
            run_dir = given
            results = run_results(given)
            if results is None:
                fail(f"{given}: a folder with neither results.json (a run directory; or a manifest.json naming "
                     f"its results file) nor verdict.json (an A/B folder)")
            folder = given
            name = os.path.basename(os.path.abspath(given))
        else:
            results = given
            run_dir = folder = os.path.dirname(os.path.abspath(results))
            name = os.path.basename(folder) if os.path.basename(results) == "results.json" \
                else os.path.splitext(os.path.basename(results))[0]
        source = os.path.realpath(results)
        if source in seen:
            continue
        seen.add(source)
        doc = load_results(results)
        # A run directory keeps its sweep.jsonl even where --benchmark_out put the results elsewhere.
        logs = [os.path.join(run_dir, "sweep.jsonl"), os.path.join(os.path.dirname(os.path.abspath(results)), "sweep.jsonl")]
        log = next((p for p in logs if os.path.isfile(p)), None)
        records = sweep_records(log) if log else None
        context = doc["context"] if isinstance(doc["context"], dict) else {}
        source = f"{context.get('gpu_name', context.get('host_name', '?'))}, {str(context.get('date', '?'))[:10]}"
        jobs.append(("run", (points(doc), records, source), args.out or folder, name))
    if not any(kind == "ab" or what[0] or what[1] for kind, what, _, _ in jobs):
        fail("nothing to plot: no benchmark of the inputs ran (every entry failed, or none is a tunebench benchmark)")
    shared = collections.Counter(os.path.abspath(out_dir) for _, _, out_dir, _ in jobs)
    tags, used = [], set()
    for _, _, out_dir, name in jobs:
        if shared[os.path.abspath(out_dir)] == 1:
            tags.append("")
            continue
        tag, n = name, 1
        while (os.path.abspath(out_dir), tag) in used:  # m1/r and m2/r: r, then r-2
            n += 1
            tag = f"{name}-{n}"
        used.add((os.path.abspath(out_dir), tag))
        tags.append(f"-{tag}")
    jobs = [(kind, what, (out_dir, tag)) for (kind, what, out_dir, _), tag in zip(jobs, tags)]
    if args.out:
        check_out_folder(args.out)
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as e:
            fail(f"--out {args.out}: {e.strerror or e}, expected a folder to write into")
    # A folder that exists but takes no files (read-only, /sys) is found before the first picture.
    for out_dir in sorted({os.path.abspath(out_dir) for _, _, (out_dir, _) in jobs}):
        try:
            fd, probe = tempfile.mkstemp(prefix=".plot-", dir=out_dir)
            os.close(fd)
            os.remove(probe)
        except OSError as e:
            where = f"--out {args.out}" if args.out else out_dir
            fail(f"{where}: {e.strerror or e}, expected a folder to write the pictures into")
    written = []  # (temporary file, picture's path)
    try:
        for kind, what, out_dir in jobs:
            if kind == "ab":
                plot_ab(plt, what, out_dir, written)
                continue
            data, records, source = what
            plot_sets(plt, ticker, data, source, out_dir, written)
            if records:
                plot_timeline(plt, records, out_dir, written)
        if not written:  # a sweep log without one finished key, and no benchmark beside it
            fail("nothing to plot: no benchmark of the inputs ran and no sweep key finished")
        publish(written)
    finally:
        for temp, _ in written:  # what a failure left unpublished
            if os.path.lexists(temp):
                os.remove(temp)
    for _, path in written:
        print(path)


if __name__ == "__main__":
    main()
