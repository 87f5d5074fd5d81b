#!/usr/bin/env bash
# A/B of an environment switch on identical configs, with samples that are independent:
#   scripts/ab_test.sh [--rounds K] [--resolution R] VAR VALUE_A VALUE_B [bench arguments...]
#   scripts/ab_test.sh [--rounds K] [--resolution R] --aa VAR VALUE [bench arguments...]
# 1. a record run (autotunes what the cache lacks, records every benchmark's config);
# 2. K rounds (default 4; at least 4 for a verdict of slower or faster) of short replay processes
#    of exactly those configs, each round A B B A (2 processes a side), so a drift of the machine
#    during the A/B (clocks, heat) falls on both sides alike;
# 3. per side one Google Benchmark JSON whose repetitions are the processes' medians (a process's
#    repetitions share its state, so they are one sample, not several), compare.py's output on
#    them, and the verdict of scripts/ab_verdict.py: per benchmark the ratio B/A with its 95%
#    bootstrap interval and slower / faster / no difference (inside +-R, default 0.01) /
#    inconclusive.
# --aa: both sides VAR=VALUE: how many benchmarks the method flags on this machine when nothing
# differs (its calibration; about 5% expected). Default bench arguments: --benchmark_filter=^mxfp4
# and, per process unless given, --benchmark_repetitions=1 --benchmark_min_time=0.01 (a process's
# repetitions are one sample however long they run: rounds buy resolution, repetitions and long
# loops do not; docs/ab-method.md).
# Everything is kept in an A/B folder ab-YYYYmmdd-HHMMSS under TUNEBENCH_RUNS (default runs/):
# a.json, b.json, verdict.json, verdict.txt, and each process's results as a-1.json, b-1.json, ...
# Beside it, under TUNEBENCH_RUNS, stay the 4K+1 run directories bench made (the record run and
# each replay). Benchmarks that failed in a process are left out of the verdict and named in it.
# The CPU op uses every core (OpenMP): on a busy machine OMP_NUM_THREADS=1 steadies its A/B.
# Before the record run, bench --tunebench_check=1 checks the arguments with the caller's
# environment as it is (the record run's) and with each value (the sides'): the settings, the
# shapes, the filter, the config cache (opened read-only), REPLAY_FROM, the runs folder and the
# devices the sweep needs, so a value bench refuses is its one line before anything runs. An A/B stopped before its verdict removes its folder and names the run directories it
# leaves. BENCH (default build/bench/bench) and the usual TUNEBENCH_* variables are honoured; COMPARE_PY and
# PYTHON (which must import scipy) as for scripts/compare_results.sh. A bench failure ends the A/B
# with bench's exit status (2: bad usage or input, in bench's own line).
set -euo pipefail
usage="usage: scripts/ab_test.sh [--rounds K] [--resolution R] VAR VALUE_A VALUE_B [bench arguments...], or --aa VAR VALUE [...] (--help for more)"
rounds=4 resolution=0.01 aa=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=${2:-}; shift 2 || { echo "$usage" >&2; exit 2; } ;;
    --rounds=*) rounds=${1#--rounds=}; shift ;;
    --resolution) resolution=${2:-}; shift 2 || { echo "$usage" >&2; exit 2; } ;;
    --resolution=*) resolution=${1#--resolution=}; shift ;;
    --aa) aa=1; shift ;;
    --help|-h) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    # VAR never starts with '-': anything else so spelled is a mistyped option, not the variable.
    -*) echo "ab_test: unknown option $1 (expected --rounds K, --resolution R, --aa or --help before VAR)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if ! [[ $rounds =~ ^[1-9][0-9]{0,2}$ ]]; then
  echo "ab_test: --rounds '$rounds': expected a whole number of rounds from 1 to 999" >&2
  exit 2
fi
if ! [[ $resolution =~ ^0?\.[0-9]+$ ]] || [[ $resolution =~ ^0?\.0+$ ]]; then
  echo "ab_test: --resolution '$resolution': expected a fraction such as 0.01 (1%)" >&2
  exit 2
