#!/usr/bin/env bash
# The test suite on a fresh machine: set up, build, run every CTest test. GPU tests (label gpu)
# skip themselves where there is no CUDA device. Arguments go to ctest (e.g. -L gpu, -LE slow).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
cd "$here/${BUILD_DIR:-build}"
exec ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
