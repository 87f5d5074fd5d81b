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
# The expanded compilation runs only when a label is asked for (-L expanded), whatever else is given.
label_given=0
for a in "$@"; do case $a in -L|-L*|--label-regex*) label_given=1 ;; esac; done
if [ $label_given -eq 0 ]; then set -- -LE expanded "$@"; fi
exec ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)" "$@"
