#!/usr/bin/python3
"""Dashboards read bench's output as it is.

Runs the CPU op with repetitions into a scratch run directory, then applies to results.json the
rules three dashboards' Google Benchmark adapters follow (written here from their source, see
README "Dashboards"), and checks that each records the manual time, or a throughput computed
from it, and never cpu_time, nor an aggregate as a time it is not. Then checks bencher.json
against the Bencher Metric Format.

usage: dashboard_test.py BENCH SHAPES
"""
import copy
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def expect_failure(what, check_fn, doc):
    """The adapters' rules, as written here, do catch the trap `what`."""
    try:
        check_fn(doc)
    except Failure:
        return
    fail("the check does not catch " + what)


def traps(doc):
    """results.json as it would be without the fixes: no rate counters named as Google
    Benchmark's, and Google Benchmark's cv aggregate (a ratio) kept."""
    no_rates = copy.deepcopy(doc)
    for b in no_rates["benchmarks"]:
        b.pop("bytes_per_second", None)
        b.pop("items_per_second", None)
    expect_failure("conbench taking cpu_time", check_conbench, no_rates)
    with_cv = copy.deepcopy(doc)
    median = next(b for b in with_cv["benchmarks"] if b.get("aggregate_name") == "median")
    cv = dict(median, name=median["run_name"] + "_cv", aggregate_name="cv", aggregate_unit="percentage",
              real_time=0.01, cpu_time=0.01)
    with_cv["benchmarks"].append(cv)
    expect_failure("Bencher recording cv as a latency", check_bencher_adapter, with_cv)
    expect_failure("github-action-benchmark charting cv as a time", check_action, with_cv)


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def shape_bytes(name):
    """GB/s's byte count of a cpu_mxfp4_gemm benchmark (README "Reading the output")."""
    m, n, k = (int(re.search(r"/%s:(\d+)" % d, name).group(1)) for d in "MNK")
    return 0.53125 * n * k + 2 * m * k + 2 * m * n


def run_bench(bench, shapes, work):
    env = dict(os.environ, TUNEBENCH_RUNS=os.path.join(work, "runs"),
               TUNEBENCH_KERNEL_CACHE=os.path.join(work, "kernels"))
    for var in ("TUNEBENCH_CACHE", "TUNEBENCH_SHAPES", "REPLAY_FROM", "USE_FLAGTUNE"):
        env.pop(var, None)
    cmd = [bench, "--tunebench_shapes=" + shapes, "--benchmark_filter=cpu_", "--benchmark_min_time=0.01",
           "--benchmark_repetitions=3", "--tunebench_cache=" + os.path.join(work, "configs.sqlite")]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(proc.returncode == 0, "bench exited %d: %s" % (proc.returncode, proc.stderr[-2000:]))
    runs = os.listdir(env["TUNEBENCH_RUNS"])
    check(len(runs) == 1, "expected one run directory, found %s" % runs)
    return os.path.join(env["TUNEBENCH_RUNS"], runs[0])


def repetitions_by_name(doc):
    reps = {}
    for b in doc["benchmarks"]:
        if b["run_type"] == "iteration":
            reps.setdefault(b["name"], []).append(b)
    return reps


def check_standard(doc):
    """What compare.py needs of every entry, and which aggregates the file keeps."""
    check(doc["benchmarks"], "results.json has no benchmarks")
    for b in doc["benchmarks"]:
        for key in ("name", "run_name", "run_type", "real_time", "cpu_time", "time_unit"):
            check(key in b, "%s lacks %s" % (b.get("name"), key))
        check(not b.get("error_occurred"), "%s failed: %s" % (b["name"], b.get("error_message")))
        check(b["name"].endswith("/manual_time") or b["run_type"] == "aggregate", b["name"])
        if b["run_type"] == "aggregate":
            check(b["aggregate_name"] in ("mean", "median", "stddev"), "aggregate %s in the JSON" % b["name"])
            check(b["aggregate_unit"] == "time", "%s: aggregate_unit %s" % (b["name"], b["aggregate_unit"]))
            check(b["name"] == b["run_name"] + "_" + b["aggregate_name"], b["name"])
    for name, reps in repetitions_by_name(doc).items():
        check(len(reps) == 3, "%s: %d repetitions" % (name, len(reps)))


