#!/usr/bin/env bash
# scripts/plot.py on a CPU run of bench (no GPU needed): the pictures of a run directory (latency
# per shape set, the sweep timeline) are non-empty PNGs of a readable size, with their SVGs, also
# for a run whose results went to --benchmark_out; inputs never overwrite each other; a file that
# is not Google Benchmark JSON, or a folder that takes no files, is refused in one line.
set -euo pipefail
bench=${1:?usage: plot_test.sh BENCH}
source "$(dirname "$0")/lib.sh"
plot=$here/../scripts/plot.py

# The isolated sweep keeps sweep.jsonl in the run directory: the timeline's source.
TUNEBENCH_ISOLATE_SWEEP=1 "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ --benchmark_min_time=0.01 \
  --benchmark_repetitions=3 >"$work/bench.out" 2>"$work/bench.err" || fail "bench: $(cat "$work/bench.err")"
run_dir=$(ls -d "$work"/runs/*/ | head -1)
[ -f "$run_dir/sweep.jsonl" ] || fail "no sweep.jsonl in $run_dir"
/usr/bin/python3 "$plot" "$run_dir" >"$work/plot.out" 2>"$work/plot.err" || fail "plot.py: $(cat "$work/plot.err")"
for stem in latency-dsv4f_decode_tiny sweep-timeline; do
  [ -s "$run_dir/$stem.svg" ] || fail "no $stem.svg: $(cat "$work/plot.out")"
  /usr/bin/python3 - "$run_dir/$stem.png" <<'PY' || fail "$stem.png is not a readable picture"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
assert width >= 400 and height >= 200, (width, height)
assert len(data) > 10000, len(data)
print(sys.argv[1], width, height, len(data))
PY
done
grep -q "latency-dsv4f_decode_tiny.png" "$work/plot.out" || fail "plot.py did not list what it wrote"
# --out puts them elsewhere; a JSON file works as well as its run directory.
/usr/bin/python3 "$plot" "$run_dir/results.json" --out "$work/pictures" >/dev/null 2>&1 || fail "plot.py --out"
[ -s "$work/pictures/latency-dsv4f_decode_tiny.png" ] || fail "--out wrote nothing there"

# A run directory made with --benchmark_out=FILE has no results.json: its manifest.json names the
# file, and its sweep.jsonl (a cache of its own, so that it sweeps) still gives the timeline. The file alone, in a folder that is no run
# directory, gets the latency picture beside it and no timeline.
mkdir "$work/elsewhere"
TUNEBENCH_RUNS=$work/out-runs TUNEBENCH_CACHE=$work/out-cache.sqlite TUNEBENCH_ISOLATE_SWEEP=1 "$bench" --tunebench_shapes="$tiny" --benchmark_filter=cpu_ \
  --benchmark_min_time=0.01 --benchmark_out="$work/elsewhere/cpu.json" >/dev/null 2>"$work/bench.err" \
  || fail "bench --benchmark_out: $(cat "$work/bench.err")"
out_run=$(ls -d "$work"/out-runs/*/ | head -1)
[ ! -e "$out_run/results.json" ] && [ -f "$out_run/sweep.jsonl" ] || fail "not the run directory expected: $(ls "$out_run" | tr '\n' ' ')"
/usr/bin/python3 "$plot" "$out_run" >/dev/null 2>"$work/plot.err" || fail "plot.py on a --benchmark_out run: $(cat "$work/plot.err")"
for stem in latency-dsv4f_decode_tiny sweep-timeline; do
  [ -s "$out_run/$stem.png" ] || fail "plot.py on a --benchmark_out run directory: no $stem.png ($(ls "$out_run" | tr '\n' ' '))"
done
/usr/bin/python3 "$plot" "$work/elsewhere/cpu.json" >/dev/null 2>"$work/plot.err" || fail "plot.py on cpu.json: $(cat "$work/plot.err")"
[ -s "$work/elsewhere/latency-dsv4f_decode_tiny.png" ] && [ ! -e "$work/elsewhere/sweep-timeline.png" ] \
  || fail "plot.py on a JSON file outside its run directory: $(ls "$work/elsewhere" | tr '\n' ' ')"

