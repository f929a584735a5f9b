#!/usr/bin/env bash
# How long a new user and a developer's edit-build-test loop wait for the
# build (results: docs/performance.md, "Build"). Needs the Debian packages of
# scripts/dev.sh already installed; run it with nothing else building.
#
#   bench/build_bench.sh [--keep] [--skip-test] [--user-cache]
#
#   1. cold:   a fresh clone A, an empty ccache: `scripts/dev.sh demo`, wall
#              time until the verdict is printed; then `scripts/dev.sh test`
#              in A (the tests' units are still cold);
#   2. warm:   a second fresh clone B in another folder, the cache of step 1:
#              `scripts/dev.sh test`, wall time, ccache's hits on that
#              clone and the number of tests ctest ran;
#   3. incremental, in B: one analysis source touched (a ccache hit), then
#              edited (a real compile), each followed by `scripts/dev.sh
#              build`; and `scripts/dev.sh test quick` after it.
#
# The clones are of HEAD plus the working tree's uncommitted changes, in a
# temporary folder with a ccache folder of their own (the user's cache is
# neither read nor written), deleted at the end unless --keep. --user-cache
# skips step 1 and runs B on the user's own ccache: what CI, or a clean
# clone in another folder right after a build in the work tree, finds.
# ../shared (the corpus) is linked beside the clones, so the corpus tests
# run as in the work tree.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
keep=0
skip_test=0
user_cache=0
for a in "$@"; do
  case "$a" in
    --keep) keep=1 ;;
    --skip-test) skip_test=1 ;;
    --user-cache) user_cache=1 ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
  esac
done
for tool in ccache bc; do
  command -v "$tool" >/dev/null || { echo "build_bench: $tool not installed" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/laggard-build-bench-XXXXXX")
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
[ "$user_cache" = 1 ] || export CCACHE_DIR=$work/ccache
[ -d "$src/../shared" ] && ln -s "$(cd "$src/../shared" && pwd)" "$work/shared"

clone() {
  git clone -q "$src" "$1"
  git -C "$src" diff HEAD --binary | git -C "$1" apply --allow-empty
  # Untracked files that git does not ignore travel too.
  (cd "$src" && git ls-files --others --exclude-standard -z) |
    (cd "$src" && xargs -0 -r cp --parents -t "$1")
}

# ccache's hits and misses since the last `ccache -z`.
hits() {
  ccache --print-stats | awk '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
    $1 == "cache_miss" { m += $2 }
    END { t = h + m; printf "%d hits of %d (%.1f%%)", h, t, t ? 100 * h / t : 0 }'
}

row() { printf '| %s | %s | %s |\n' "$1" "$2" "$3"; }

echo "build_bench: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD || echo ' + changes')"
echo
echo "| step | wall | detail |"
echo "|---|---|---|"

if [ "$user_cache" = 0 ]; then
clone "$work/a"
ccache -z >/dev/null
start=$(date +%s.%N)
(cd "$work/a" && scripts/dev.sh demo --out "$work/a/demo" >"$work/demo.log" 2>&1) ||
  { tail -20 "$work/demo.log" >&2; exit 1; }
cold=$(echo "$(date +%s.%N) - $start" | bc)
grep -q "culprit\|straggler" "$work/demo.log" || { tail -20 "$work/demo.log" >&2; exit 1; }
row "cold: fresh clone, empty cache, \`dev.sh demo\` to the verdict" "$(printf '%.0f s' "$cold")" \
  "ccache $(hits)"

[ "$skip_test" = 1 ] && exit 0

ccache -z >/dev/null
start=$(date +%s.%N)
(cd "$work/a" && scripts/dev.sh test >"$work/test_a.log" 2>&1) || { tail -30 "$work/test_a.log" >&2; exit 1; }
row "cold tests: \`dev.sh test\` in that clone after the demo" \
  "$(printf '%.0f s' "$(echo "$(date +%s.%N) - $start" | bc)")" "ccache $(hits)"
fi

clone "$work/b"
ccache -z >/dev/null
start=$(date +%s.%N)
(cd "$work/b" && scripts/dev.sh test >"$work/test.log" 2>&1) || { tail -30 "$work/test.log" >&2; exit 1; }
warm=$(echo "$(date +%s.%N) - $start" | bc)
tests=$(grep -o 'tests passed, [0-9]* tests failed out of [0-9]*' "$work/test.log" | grep -o '[0-9]*$')
build_s=$(grep -o 'laggard: built in [0-9]* s' "$work/test.log" | grep -o '[0-9]* s')
ctest_s=$(grep -o 'Total Test time (real) = *[0-9.]* sec' "$work/test.log" | grep -o '[0-9.]* sec')
label="warm: second clone, another folder, \`dev.sh test\`"
[ "$user_cache" = 1 ] && label="warm: fresh clone, another folder, the user's ccache, \`dev.sh test\`"
row "$label" "$(printf '%.0f s' "$warm")" \
  "ccache $(hits); build $build_s, ctest $ctest_s; $tests tests pass"

touch "$work/b/src/analysis/steps/level_shift.cc"
start=$(date +%s.%N)
(cd "$work/b" && scripts/dev.sh build >/dev/null 2>&1)
row "incremental: one .cc touched, \`dev.sh build\`" \
  "$(printf '%.0f s' "$(echo "$(date +%s.%N) - $start" | bc)")" "src/analysis/steps/level_shift.cc"

# Code, not a comment: ccache's preprocessor mode would find a comment.
echo "[[maybe_unused]] static const int kBuildBenchEdit = $RANDOM;" >>"$work/b/src/analysis/steps/level_shift.cc"
start=$(date +%s.%N)
(cd "$work/b" && scripts/dev.sh build >/dev/null 2>&1)
row "incremental: one .cc edited, \`dev.sh build\`" \
  "$(printf '%.0f s' "$(echo "$(date +%s.%N) - $start" | bc)")" "src/analysis/steps/level_shift.cc"

start=$(date +%s.%N)
(cd "$work/b" && scripts/dev.sh test quick >"$work/quick.log" 2>&1) || { tail -30 "$work/quick.log" >&2; exit 1; }
quick=$(grep -o 'tests passed, [0-9]* tests failed out of [0-9]*' "$work/quick.log" | grep -o '[0-9]*$')
row "\`dev.sh test quick\` after that edit" \
  "$(printf '%.0f s' "$(echo "$(date +%s.%N) - $start" | bc)")" "$quick unit tests pass"
