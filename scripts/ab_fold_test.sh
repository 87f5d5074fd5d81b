#!/usr/bin/env bash
# Worked example of the A/B method (scripts/ab_test.sh): the MXFP4 ops with the plain dequant
# (FLAGGEMS_MXFP4_FOLDSCALE=0, A) against the fold-scale dequant (=1, B) on identical configs,
# over the four shape sets. A calibration of the method as much as a measurement: FOLDSCALE
# changes one multiply per element pair, so a verdict of "no difference" is plausible, and the
# spread between repetitions shows how small a difference the method can resolve.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/ab_test.sh" FLAGGEMS_MXFP4_FOLDSCALE 0 1 --benchmark_filter='^mxfp4_(gemm|moe)/' "$@"
