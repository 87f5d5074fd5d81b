#!/usr/bin/env bash
# Numbers stay numbers whatever locale the process is in: locale_bench's op sets a decimal comma
# and grouped thousands (C++) and LC_ALL from the environment (C), at start and in prepare().
# With de_DE.UTF-8 (installed, or made here with localedef into the scratch folder) the C
# locale's decimal comma is covered too; without it, only the C++ part, said in one line.
set -euo pipefail
bench=${1:?usage: locale_test.sh LOCALE_BENCH TUNEBENCH_CACHE_CLI}
cache_cli=${2:?usage: locale_test.sh LOCALE_BENCH TUNEBENCH_CACHE_CLI}
source "$(dirname "$0")/lib.sh"
unset LANG LANGUAGE $(env | grep -o '^LC_[A-Z]*') || true

if locale -a 2>/dev/null | grep -qix 'de_DE.utf-\?8'; then
  { export LC_ALL=de_DE.UTF-8; } 2>/dev/null
elif command -v localedef >/dev/null && mkdir -p "$work/locales" &&
     localedef -i de_DE -f UTF-8 "$work/locales/de_DE.UTF-8" >/dev/null 2>&1; then
  export LOCPATH=$work/locales
  { export LC_ALL=de_DE.UTF-8; } 2>/dev/null  # bash's own setlocale does not see LOCPATH: its warning is noise
else
  echo "locale_test: no de_DE.UTF-8 locale and localedef cannot make one (Debian: the locales package):" \
       "checking the C++ locale (a comma numpunct) only" >&2
fi
if [ -n "${LC_ALL:-}" ]; then
  [ "$(/usr/bin/printf '%.1f' 1,5)" = "1,5" ] || fail "LC_ALL=$LC_ALL does not give a decimal comma"
fi

filter='cpu_mxfp4_gemm/dsv4f_decode_tiny/M:(1|4)/N:256/'
# --benchmark_min_time=0.01 is read the "C" way; the sweep runs in a child process (the
# isolated sweep's seconds go into the context), the timing in this one.
TUNEBENCH_ISOLATE_SWEEP=1 "$bench" --benchmark_filter="$filter" --benchmark_min_time=0.01 --benchmark_repetitions=2 \
  --benchmark_out="$work/out.json" >"$work/console" 2>"$work/err" || fail "run exited $?: $(cat "$work/err")"
"$bench" --benchmark_filter="$filter" --benchmark_min_time=0.01 --benchmark_format=csv --benchmark_out_format=csv \
  --benchmark_out="$work/out.csv" >"$work/stdout.csv" 2>"$work/csv.err" || fail "CSV run exited $?: $(cat "$work/csv.err")"
"$bench" --benchmark_filter="$filter" --benchmark_min_time=0.01 --benchmark_format=json \
  >"$work/stdout.json" 2>"$work/json.err" || fail "JSON run exited $?: $(cat "$work/json.err")"
"$cache_cli" export "$work/export.json" || fail "export failed"
record=$(ls -d "$work"/runs/* | head -1)

/usr/bin/python3 - "$work" "$record" <<'PY' || fail "numbers written in the locale's form"
import csv, json, re, sys
work, record = sys.argv[1], sys.argv[2]
number = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$")
for path in (f"{work}/out.json", f"{work}/stdout.json"):
    d = json.load(open(path))  # "size": 32,768 or "real_time": 1,5 is not JSON
    ctx = d["context"]
    assert isinstance(ctx["mhz_per_cpu"], int), ctx
    for c in ctx["caches"]:
        assert isinstance(c["size"], int), c
    runs = [b for b in d["benchmarks"] if b["run_type"] == "iteration"]
    assert runs, d["benchmarks"]
    for b in d["benchmarks"]:
        assert not b.get("error_occurred"), b
        assert isinstance(b["real_time"], float) and b["real_time"] > 0, b
        assert isinstance(b["TFLOP/s"], float) and isinstance(b["GB/s"], float), b
ctx = json.load(open(f"{work}/out.json"))["context"]
for key in ("tunebench_isolated_sweep_seconds", "tunebench_isolated_sweep_keys", "tunebench_seed", "cuda_devices"):
    assert number.match(ctx[key].split(" ")[0]), (key, ctx[key])
for path in (f"{work}/out.csv", f"{work}/stdout.csv"):
    lines = open(path).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("name,"))
    rows = list(csv.DictReader(lines[start:]))
    assert rows, path
    header = len(lines[start].split(","))
    for r in csv.reader(lines[start + 1:]):
        assert len(r) == header, (path, r)
    for r in rows:
        assert number.match(r["real_time"]) and number.match(r["iterations"]), (path, r)
console = open(f"{work}/console").read()
rows = [l for l in console.splitlines() if l.startswith("cpu_mxfp4_gemm/")]
assert len(rows) == 2 * 2 + 2 * 4, console  # 2 repetitions and mean, median, stddev, cv
for l in rows:
    assert not re.search(r"[0-9],[0-9]", l), l
    assert re.search(r" [0-9]+\.[0-9]+ ms ", l) or "_cv " in l, l
table = [l for l in console.splitlines() if l.startswith("| cpu_mxfp4_gemm |")]
assert len(table) == 2, console
for l in table:
    cells = [c.strip() for c in l.strip("|").split("|")]
    assert number.match(cells[5].split(" ")[0]), l  # p50
    assert number.match(cells[6].rstrip("%")), l   # cv
    for c in cells[7:9]:
        assert number.match(c), l                  # TFLOP/s, GB/s
total = re.search(r"Trace-weighted total of cpu_mxfp4_gemm: (\S+) ms", console)
assert total and number.match(total.group(1)), console
md = open(f"{record}/latency.md").read()
assert md.startswith("# Latency by shape set\n") and md.split("\n", 1)[1] in console, md
for f in ("manifest.json", "configs.json"):
    json.load(open(f"{record}/{f}"))
for e in json.load(open(f"{work}/export.json"))["entries"]:
    assert e["best"] is None or isinstance(e["best"]["p50_ns"], int), e
PY
echo "locale_test: all checks passed${LC_ALL:+ (LC_ALL=$LC_ALL)}"
