#!/usr/bin/env bash
# What every `laggard` start loads (docs/performance.md, "Start-up"): the
# binary links neither Open MPI nor cpp-httplib (nor OpenSSL and brotli,
# which come with it); `diagnose --mpi` opens libmpi and the agent, `watch`
# and Prometheus reads open lib/laggard/liblaggard_http.so with dlopen.
# Checked on the binary's own dynamic section (objdump -p) and on what the
# loader maps for `--version` (LD_DEBUG=files); and the module is where
# the binary looks for it, with cpp-httplib among its libraries.
#
#   startup_libraries_test.sh LAGGARD MODULE
set -euo pipefail
bin=$1
module=$2
fail() { echo "startup_libraries_test: $*" >&2; exit 1; }
command -v objdump >/dev/null || { echo "startup_libraries_test: no objdump; skipping" >&2; exit 77; }

unwanted='libmpi|libopen-rte|libopen-pal|httplib|libssl|libcrypto|brotli|libhwloc|libevent'
needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}')
echo "startup_libraries_test: $bin needs: $(tr '\n' ' ' <<<"$needed")"
if grep -Eq "$unwanted" <<<"$needed"; then fail "the binary links $(grep -E "$unwanted" <<<"$needed" | tr '\n' ' ')"; fi
loaded=$(LD_DEBUG=files "$bin" --version 2>&1 >/dev/null | grep -o 'file=[^ ]*' | sort -u)
if grep -Eq "$unwanted" <<<"$loaded"; then fail "--version loaded $(grep -E "$unwanted" <<<"$loaded" | tr '\n' ' ')"; fi

[ -f "$module" ] || fail "no module at $module"
[ "$(realpath "$(dirname "$bin")/../lib/laggard/liblaggard_http.so")" = "$(realpath "$module")" ] ||
  fail "the module $module is not ../lib/laggard/liblaggard_http.so from $bin"
objdump -p "$module" | awk '$1 == "NEEDED" {print $2}' | grep -q httplib ||
  fail "$module does not link cpp-httplib"
objdump -T "$module" | grep -q ' laggard_http_module$' || fail "$module exports no laggard_http_module"
echo "startup_libraries_test: --version loads $(wc -l <<<"$loaded") files, no MPI, no HTTP stack"
