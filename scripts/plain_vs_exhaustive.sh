#!/usr/bin/env bash
# Plain autotune (the default config space) against exhaustive search (USE_FLAGTUNE=1, the
# expanded space) on the same benchmarks, each into its own fresh config cache:
#   scripts/plain_vs_exhaustive.sh [bench arguments...]
# Default arguments: --benchmark_filter='^mxfp4_(gemm|moe)/dsv4f_decode_tp4/'.
# Sweep time of each = wall time of the tuning run minus that of a rerun on the filled cache
# (same benchmarks, nothing to tune); both at --benchmark_min_time=0.01 so measurement is small.
# Then, per tuning key, from the exhaustive run's measurements (one sweep, so one set of
# conditions): the p50 of the config plain autotune chose over the best p50 of all expanded
# configs. Goal: within 2% on >= 95% of keys, at <= 1/5 of the exhaustive sweep time.
# Last, a greedy cover: the fewest expanded configs that put every key within 2% of its
# exhaustive best, the candidates for a better default space.
# BENCH (default build/bench/bench) and PYTHON (default python3) are honoured. KEEP=DIR keeps
# each cache there as soon as its runs end (plain.sqlite; exhaustive.sqlite with exhaustive.ms,
# its run and rerun milliseconds). EXHAUSTIVE_FROM=DIR reuses such a kept exhaustive search
# (the slow half) instead of running it again, e.g. after changing only the default space; the
# kept one must come from the same benchmarks on the same kind of GPU.
set -euo pipefail
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }
for a in "$@"; do
  case $a in
    -h|--help) usage; exit 0 ;;
    --benchmark_list_tests*|--benchmark_out=*|--benchmark_format=*|--benchmark_out_format=*|--benchmark_min_time=*|--tunebench_cache*)
      echo "plain_vs_exhaustive: $a: not for this script (it sets what it needs); pass the benchmark selection" >&2
      exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$here/build/bench/bench}
[ -x "$bench" ] || { echo "plain_vs_exhaustive: no bench at $bench (build first: scripts/build.sh)" >&2; exit 2; }
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--benchmark_filter='^mxfp4_(gemm|moe)/dsv4f_decode_tp4/')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wall() {  # wall LOG ENV...: runs bench with ENV, prints seconds
  local log=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  if ! env "$@" "$bench" "${args[@]}" --benchmark_min_time=0.01 >"$log" 2>&1; then
    tail -5 "$log" >&2
    echo "plain_vs_exhaustive: bench failed (log above)" >&2
    exit 1
  fi
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000000 ))"
}
if [ -n "${EXHAUSTIVE_FROM:-}" ]; then  # checked before anything runs
  for f in exhaustive.sqlite exhaustive.ms; do
    [ -f "$EXHAUSTIVE_FROM/$f" ] && [ -s "$EXHAUSTIVE_FROM/$f" ] ||
      { echo "plain_vs_exhaustive: EXHAUSTIVE_FROM=$EXHAUSTIVE_FROM: no $f there (expected a KEEP directory of an earlier run)" >&2; exit 2; }
  done
  read -r exh_ms exh_rerun_ms extra < "$EXHAUSTIVE_FROM/exhaustive.ms" || true
  [[ "${exh_ms:-}" =~ ^[0-9]{1,12}$ && "${exh_rerun_ms:-}" =~ ^[0-9]{1,12}$ && -z "${extra:-}" ]] ||
    { echo "plain_vs_exhaustive: $EXHAUSTIVE_FROM/exhaustive.ms: expected two integers, the exhaustive run's and its rerun's milliseconds" >&2; exit 2; }
