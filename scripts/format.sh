#!/usr/bin/env bash
# Formats the project's C++ (src/, tests/, bench/, fuzz/) with .clang-format.
#
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   list the files that differ; exit 1 if any
#
# Uses Debian's clang-format (14); `scripts/dev.sh test` installs it. Exits 77
# (ctest: skipped) when clang-format is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "format: clang-format not installed" >&2; exit 77; }
mapfile -t files < <(git ls-files -- 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' \
  'bench/*.cc' 'bench/*.h' 'fuzz/*.cc' 'fuzz/*.h' 2>/dev/null || \
  find src tests bench fuzz \( -name '*.cc' -o -name '*.h' \))
if [ "${1:-}" = --check ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then echo "format: $f differs"; bad=1; fi
  done
  [ $bad -eq 0 ] && echo "format: ${#files[@]} files as .clang-format says"
  exit $bad
fi
clang-format --style=file -i "${files[@]}"
