#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, run bench. Arguments go to bench; with no
# --benchmark_filter bench picks its default (the GPU MXFP4 families, or the CPU reference on the
# decode sets when there is no GPU).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
"$here/scripts/setup.sh"
"$here/scripts/build.sh"
cd "$here"
exec "${BUILD_DIR:-build}/bench/bench" "$@"