# Two inputs with one folder name: distinct tags; one input given twice: plotted once.
mkdir -p "$work/m1/r" "$work/m2/r"
cp "$run_dir/results.json" "$work/m1/r/"
cp "$run_dir/results.json" "$work/m2/r/"
/usr/bin/python3 "$plot" "$work/m1/r" "$work/m2/r" --out "$work/same" >/dev/null 2>"$work/plot.err" || fail "plot.py m1/r m2/r: $(cat "$work/plot.err")"
for f in latency-dsv4f_decode_tiny-r.png latency-dsv4f_decode_tiny-r-2.png; do
  [ -s "$work/same/$f" ] || fail "m1/r and m2/r into one --out: no $f ($(ls "$work/same" | tr '\n' ' '))"
done
/usr/bin/python3 "$plot" "$run_dir" "$run_dir/results.json" --out "$work/twice" >"$work/twice.out" 2>"$work/plot.err" \
  || fail "plot.py RUN RUN/results.json: $(cat "$work/plot.err")"
[ "$(grep -c 'latency-.*\.png$' "$work/twice.out")" = 1 ] || fail "RUN and RUN/results.json not plotted once: $(cat "$work/twice.out")"

# An A/B folder of scripts/ab_test.sh: the ratio of each benchmark with its interval.
BENCH="$bench" "$here/../scripts/ab_test.sh" --rounds 1 FLAGGEMS_MXFP4_FOLDSCALE 0 1 --tunebench_shapes="$tiny" \
  --benchmark_filter=cpu_ --benchmark_min_time=0.01 >/dev/null 2>"$work/ab.err" || fail "ab_test.sh: $(cat "$work/ab.err")"
ab_dir=$(ls -d "$work"/runs/ab-*/ | head -1)
/usr/bin/python3 "$plot" "$ab_dir" >/dev/null 2>"$work/ab-plot.err" || fail "plot.py on an A/B folder: $(cat "$work/ab-plot.err")"
[ -s "$ab_dir/ab-ratio.png" ] && [ -s "$ab_dir/ab-ratio.svg" ] || fail "no ab-ratio picture in $ab_dir"
# Two inputs into one folder: each picture named after its input, none overwritten.
/usr/bin/python3 "$plot" "$ab_dir" "$run_dir" --out "$work/both" >/dev/null 2>"$work/both.err" || fail "plot.py, two inputs: $(cat "$work/both.err")"
ab_name=$(basename "$ab_dir") run_name=$(basename "$run_dir")
for f in "ab-ratio-$ab_name.png" "latency-dsv4f_decode_tiny-$run_name.png"; do
  [ -s "$work/both/$f" ] || fail "two inputs into one --out: no $f ($(ls "$work/both" | tr '\n' ' '))"
done

# Not Google Benchmark JSON, or an entry without a number for real_time: one line naming the
# file, exit status 2, and nothing written, not even the --out folder.
printf 'name,real_time\nx,1\n' >"$work/results.csv"
echo '{"configs": []}' >"$work/other.json"
for broken in no-time:None text-time:'"abc"' zero-time:0; do
  /usr/bin/python3 - "$run_dir/results.json" "$work/${broken%%:*}.json" "${broken#*:}" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
b = doc["benchmarks"][0]
if sys.argv[3] == "None":
    del b["real_time"]
else:
    b["real_time"] = json.loads(sys.argv[3])
json.dump(doc, open(sys.argv[2], "w"))
PY
done
for bad in "$work/results.csv" "$work/other.json" "$work/missing.json" "$work/pictures" "$work/no-time.json" \
    "$work/zero-time.json" "$work/text-time.json"; do
  set +e
  /usr/bin/python3 "$plot" "$bad" --out "$work/bad/sub" >"$work/bad.out" 2>"$work/bad.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "plot.py $bad: exit status $rc, expected 2 ($(cat "$work/bad.err"))"
  [ "$(wc -l <"$work/bad.err")" = 1 ] && grep -q "^plot.py: $bad: " "$work/bad.err" || fail "message for $bad: $(cat "$work/bad.err")"
  [ ! -e "$work/bad" ] || fail "plot.py made --out for $bad"