fi
if [ $aa = 1 ]; then
  [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
  var=$1 a=$2 b=$2
  shift 2
else
  [ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
  var=$1 a=$2 b=$3
  shift 3
fi
if ! [[ $var =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
  echo "ab_test: '$var' is not an environment variable name" >&2
  exit 2
fi
if [ "$var" = REPLAY_FROM ]; then
  echo "ab_test: REPLAY_FROM is what ab_test sets for every replay; choose another variable" >&2
  exit 2
fi
if [ "$var" = TUNEBENCH_RUNS ]; then
  echo "ab_test: TUNEBENCH_RUNS holds the A/B and all of its runs in one place; set it for the whole A/B, not as VAR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCH:-$here/build/bench/bench}
python=${PYTHON:-/usr/bin/python3}
[ -f "$bench" ] && [ -x "$bench" ] || { echo "ab_test: no bench at $bench (build first: scripts/build.sh)" >&2; exit 2; }
# What the verdict needs is checked before the first run, not found missing after the record run.
command -v "$python" >/dev/null 2>&1 || {
  echo "ab_test: PYTHON=$python: no such interpreter, expected a Python 3 with scipy (default /usr/bin/python3)" >&2
  exit 2
}
# What it prints, not only its exit status: /bin/true "imports" anything.
[ "$("$python" -c 'import numpy, scipy.stats; print("scipy ok")' 2>/dev/null)" = "scipy ok" ] || {
  echo "ab_test: PYTHON=$python does not import scipy (Debian: python3-scipy, which scripts/setup.sh installs)" >&2
  exit 2
}
[ -f "$here/scripts/ab_verdict.py" ] || { echo "ab_test: no $here/scripts/ab_verdict.py, expected a tunebench checkout" >&2; exit 2; }
args=("$@")
for arg in "${args[@]}"; do
  case $arg in
    --rounds|--rounds=*|--resolution|--resolution=*|--aa)
      echo "ab_test: $arg after VAR: ab_test's own options go before VAR (scripts/ab_test.sh $arg ... VAR ...)" >&2
      exit 2 ;;
    --help|--help=*|--benchmark_list_tests|--benchmark_list_tests=*)
      echo "ab_test: $arg: an A/B times benchmarks; for bench's usage or list run bench itself, for ab_test's: scripts/ab_test.sh --help" >&2
      exit 2 ;;
    --benchmark_out|--benchmark_out=*|--benchmark_out_format*|--benchmark_format*|--tunebench_runs|--tunebench_runs=*)
      echo "ab_test: $arg: ab_test writes each run's JSON into its run directory itself; leave it out" >&2
      exit 2 ;;
    --benchmark_report_aggregates_only*)
      echo "ab_test: $arg: the verdict needs each process's repetitions (their median); leave it out" >&2
      exit 2 ;;
    --*) ;;
    *)
      # Google Benchmark's flags are one word each (--name=value); a bare word is a second VALUE
      # given to --aa or a value split from its flag.
      echo "ab_test: '$arg': expected bench arguments as --name=value$([ $aa = 1 ] && echo ' (--aa takes one VALUE)')" >&2
      exit 2 ;;
  esac
