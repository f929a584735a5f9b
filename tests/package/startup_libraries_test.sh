#!/usr/bin/env bash
# What every `laggard` start loads (docs/performance.md, "Start-up"): the
# binary links neither Open MPI nor cpp-httplib (nor OpenSSL and brotli,
# which come with it); `diagnose --mpi` opens libmpi and the agent, `watch`
# and Prometheus reads open lib/laggard/liblaggard_http.so with dlopen.
# Checked on the binary's own dynamic section (objdump -p) and on what the
# loader maps for `--version` (LD_DEBUG=files); the binary opens the module
# (directly, through a symlink, and by LAGGARD_HTTP_MODULE), and a copy
# without it stops with a clear message; the module links cpp-httplib.
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
# The binary finds and opens it, also when started through a symlink: a
# Prometheus nobody serves is "cannot reach", not "did not load".
work=$(mktemp -d "${TMPDIR:-/tmp}/laggard-startup-XXXXXX")
trap 'rm -rf "$work"' EXIT
ln -s "$(realpath "$bin")" "$work/laggard"
for b in "$bin" "$work/laggard"; do
  said=$(env -u LAGGARD_HTTP_MODULE "$b" watch --prometheus http://127.0.0.1:9 --once 2>&1 || true)
  grep -q "cannot reach Prometheus" <<<"$said" || fail "$b watch, no Prometheus, said: $said"
done
# A copy without its module says so and stops, exit 2 (no input).
cp "$bin" "$work/alone"
set +e
said=$(env -u LAGGARD_HTTP_MODULE "$work/alone" watch --prometheus http://127.0.0.1:9 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "HTTP module did not load" <<<"$said" ||
  fail "a copy without the module: exit $rc, said: $said"
said=$(LAGGARD_HTTP_MODULE="$module" "$work/alone" watch --prometheus http://127.0.0.1:9 --once 2>&1 || true)
grep -q "cannot reach Prometheus" <<<"$said" || fail "LAGGARD_HTTP_MODULE=$module: $said"
# Whole outputs first, then grep: under pipefail, `grep -q` closing the
# pipe early fails the pipeline when objdump is still writing (SIGPIPE).
module_needed=$(objdump -p "$module" | awk '$1 == "NEEDED" {print $2}')
grep -q httplib <<<"$module_needed" || fail "$module does not link cpp-httplib"
exported=$(objdump -T "$module")
grep -q ' laggard_http_module$' <<<"$exported" || fail "$module exports no laggard_http_module"
echo "startup_libraries_test: --version loads $(wc -l <<<"$loaded") files, no MPI, no HTTP stack"