fi
[ -z "${KEEP:-}" ] || mkdir -p "$KEEP"
keep() {  # keep NAME [MS...]: the cache just written, kept under KEEP as the runs end
  [ -n "${KEEP:-}" ] || return 0
  cp "$work/$1.sqlite" "$KEEP/$1.sqlite"
  [ $# -lt 2 ] || { shift; echo "$*" > "$KEEP/exhaustive.ms"; }
}
plain_ms=$(wall "$work/plain.log" TUNEBENCH_CACHE="$work/plain.sqlite" USE_FLAGTUNE=0)
plain_rerun_ms=$(wall "$work/plain2.log" TUNEBENCH_CACHE="$work/plain.sqlite" USE_FLAGTUNE=0)
keep plain
if [ -n "${EXHAUSTIVE_FROM:-}" ]; then
  cp "$EXHAUSTIVE_FROM/exhaustive.sqlite" "$work/exhaustive.sqlite"
  echo "exhaustive search reused from $EXHAUSTIVE_FROM"
else
  exh_ms=$(wall "$work/exh.log" TUNEBENCH_CACHE="$work/exhaustive.sqlite" USE_FLAGTUNE=1)
  exh_rerun_ms=$(wall "$work/exh2.log" TUNEBENCH_CACHE="$work/exhaustive.sqlite" USE_FLAGTUNE=0)
  keep exhaustive "$exh_ms" "$exh_rerun_ms"
fi
exh_name=${EXHAUSTIVE_FROM:+$EXHAUSTIVE_FROM/exhaustive.sqlite}
"${PYTHON:-python3}" - "$work/plain.sqlite" "$work/exhaustive.sqlite" "$plain_ms" "$plain_rerun_ms" "$exh_ms" "$exh_rerun_ms" \
  "${exh_name:-the cache of the exhaustive run}" "${EXHAUSTIVE_FROM:+1}" <<'PY'
import sqlite3, sys
plain_db, exh_db = sys.argv[1], sys.argv[2]
plain_ms, plain_rerun_ms, exh_ms, exh_rerun_ms = map(int, sys.argv[3:7])
exh_name = sys.argv[7]
reused = sys.argv[8] == "1"
key = "op, tuning_key, device_name, timing_mode"
def rows(db, sql, name=None):
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        con.execute("SELECT 1 FROM best LIMIT 1")
    except sqlite3.Error as e:
        if name:
            sys.exit(f"plain_vs_exhaustive: {name}: not a readable tunebench config cache ({e})")
        sys.exit(f"plain_vs_exhaustive: no config cache was written ({db}): did bench run any benchmark?")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
plain_best = {r[:4]: r[4] for r in rows(plain_db, f"SELECT {key}, config FROM best WHERE p50_ns > 0")}
if not plain_best:
    sys.exit("plain_vs_exhaustive: no key was tuned by timing two or more configs: does the filter select "
             "benchmarks that run here (GPU ops need a GPU)?")
exh = {}
for r in rows(exh_db, f"SELECT {key}, config, p50_ns FROM measurements WHERE status = 'ok' AND p50_ns > 0", exh_name):
    if r[:4] in plain_best:  # only the benchmarks selected now
        exh.setdefault(r[:4], {})[r[4]] = r[5]
missing = sorted(k for k in plain_best if k not in exh)
if missing:
    print(f"plain_vs_exhaustive: {len(missing)} of {len(plain_best)} keys have no exhaustive measurements in "
          f"{exh_name} (first: {missing[0][0]} {missing[0][1]}): the exhaustive search must cover the selected "
          "benchmarks", file=sys.stderr)
    sys.exit(2)
if reused:
    # The kept search's time is compared with this plain sweep's: it must be of the same keys.
    plain_keys = {r[:4] for r in rows(plain_db, f"SELECT {key} FROM best")}
    extra = sorted({r[:4] for r in rows(exh_db, f"SELECT {key} FROM measurements", exh_name)} - plain_keys)
    if extra:
        print(f"plain_vs_exhaustive: {exh_name} also holds {len(extra)} keys the selected benchmarks do not have "
              f"(first: {extra[0][0]} {extra[0][1]}): its sweep time is not comparable; select the same benchmarks",
              file=sys.stderr)
        sys.exit(2)
plain_sweep = (plain_ms - plain_rerun_ms) / 1e3
exh_sweep = (exh_ms - exh_rerun_ms) / 1e3
ratio = (f"{plain_sweep / exh_sweep:.3f}" if exh_sweep > 0 and plain_sweep > 0
         else "n/a: a run took no longer than its rerun on the filled cache")
print(f"sweep time: plain {plain_sweep:.1f} s, exhaustive {exh_sweep:.1f} s "
      f"(ratio {ratio}; runs {plain_ms / 1e3:.1f}/{exh_ms / 1e3:.1f} s, reruns "
      f"{plain_rerun_ms / 1e3:.1f}/{exh_rerun_ms / 1e3:.1f} s)")
print(f"{'op':<14} {'tuning key':<28} {'configs':>7} {'plain winner':<60} {'gap %':>7}  fastest expanded config (p50)")
within = total = 0
for k in sorted(plain_best):
    times = exh[k]
    best = min(times.values())
    winner = min(times, key=times.get)
    chosen = plain_best[k]
    if chosen not in times:
        print(f"{k[0]:<14} {k[1]:<28} {len(times):>7} {chosen:<60} (not measured in the exhaustive run)")
        continue
    gap = 100.0 * (times[chosen] / best - 1)
    total += 1
    within += gap <= 2.0
    print(f"{k[0]:<14} {k[1]:<28} {len(times):>7} {chosen:<60} {gap:>7.2f}  {winner}")
if total:
    print(f"plain winner within 2% of the exhaustive best on {within}/{total} keys ({100.0 * within / total:.0f}%; goal >= 95%)")
# Greedy set cover: configs within 2% of a key's best "cover" it; pick the config covering the
# most uncovered keys until all are covered (ties: the config text, for a stable answer).
covers = {}
for k, times in exh.items():
    best = min(times.values())
    for c, t in times.items():
        if t <= 1.02 * best:
            covers.setdefault(c, set()).add(k)
left, chosen = set(exh), []
while left:
    c = min(covers, key=lambda c: (-len(covers[c] & left), c))
    chosen.append((c, len(covers[c] & left)))
    left -= covers[c]
print(f"{len(chosen)} expanded configs put every key within 2% of its best (greedy cover; keys newly covered):")
for c, n in chosen:
    print(f"  {c}  ({n})")
PY