done
[ ${#args[@]} -gt 0 ] || args=(--benchmark_filter=^mxfp4)
printf '%s\n' "${args[@]}" | grep -q -- '--benchmark_repetitions' || args+=(--benchmark_repetitions=1)
printf '%s\n' "${args[@]}" | grep -q -- '--benchmark_min_time' || args+=(--benchmark_min_time=0.01)
runs=${TUNEBENCH_RUNS:-runs}
made_top=""  # the outermost folder this A/B made for TUNEBENCH_RUNS, removed again if it stops early
if ! [ -d "$runs" ]; then
  top=$runs
  while ! [ -e "$(dirname "$top")" ]; do top=$(dirname "$top"); done
  mkdir -p "$runs" 2>/dev/null && made_top=$top
fi
if ! [ -d "$runs" ] || ! [ -w "$runs" ] || ! [ -x "$runs" ]; then
  echo "ab_test: TUNEBENCH_RUNS=$runs: expected a folder this user can write the A/B and its runs into" >&2
  exit 2
fi
stamp=$(date +%Y%m%d-%H%M%S)
ab_dir=$runs/ab-$stamp
n=1
until mkdir "$ab_dir" 2>/dev/null; do  # mkdir is the claim: two A/Bs in one second get two folders
  n=$((n + 1))
  [ $n -le 100 ] || { echo "ab_test: TUNEBENCH_RUNS=$runs: cannot create an A/B folder ab-$stamp there" >&2; exit 2; }
  ab_dir=$runs/ab-$stamp-$n
done
log=$(mktemp)
done_ok=0
before=$(ls -A "$runs")
cleanup() {  # an A/B that did not reach its verdict leaves no half-made folder
  rm -f "$log"
  if [ $done_ok = 0 ]; then
    rm -rf "$ab_dir"
    # bench's run directories are bench's (a finished record run can still be replayed): they
    # stay, and are named so that they are not mistaken for another A/B's.
    local left
    left=$(comm -13 <(printf '%s\n' "$before" | sort) <(ls -A "$runs" 2>/dev/null | sort) | grep -v "^ab-" || true)
    if [ -n "$left" ]; then
      local n_left what
      n_left=$(echo "$left" | wc -l)
      what="run directory $(echo "$left" | head -1) stays"
      [ "$n_left" = 1 ] || what="$n_left run directories, $(echo "$left" | head -1) to $(echo "$left" | tail -1), stay"
      # A process stopped mid-run leaves its run directory half-made (manifest status running).
      local cut
      cut=$(for d in $left; do grep -qs '"status": *"running"' "$runs/$d/manifest.json" && echo "$d"; done | tr '\n' ' ' || true)
      cut=${cut% }
      echo "ab_test: stopped before the verdict; the $what in $runs${cut:+; $cut stopped mid-run (its manifest still says running)}" >&2
    fi
    if [ -n "$made_top" ]; then  # the folders made for TUNEBENCH_RUNS, innermost first, while empty
      local d=$runs
      while rmdir "$d" 2>/dev/null && [ "$d" != "$made_top" ]; do d=$(dirname "$d"); done
    fi
  fi
}
trap cleanup EXIT

# The record run's environment and both values are checked by bench before any run (everything a
# run checks before it measures: bench --tunebench_check=1), so that a value bench refuses, a cache
# it cannot use or a filter that selects nothing is one line, not a failure after the record run.
# (A side's replay also gets REPLAY_FROM, which names the record run, not made yet: checked then.)
settings=("" "$var=$a")  # "": the caller's environment as it is
[ "$b" = "$a" ] || settings+=("$var=$b")
for setting in "${settings[@]}"; do
  rc=0
  env ${setting:+"$setting"} "$bench" "${args[@]}" --tunebench_check=1 >/dev/null 2>"$log" || rc=$?
  if [ $rc != 0 ]; then
    cat "$log" >&2
    # bench's own line says what was wrong (status 2, or 1 for a filter matching nothing); a
    # status without a line, or any other, gets which step it was.
    if ! [ -s "$log" ] || { [ $rc != 2 ] && [ $rc != 1 ]; }; then
      what=${setting:-your environment as it is}
      echo "ab_test: bench's check with $what failed (bench's exit status $rc)" >&2
    fi
    exit $rc
  fi
done

run_dir() {  # run_dir LABEL [VAR=VALUE ...]: runs bench, prints the run directory it made
  local label=$1 start=$SECONDS rc=0; shift
  env "$@" "$bench" "${args[@]}" >/dev/null 2>"$log" || rc=$?
  if [ $rc != 0 ]; then
    cat "$log" >&2
    # Exit status 2 is bench's bad usage or input, already said in its own line; anything else
    # gets which process it was. Either way bench's status is ab_test's.
    [ $rc = 2 ] || echo "ab_test: $label failed (bench's exit status $rc)" >&2
    exit $rc
  fi
  echo "ab_test: $label took $((SECONDS - start)) s" >&2  # a process's cost, for the rounds' budget
  grep -q 'bench: run directory ' "$log" || {
    echo "ab_test: $label: $bench named no run directory (expected tunebench's bench, which prints 'bench: run directory DIR')" >&2
    exit 1
  }
  grep -o 'bench: run directory .*' "$log" | tail -1 | cut -d' ' -f4-
}

record=$(run_dir "the record run")
# A record run whose every benchmark failed (no GPU for GPU ops, say) would make every replay fail too.
"$python" - "$record/results.json" <<'PY' || exit 1
import json, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type") == "iteration"]
failed = [b for b in runs if b.get("error_occurred")]
if runs and len(failed) == len(runs):
    sys.exit(f"ab_test: every benchmark of the record run failed (first: {failed[0]['name']}: "
             f"{failed[0].get('error_message', '')}); choose benchmarks that run here (--benchmark_filter)")
PY
side_a=() side_b=()
replay() {  # replay SIDE: one replay process of that side, its results kept in the A/B folder
  local side=$1 value dir list
  if [ "$side" = a ]; then value=$a; else value=$b; fi
  dir=$(run_dir "round $round, $(echo "$side" | tr ab AB) ($var=$value)" "$var=$value" REPLAY_FROM="$record")
  if [ "$side" = a ]; then side_a+=("$dir/results.json"); list=${#side_a[@]}; else side_b+=("$dir/results.json"); list=${#side_b[@]}; fi
  cp "$dir/results.json" "$ab_dir/$side-$list.json"
}
for round in $(seq 1 "$rounds"); do
  for side in a b b a; do replay "$side"; done
done
echo "ab_test: record $record; $((2 * rounds)) replay processes per side; A/B folder $ab_dir" >&2
verdict=(--resolution "$resolution" --what "$var: A=$a, B=$b; configs of $record")
[ $aa = 0 ] || verdict+=(--aa)
"$python" "$here/scripts/ab_verdict.py" --a "${side_a[@]}" --b "${side_b[@]}" --out "$ab_dir" "${verdict[@]}" \
  >"$ab_dir/verdict.txt" || exit 1
[ -s "$ab_dir/verdict.json" ] || { echo "ab_test: $python wrote no verdict ($ab_dir/verdict.json missing)" >&2; exit 1; }
done_ok=1  # the verdict is made: the folder stays whatever compare.py says
echo "compare.py on the per-process medians ($ab_dir/a.json against b.json):"
"$here/scripts/compare_results.sh" "$ab_dir/a.json" "$ab_dir/b.json" || true
echo
cat "$ab_dir/verdict.txt"
done_ok=1
