#!/usr/bin/env bash
# Configures and builds tunebench into ${BUILD_DIR:-build} (Release). Quiet unless it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
log=$build/build.log
mkdir -p "$build"
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} && cmake --build "$build" -j "$jobs"; } >"$log" 2>&1; then
  grep -E 'error|Error|CMake Error' "$log" | head -20 >&2
  echo "build: failed (full log: $log)" >&2
  exit 1
fi
