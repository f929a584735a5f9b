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
  # One clang-format process for every file (a process per file is far slower).
  if out=$(clang-format --style=file --dry-run -Werror "${files[@]}" 2>&1); then
    echo "format: ${#files[@]} files as .clang-format says"
    exit 0
  fi
  printf '%s\n' "$out" | sed -n 's/^\([^: ]*\):[0-9]*:[0-9]*: error:.*/format: \1 differs/p' | sort -u
  echo "format: run scripts/format.sh to rewrite them"
  exit 1
fi
clang-format --style=file -i "${files[@]}"
