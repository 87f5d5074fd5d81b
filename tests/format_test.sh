#!/usr/bin/env bash
# Every C++ source of the tree is formatted by .clang-format: names the files that are not and
# how to fix them. Skips (exit 77, CTest's SKIP_RETURN_CODE) when the tree is not a git checkout,
# since the file list is git's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fmt=${CLANG_FORMAT:-clang-format}
command -v "$fmt" >/dev/null || { echo "format_test: $fmt not found (scripts/setup.sh installs clang-format)" >&2; exit 1; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "format_test: not a git checkout; skipped"; exit 77; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "format_test: ${#bad[@]} of ${#files[@]} files differ from .clang-format: ${bad[*]}" >&2
  echo "format_test: fix with: clang-format -i ${bad[*]}" >&2
  exit 1
fi
echo "format_test: ${#files[@]} files formatted"
