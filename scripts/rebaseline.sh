#!/usr/bin/env bash
# Rewrites tests/golden/*/expected from the current build after an intended
# change; read `git diff tests/golden` before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
cmake --build --preset "$preset"
LAGGARD_REBASELINE=1 "build/$preset/tests/laggard_tests" --gtest_filter='Cases/GoldenTest.*'
git --no-pager diff --stat -- tests/golden
