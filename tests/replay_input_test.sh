#!/usr/bin/env bash
# REPLAY_FROM names what a user gives it: the folder when there is none, and for its configs.json
# and manifest.json anything but a regular file (a FIFO, a folder, a device) is one line and
# exit status 2, at once: a FIFO is never waited on, a folder never read as a stream.
set -euo pipefail
bench=${1:?usage: replay_input_test.sh BENCH}
source "$(dirname "$0")/lib.sh"

first='cpu_mxfp4_gemm/dsv4f_decode_tiny/M:1/N:256/K:512'
"$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" --benchmark_min_time=0.01 >/dev/null 2>"$work/record.err" \
  || fail "the record run failed: $(cat "$work/record.err")"
record=$(ls -d "$work"/runs/*)
[ -f "$record/configs.json" ] && [ -f "$record/manifest.json" ] || fail "the record run left no configs.json and manifest.json"

refused() {  # WHAT REPLAY_DIR PATTERN: one line matching PATTERN, exit 2, within 30 s
  local rc
  set +e; REPLAY_FROM="$2" timeout 30 "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
    --benchmark_min_time=0.01 >"$work/out" 2>"$work/err" </dev/null; rc=$?; set -e
  [ "$rc" -ne 124 ] || fail "$1: bench still waiting after 30 s"
  [ "$rc" -eq 2 ] || fail "$1: exit status $rc, expected 2: $(cat "$work/err")"
  [ "$(wc -l <"$work/err")" -eq 1 ] && grep -qF -- "$3" "$work/err" || fail "$1: expected one line with '$3', got: $(cat "$work/err")"
}
# A copy of the record with FILE replaced by what MAKE makes (a command taking the path).
variant() {  # NAME FILE MAKE...
  local dir=$work/$1
  cp -r "$record" "$dir"
  rm -f "$dir/$2"
  "${@:3}" "$dir/$2"
  echo "$dir"
}

refused "a missing folder" "$work/nowhere" "bench: REPLAY_FROM=$work/nowhere: no such folder (expected the run directory of an earlier bench run)"
! grep -q configs.json "$work/err" || fail "a missing folder: the error names configs.json: $(cat "$work/err")"
refused "a file for the folder" "$record/configs.json" "REPLAY_FROM=$record/configs.json: not a folder"
refused "configs.json a FIFO" "$(variant fifo-configs configs.json mkfifo)" "fifo-configs/configs.json: a FIFO (named pipe), expected a regular file"
refused "configs.json a folder" "$(variant dir-configs configs.json mkdir)" "dir-configs/configs.json: a folder, expected a regular file"
! grep -q basic_filebuf "$work/err" || fail "configs.json a folder: a raw stream error: $(cat "$work/err")"
refused "configs.json a device" "$(variant dev-configs configs.json ln -s /dev/zero)" "dev-configs/configs.json: a character device, expected a regular file"
refused "configs.json missing" "$(variant no-configs configs.json true)" "no-configs: no configs.json in it"
refused "manifest.json a FIFO" "$(variant fifo-manifest manifest.json mkfifo)" "REPLAY_FROM=$work/fifo-manifest: $work/fifo-manifest/manifest.json: a FIFO (named pipe), expected a regular file"
refused "manifest.json a folder" "$(variant dir-manifest manifest.json mkdir)" "dir-manifest/manifest.json: a folder, expected a regular file"
# The same record through a symbolic link to its configs.json still replays.
linked=$(variant linked configs.json ln -s "$record/configs.json")
REPLAY_FROM="$linked" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" --benchmark_min_time=0.01 \
  >/dev/null 2>"$work/linked.err" || fail "a configs.json linked to a record did not replay: $(cat "$work/linked.err")"
grep -q '"source": "replayed"' "$(ls -d "$work"/runs/* | tail -1)/configs.json" || fail "a configs.json linked to a record: nothing replayed"
# An entry whose op is not its name's: refused by name, not as a device mismatch.
wrong_op=$(variant wrong-op configs.json cp "$record/configs.json")
/usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["configs"][0]["op"] = "mxfp4_gemm"
json.dump(d, open(sys.argv[1], "w"))' "$wrong_op/configs.json"
refused "an entry of another op" "$wrong_op" "$first is recorded as op 'mxfp4_gemm', which is not the op its name begins with"
# A copy of the record whose first entry has config TEXT, and what --tunebench_check=1 says of it.
edited_check() {  # NAME TEXT
  local dir
  dir=$(variant "$1" configs.json cp "$record/configs.json")
  /usr/bin/python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["configs"][0]["config"] = sys.argv[2]
json.dump(d, open(sys.argv[1], "w"))' "$dir/configs.json" "$2"
  REPLAY_FROM="$dir" "$bench" --tunebench_check=1 --tunebench_shapes="$tiny" --benchmark_filter="^$first/" \
    >"$work/check.out" 2>"$work/check.err" || fail "check of $1 failed: $(cat "$work/check.err")"
  echo "$dir"
}
# A configs.json edited to a config the op never offered: a run would tune that key live (never
# run the config), and --tunebench_check=1 says so on its passed line, on any machine.
edited=$(edited_check edited "NOT_AN_AXIS=1")
grep -q "^bench: check passed: .*; 1 replayed config a run would not run but tune live instead (first: $first: 'NOT_AN_AXIS=1' " \
  "$work/check.out" || fail "check with an edited configs.json: $(cat "$work/check.out")"
# Control characters in the edited config stay escaped: still one line.
edited_check ctrl "$(printf 'BLOCK_N=64\n\033[31mX\tY')" >/dev/null
[ "$(wc -l <"$work/check.out")" -eq 1 ] && grep -qF "'BLOCK_N=64\n\x1b[31mX\tY'" "$work/check.out" \
  || fail "check with control characters: $(cat -A "$work/check.out")"
# The run tunes that key live, and its tuning counts in the in-loop sweep's figures.
REPLAY_FROM="$edited" "$bench" --tunebench_shapes="$tiny" --benchmark_filter="^$first/" --benchmark_min_time=0.01 \
  --benchmark_out="$work/live.json" >/dev/null 2>"$work/live.err" || fail "the edited replay failed: $(cat "$work/live.err")"
! grep -q "nothing timed" "$work/live.err" || fail "the edited replay's tuning was not counted: $(grep sweep "$work/live.err")"
/usr/bin/python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["context"]; assert int(c["tunebench_sweep_timed_runs"]) > 0, c' \
  "$work/live.json" || fail "the edited replay's context counts no timed run"
REPLAY_FROM="$record" "$bench" --tunebench_check=1 --tunebench_shapes="$tiny" --benchmark_filter="^$first/" >"$work/check.out" \
  || fail "check of the record itself failed"
! grep -q "tune live" "$work/check.out" || fail "check of the record itself: $(cat "$work/check.out")"
echo "replay_input: ok"
