#!/usr/bin/env bash
# One entry point for set-up, build, demo and tests on Debian 12.
#
#   scripts/dev.sh demo [args...]        build `laggard` only, run `laggard demo`
#   scripts/dev.sh build [preset]        build `laggard` only
#   scripts/dev.sh test [quick] [preset] build what ctest runs, run every test;
#                                        quick: the `unit` label only
#   scripts/dev.sh bench [preset]        build the benchmarks of bench/
#   scripts/dev.sh package               build a .deb (CPack) of the release build
#
# preset: release (default), debug, asan (AddressSanitizer + UBSan) or tsan
# (ThreadSanitizer; CMakePresets.json). Missing Debian packages are installed
# with apt-get when run as root; otherwise the script names them and stops.
# Compiles go through ccache when it works (cmake/ccache.cmake); each build
# ends with a line of its cache hits. Safe to run again: incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libsimdjson-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libisal-dev libpcre2-dev libsqlite3-dev libpq-dev libcpp-httplib-dev prometheus
  libgtest-dev libgmock-dev libbenchmark-dev
  libjs-chart.js
  libcereal-dev
  # laggard diagnose --mpi (src/mpi/) and its test under mpirun
  openmpi-bin libopenmpi-dev
  # laggard gemm (src/confirm/): Debian's OpenBLAS, loaded with dlopen
  libopenblas0
)
# Installed when run as root, else only named: the build and the tests go
# on without them. ccache: the compiler cache (cmake/ccache.cmake says when
# it is off); dpkg-dev and file: the .deb's dependencies (dpkg-shlibdeps).
OPTIONAL_PACKAGES=(ccache dpkg-dev file)
# Only for `test`: the HTML report's browser test, the real PyTorch jobs
# of bench/realjobs (Debian's torch, CPU, gloo), and the real single-node
# Slurm that `history drain --apply` drains and the real PostgreSQL the
# history store's tests run on (tests/history/), the real sshd that
# `confirm --launcher ssh` goes through (tests/confirm/); each test
# skips when its package is absent. libblas3: the reference BLAS the
# real jobs run on (bench/realjobs/job_env.py), whatever libblas.so.3 is.
TEST_PACKAGES=(chromium python3-torch libblas3 slurmctld slurmd slurm-client munge postgresql
  openssh-server)

usage() {
  sed -n '2,15p' "$0" >&2
  exit 2
}

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

install_missing() {
  local missing=() optional=()
  for p in "${PACKAGES[@]}" "$@"; do
    installed "$p" || missing+=("$p")
  done
  for p in "${OPTIONAL_PACKAGES[@]}"; do
    installed "$p" || optional+=("$p")
  done
  if [ "$(id -u)" -ne 0 ]; then
    if [ ${#missing[@]} -gt 0 ]; then
      echo "laggard: missing Debian packages: ${missing[*]}" >&2
      echo "run as root, or: sudo apt-get install ${missing[*]}" >&2
      exit 1
    fi
    if [ ${#optional[@]} -gt 0 ]; then
      echo "laggard: not installed, going on without: ${optional[*]}" \
        "(sudo apt-get install ${optional[*]})" >&2
    fi
    return 0
  fi
  missing+=("${optional[@]}")
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "laggard: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# preset_arg [PRESET]: the preset a verb names (release when none), or
# usage for an unknown one or more arguments.
preset_arg() {
  [ $# -le 1 ] || usage
  preset=${1:-release}
  case "$preset" in
    release | debug | asan | tsan) ;;
    *)
      echo "laggard: unknown preset '$preset'" >&2
      usage
      ;;
  esac
}

# ccache's hit and miss counters, summed ("hits misses"), or "" without it.
cache_counts() {
  command -v ccache >/dev/null || return 0
  ccache --print-stats 2>/dev/null | awk '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
    $1 == "cache_miss" { m += $2 }
    END { print h + 0, m + 0 }'
}

# build PRESET [TARGET...]: configure, build, and say what ccache gave.
build() {
  local preset=$1
  shift
  cmake --preset "$preset" >/dev/null
  local before after start=$SECONDS
  before=$(cache_counts)
  local targets=()
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake --build --preset "$preset" "${targets[@]}"
  after=$(cache_counts)
  if [ -n "$before" ] && grep -q '^LAGGARD_CCACHE_SAID:INTERNAL=on ' "build/$preset/CMakeCache.txt"; then
    read -r h0 m0 <<<"$before"
    read -r h1 m1 <<<"$after"
    local h=$((h1 - h0)) m=$((m1 - m0))
    if [ $((h + m)) -gt 0 ]; then
      echo "laggard: built in $((SECONDS - start)) s; ccache: $h hits, $m misses" \
        "($((100 * h / (h + m)))% hits)" >&2
    fi
  fi
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo)
    install_missing
    build release laggard
    exec build/release/src/laggard demo "$@"
    ;;
  build)
    preset_arg "$@"
    install_missing
    build "$preset" laggard
    ;;
  test)
    labels=()
    if [ "${1:-}" = quick ]; then
      labels=(-L unit)
      shift
    fi
    preset_arg "$@"
    install_missing "${TEST_PACKAGES[@]}"
    build "$preset"
    ctest --preset "$preset" --no-tests=error "${labels[@]}"
    ;;
  bench)
    preset_arg "$@"
    install_missing
    build "$preset" laggard_benchmarks
    ;;
  package)
    [ $# -eq 0 ] || usage
    install_missing
    for tool in dpkg-shlibdeps file; do
      command -v "$tool" >/dev/null ||
        { echo "laggard: package needs $tool (apt-get install dpkg-dev file)" >&2; exit 1; }
    done
    build release laggard
    (cd build/release && cpack -G DEB >/dev/null)
    ls build/release/laggard_*.deb build/release/laggard-dbgsym_*.ddeb
    ;;
  *)
    usage
    ;;
esac
