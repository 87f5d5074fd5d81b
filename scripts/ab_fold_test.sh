#!/usr/bin/env bash
# Worked example of the A/B method (scripts/ab_test.sh): the MXFP4 ops with the plain dequant
# (FLAGGEMS_MXFP4_FOLDSCALE=0, A) against the fold-scale dequant (=1, B) on identical configs,
# over the four shape sets. A calibration of the method as much as a measurement: FOLDSCALE
# changes one multiply per element pair, so a verdict of "no difference" is plausible, and the
# spread between repetitions shows how small a difference the method can resolve.
#   scripts/ab_fold_test.sh [--rounds K] [--resolution R] [--aa] [bench arguments...]
# --aa: the A/A of FLAGGEMS_MXFP4_FOLDSCALE=0 on both sides, the method's false-flag rate on these
# benchmarks on this machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# ab_test.sh's own options (--rounds K, --resolution R, --aa) come first, bench arguments after them.
opts=() aa=0
while [ $# -gt 0 ]; do
  case $1 in
    --rounds|--resolution) opts+=("$1" "${2:-}"); shift; [ $# -gt 0 ] && shift ;;
    --rounds=*|--resolution=*) opts+=("$1"); shift ;;
    --aa) aa=1; shift ;;
    --help|-h) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --benchmark_*|--tunebench_*) break ;;
    -*) echo "ab_fold_test: unknown option $1 (expected --rounds K, --resolution R, --aa or --help, then bench arguments)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $aa = 1 ]; then
  exec "$here/ab_test.sh" "${opts[@]}" --aa FLAGGEMS_MXFP4_FOLDSCALE 0 --benchmark_filter='^mxfp4_(gemm|moe)/' "$@"
fi
exec "$here/ab_test.sh" "${opts[@]}" FLAGGEMS_MXFP4_FOLDSCALE 0 1 --benchmark_filter='^mxfp4_(gemm|moe)/' "$@"
