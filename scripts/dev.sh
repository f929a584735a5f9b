#!/usr/bin/env bash
# One entry point for set-up, build, demo and tests on Debian 12.
#
#   scripts/dev.sh demo [args...]   install what is missing, build, run `laggard demo`
#   scripts/dev.sh test [preset]    install what is missing, build, run every test
#   scripts/dev.sh build [preset]   install what is missing, build
#
# preset: release (default), debug, asan (AddressSanitizer + UBSan) or tsan
# (ThreadSanitizer; CMakePresets.json).
# Missing Debian packages are installed with apt-get when run as root;
# otherwise the script names them and stops. Safe to run again: configure
# and build are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libsimdjson-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libisal-dev libpcre2-dev libsqlite3-dev libcpp-httplib-dev prometheus
  libgtest-dev libgmock-dev libbenchmark-dev
  libjs-chart.js
  libcereal-dev
  # laggard diagnose --mpi (src/mpi/) and its test under mpirun
  openmpi-bin libopenmpi-dev
)
# Only for `test`: the HTML report's browser test and the real PyTorch jobs
# of bench/realjobs (Debian's torch, CPU, gloo); each test skips when its
# package is absent.
TEST_PACKAGES=(chromium python3-torch)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "laggard: missing Debian packages: ${missing[*]}" >&2
    echo "run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "laggard: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
  local preset=$1
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo)
    install_missing
    build release
    exec build/release/src/laggard demo "$@"
    ;;
  test)
    preset=${1:-release}
    install_missing "${TEST_PACKAGES[@]}"
    build "$preset"
    ctest --preset "$preset"
    ;;
  build)
    install_missing
    build "${1:-release}"
    ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac
