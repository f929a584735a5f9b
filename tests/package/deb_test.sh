#!/usr/bin/env bash
# The .deb of `scripts/dev.sh package` (cmake/package.cmake), as a cluster
# node gets it: CPack builds it from the build tree, `dpkg -x` unpacks it
# into a temporary folder, and the unpacked binary runs `--version` and
# `demo`. Also checked: the systemd unit points at the packaged binary, the
# docs are there, and the control file declares the shared libraries.
#
#   deb_test.sh BUILD_DIR VERSION
#
# Exits 77 (ctest: skipped) without cpack, dpkg-deb, dpkg-shlibdeps or file.
set -euo pipefail
build=$1
version=$2
for tool in cpack dpkg-deb dpkg-shlibdeps file; do
  command -v "$tool" >/dev/null || { echo "deb_test: $tool not installed; skipping" >&2; exit 77; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/laggard-deb-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "deb_test: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/laggard_*.deb 2>/dev/null | head -1 || true)
[ -n "$deb" ] || fail "no .deb in $work/out"
echo "deb_test: $(basename "$deb"), $(stat -c %s "$deb") bytes"

depends=$(dpkg-deb -f "$deb" Depends)
echo "deb_test: Depends: $depends"
for lib in libfmt libsimdjson libsqlite3 libstdc++6 libcpp-httplib; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version is not $version"

dpkg -x "$deb" "$work/root"
# The debug information ships apart (objcopy --only-keep-debug): the .deb's
# ELF files are stripped and their build ids are in the -dbgsym .ddeb.
ddeb=$(ls "$work"/out/laggard-dbgsym_*.ddeb 2>/dev/null | head -1 || true)
[ -n "$ddeb" ] || fail "no laggard-dbgsym .ddeb beside the .deb"
dpkg -x "$ddeb" "$work/dbg"
for elf in usr/bin/laggard usr/lib/laggard/liblaggard_http.so; do
  kind=$(file "$work/root/$elf")  # whole, then grep: no SIGPIPE under pipefail
  grep -q ", stripped" <<<"$kind" || fail "$elf is not stripped"
  id=$(readelf -n "$work/root/$elf" | awk '/Build ID/ {print $3}')
  debug=$work/dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -f "$debug" ] || fail "the .ddeb lacks the debug information of $elf (build id $id)"
  sections=$(readelf -S "$debug")
  grep -q '\.debug_line' <<<"$sections" || fail "$debug has no line tables (.debug_line)"
done
echo "deb_test: $(basename "$ddeb"), $(stat -c %s "$ddeb") bytes, the debug information of both ELF files"
bin=$work/root/usr/bin/laggard
[ -x "$bin" ] || fail "usr/bin/laggard missing"
[ -f "$work/root/usr/lib/laggard/liblaggard_http.so" ] || fail "usr/lib/laggard/liblaggard_http.so missing"
unit=$work/root/usr/lib/systemd/system/laggard-agent.service
grep -q '^ExecStart=/usr/bin/laggard agent' "$unit" || fail "the unit does not start /usr/bin/laggard"
[ -f "$work/root/usr/share/doc/laggard/README.md" ] || fail "README.md missing"
[ -f "$work/root/usr/share/doc/laggard/docs/agent.md" ] || fail "docs/agent.md missing"

got=$("$bin" --version)
grep -q "$version" <<<"$got" || fail "laggard --version printed '$got'"
(cd "$work" && "$bin" demo --out "$work/demo" >"$work/demo.txt" 2>&1) ||
  { cat "$work/demo.txt" >&2; fail "laggard demo failed"; }
grep -qi "straggler\|culprit" "$work/demo.txt" || { cat "$work/demo.txt" >&2; fail "no verdict"; }
[ -f "$work/demo/report.html" ] || fail "demo wrote no report.html"
# The HTTP module loads from ../lib/laggard: a Prometheus nobody serves is
# "cannot reach", not "the HTTP module did not load".
watch=$("$bin" watch --prometheus http://127.0.0.1:9 --once 2>&1 || true)
grep -q "cannot reach Prometheus" <<<"$watch" || fail "watch without a Prometheus said: $watch"
echo "deb_test: the unpacked laggard ran --version ($got), demo and watch (its HTTP module)"