def expected_aggregate(doc, entry):
    """An aggregate's real_time, recomputed from its repetitions' manual times."""
    times = [r["real_time"] for r in repetitions_by_name(doc)[entry["run_name"]]]
    return {"mean": statistics.mean, "median": statistics.median, "stddev": statistics.stdev}[
        entry["aggregate_name"]](times)


def is_manual_time(doc, entry, value, unit_scale=1.0):
    """value (in the entry's time unit x unit_scale) is its manual time, or its aggregate of them."""
    expected = entry["real_time"] if entry["run_type"] == "iteration" else expected_aggregate(doc, entry)
    return close(value, expected * unit_scale, 1e-6)


# conbench's GoogleBenchmarkAdapter (benchadapt/python/benchadapt/adapters/gbench.py:
# _parse_gbench_json, GoogleBenchmarkObservation.value/.time/.unit; Arrow's archery
# dev/archery/archery/benchmark/google.py has the same): aggregates are dropped, repetitions are
# grouped by name, and each observation's value is bytes_per_second, else items_per_second (both
# by truthiness), else real_time when the name contains "/real_time", else cpu_time.
def conbench_records(doc):
    records = {}
    for b in doc["benchmarks"]:
        if b["run_type"] == "aggregate":
            continue
        time = b["real_time"] if "/real_time" in b["name"] else b["cpu_time"]
        if b.get("bytes_per_second"):
            value, unit = b["bytes_per_second"], "B/s"
        elif b.get("items_per_second"):
            value, unit = b["items_per_second"], "i/s"
        else:
            value, unit = time, b["time_unit"]
        records.setdefault(b["name"], []).append((b, value, unit))
    return records


def check_conbench(doc):
    records = conbench_records(doc)
    check(records.keys() == repetitions_by_name(doc).keys(), "conbench: benchmarks %s" % sorted(records))
    for name, obs in records.items():
        check("/real_time" not in name, "conbench would take real_time by the name: %s" % name)
        check(len(obs) == 3, "conbench: %s has %d values" % (name, len(obs)))
        for b, value, unit in obs:
            check(unit == "B/s", "conbench records %s of %s: would be cpu_time" % (unit, name))
            # bytes over the manual time per iteration: derived from the manual time, not cpu_time
            manual_s = b["real_time"] * NS_PER[b["time_unit"]] / 1e9
            check(close(value, shape_bytes(name) / manual_s, 1e-6),
                  "conbench: %s records %g, not bytes / manual time %g s" % (name, value, manual_s))
            check(close(value / 1e9, b["GB/s"], 1e-9), "%s: bytes_per_second disagrees with GB/s" % name)
            check(close(b["items_per_second"] / 1e12, b["TFLOP/s"], 1e-9), "%s: items_per_second" % name)
            if b["cpu_time"] != b["real_time"]:
                cpu_rate = shape_bytes(name) / (b["cpu_time"] * NS_PER[b["time_unit"]] / 1e9)
                check(not close(value, cpu_rate, 1e-12), "conbench: %s records a CPU-time rate" % name)


# Bencher's cpp_google adapter (lib/bencher_adapter/src/adapters/cpp/google.rs: AdapterCppGoogle
# ::parse, TryFrom<Google>; results/adapter_results.rs: AdapterResults::new): refuses a file
# without context.caches or with the "median" average; every entry, aggregates included, becomes
# the latency (real_time in ns) of a benchmark named by its "name", inserted into a map, so the
# last repetition of a name wins and each aggregate is a benchmark of its own.
def bencher_records(doc):
    check(isinstance(doc["context"].get("caches"), list), "Bencher needs context.caches, a list")
    records = {}
    for b in doc["benchmarks"]:
        records[b["name"]] = (b, b["real_time"] * NS_PER[b["time_unit"]])
    return records


def check_bencher_adapter(doc):
    for name, (b, ns) in bencher_records(doc).items():
        check(b["run_type"] == "iteration" or b["aggregate_unit"] == "time",
              "Bencher records %s, a %s, as a latency" % (name, b.get("aggregate_unit")))
        check(is_manual_time(doc, b, ns, NS_PER[b["time_unit"]]), "Bencher: %s is not the manual time" % name)
        if b["run_type"] == "iteration":
            last = repetitions_by_name(doc)[name][-1]
            check(ns == last["real_time"] * NS_PER[last["time_unit"]], "Bencher: %s not the last repetition" % name)