done
grep -q "'real_time' is \"abc\", expected a positive number" "$work/bad.err" || fail "message for a text real_time: $(cat "$work/bad.err")"
# A folder that takes no files: refused in one line before drawing. /sys refuses new files even to
# root; a folder without write permission refuses them to anyone else.
unwritable=()
[ ! -d /sys/kernel ] || unwritable+=(/sys/kernel)
if [ "$(id -u)" != 0 ]; then mkdir "$work/ro" && chmod a-w "$work/ro" && unwritable+=("$work/ro"); fi
[ ${#unwritable[@]} -gt 0 ] || fail "no unwritable folder to try --out on"
for ro in "${unwritable[@]}"; do
  set +e
  /usr/bin/python3 "$plot" "$run_dir" --out "$ro" >/dev/null 2>"$work/ro.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/ro.err")" = 1 ] && grep -q "^plot.py: --out $ro: " "$work/ro.err" \
    || fail "plot.py --out $ro: exit status $rc, $(cat "$work/ro.err")"
done
# Pictures go only into regular files of --out: a symbolic link already there (to a file outside
# it), a FIFO or a folder where a picture goes is refused in one line, exit 2, before any picture
# is written, and the file the link points to is left as it was. A picture already there is
# replaced.
/usr/bin/python3 "$plot" "$run_dir/results.json" --out "$work/pictures" >/dev/null 2>"$work/plot.err" \
  || fail "plot.py into a folder of its own earlier pictures: $(cat "$work/plot.err")"
echo keep >"$work/outside.txt"
for kind in link fifo folder; do
  out=$work/trap-$kind
  mkdir "$out"
  case $kind in
    link) ln -s "$work/outside.txt" "$out/latency-dsv4f_decode_tiny.png"; what="a symbolic link" ;;
    fifo) mkfifo "$out/latency-dsv4f_decode_tiny.svg"; what="a FIFO (named pipe)" ;;
    folder) mkdir "$out/latency-dsv4f_decode_tiny.png"; what="a folder" ;;
  esac
  before=$(ls -A "$out")
  set +e
  timeout 60 /usr/bin/python3 "$plot" "$run_dir/results.json" --out "$out" >"$work/trap.out" 2>"$work/trap.err" </dev/null
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/trap.err")" = 1 ] && grep -q "^plot.py: $out/latency-dsv4f_decode_tiny\.[a-z]*: $what, expected a regular file or nothing" "$work/trap.err" \
    || fail "plot.py --out holding $what: exit status $rc, $(cat "$work/trap.err")"
  [ "$(ls -A "$out")" = "$before" ] || fail "plot.py --out holding $what wrote there: $(ls -A "$out" | tr '\n' ' ')"
done
[ "$(cat "$work/outside.txt")" = keep ] || fail "plot.py wrote through a symbolic link in --out onto $work/outside.txt"
# Each refusal gives its own reason, naming the input and what was expected: a FIFO given as the
# input or as a run folder's results.json (never opened: the read would wait for a writer), and an
# --out that names a file, a symbolic link that leads nowhere, or a path through a file.
mkfifo "$work/fifo.json"
mkdir "$work/fifo-run" && mkfifo "$work/fifo-run/results.json"
touch "$work/a-file" && ln -s "$work/nowhere" "$work/dangling"
for case in "$work/fifo.json|$work/fifo.json: a FIFO (named pipe), expected a run directory, a Google Benchmark JSON file or an A/B folder" \
    "$work/fifo-run|$work/fifo-run/results.json: a FIFO (named pipe), expected a regular file" \
    "$run_dir --out $work/a-file|--out $work/a-file: a regular file, expected a folder (or a new folder's name)" \
    "$run_dir --out $work/dangling|--out $work/dangling: a symbolic link to $work/nowhere, which does not exist, expected a folder" \
    "$run_dir --out $work/a-file/sub|--out $work/a-file/sub: a regular file ($work/a-file), expected a folder"; do
  set +e
  # shellcheck disable=SC2086  # the arguments are words
  timeout 60 /usr/bin/python3 "$plot" ${case%%|*} >/dev/null 2>"$work/why.err" </dev/null
  rc=$?
  set -e
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/why.err")" = 1 ] && grep -qF "plot.py: ${case#*|}" "$work/why.err" \
    || fail "plot.py ${case%%|*}: exit status $rc, expected 2 and '${case#*|}': $(cat "$work/why.err")"
done
[ -L "$work/dangling" ] && [ ! -e "$work/nowhere" ] && [ -f "$work/a-file" ] || fail "plot.py changed a refused --out"
echo "plot.py: ok"
