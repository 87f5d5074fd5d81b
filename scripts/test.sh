#!/usr/bin/env bash
# The test suite on a fresh machine: set up, build, run every CTest test. GPU tests (label gpu)
# skip themselves where there is no CUDA device. The opt-in compilation of the whole expanded
# config space (label expanded, about 2400 compilations, 20-40 minutes on 2 cores) runs only when asked for:
# scripts/test.sh -L expanded. Other arguments go to ctest (e.g. -L gpu, -R Shape).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
cd "$here/${BUILD_DIR:-build}"
if [ $# -eq 0 ]; then set -- -LE expanded; fi
exec ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