# github-action-benchmark's googlecpp tool (src/extract.ts: extractGoogleCppResult): every entry,
# aggregates included, is charted as {name, value: real_time, unit: time_unit + "/iter"}.
def action_records(doc):
    return [(b, b["real_time"], b["time_unit"] + "/iter") for b in doc["benchmarks"]]


def check_action(doc):
    for b, value, unit in action_records(doc):
        check(unit in ("ns/iter", "us/iter", "ms/iter", "s/iter"), "%s: unit %s" % (b["name"], unit))
        check(b["run_type"] == "iteration" or b["aggregate_unit"] == "time",
              "github-action-benchmark charts %s, a %s, as %s" % (b["name"], b.get("aggregate_unit"), unit))
        check(is_manual_time(doc, b, value), "github-action-benchmark: %s is not the manual time" % b["name"])


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format): an object of
# benchmark name -> object of measure -> {value (required), lower_value, upper_value}, numbers;
# benchmark names up to 1024 characters, measure names up to 64.
def check_bmf(bmf, doc):
    reps = repetitions_by_name(doc)
    check(isinstance(bmf, dict) and bmf, "bencher.json is not a non-empty object")
    check(bmf.keys() == reps.keys(), "bencher.json benchmarks %s != results.json's %s" % (sorted(bmf), sorted(reps)))
    for name, measures in bmf.items():
        check(0 < len(name) <= 1024, "benchmark name length: %s" % name)
        check(isinstance(measures, dict), "%s: measures are not an object" % name)
        check(set(measures) == {"latency", "TFLOP/s", "GB/s"}, "%s: measures %s" % (name, sorted(measures)))
        for measure, metric in measures.items():
            check(0 < len(measure) <= 64, "measure name length: %s" % measure)
            check(isinstance(metric, dict) and "value" in metric, "%s %s: no value" % (name, measure))
            check(set(metric) <= {"value", "lower_value", "upper_value"}, "%s %s: keys %s" % (name, measure, metric))
            check(all(is_number(v) for v in metric.values()), "%s %s: not numbers: %s" % (name, measure, metric))
            lo, v, hi = (metric.get(k, metric["value"]) for k in ("lower_value", "value", "upper_value"))
            check(lo <= v <= hi, "%s %s: not lower <= value <= upper: %s" % (name, measure, metric))
        ns = sorted(r["real_time"] * NS_PER[r["time_unit"]] for r in reps[name])
        lat = measures["latency"]
        check(close(lat["value"], statistics.median(ns)), "%s: latency %g is not the median %s" % (name, lat["value"], ns))
        check(ns[0] <= lat["lower_value"] and lat["upper_value"] <= ns[-1], "%s: bounds outside %s" % (name, ns))
        gbs = sorted(r["GB/s"] for r in reps[name])
        check(close(measures["GB/s"]["value"], statistics.median(gbs)), "%s: GB/s not the median" % name)
        tfs = sorted(r["TFLOP/s"] for r in reps[name])
        check(close(measures["TFLOP/s"]["value"], statistics.median(tfs)), "%s: TFLOP/s not the median" % name)


def main():
    if len(sys.argv) != 3:
        print("usage: dashboard_test.py BENCH SHAPES", file=sys.stderr)
        return 2
    try:
        test(sys.argv[1], sys.argv[2])
    except Failure as e:
        print("dashboard_test: FAIL: %s" % e, file=sys.stderr)
        return 1
    return 0


def test(bench, shapes):
    with tempfile.TemporaryDirectory(prefix="tunebench-dashboard.") as work:
        run_dir = run_bench(bench, shapes, work)
        with open(os.path.join(run_dir, "results.json")) as f:
            doc = json.load(f)
        with open(os.path.join(run_dir, "bencher.json")) as f:
            bmf = json.load(f)
    check_standard(doc)
    check_conbench(doc)
    check_bencher_adapter(doc)
    check_action(doc)
    check_bmf(bmf, doc)
    traps(doc)
    print("dashboard_test: ok (%d entries, %d benchmarks)" % (len(doc["benchmarks"]), len(bmf)))


if __name__ == "__main__":
    sys.exit(main())
