#!/usr/bin/env bash
# `laggard confirm --launcher ssh` through a real sshd (Debian's
# openssh-server) and ssh client: the test starts sshd on 127.0.0.1, on a
# port of its own, with a host key and a client key made for it, and names
# two hosts, node-01 and node-02, that the client's config points at it. A
# GPU suspect named by hand, node-01:0: its nvidia-smi and dcgmi diag, the
# control's dcgmi diag on node-02, and the GEMM on both hosts (laggard gemm
# --gpus all, from a folder whose name holds a space and a quote, so the
# launcher's quoting for the remote shell is what runs it). Stand-in
# nvidia-smi and dcgmi (sshd puts them on the session's PATH) print what
# they were asked and the SSH_CONNECTION they ran under. Skips (77) without
# root (sshd logs in as root here) or openssh-server.
#
#   ssh_confirm_test.sh LAGGARD_BINARY
set -euo pipefail
laggard=$1
sshd=/usr/sbin/sshd
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: the ssh test needs root (sshd)"; exit 77; fi
if [ ! -x "$sshd" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
  echo "SKIP: sshd or ssh not found (apt-get install openssh-server openssh-client)"; exit 77
fi
dir=$(mktemp -d /tmp/laggard-confirm-ssh-XXXXXX)
cleanup() {
  [ -f "$dir/sshd.pid" ] && kill "$(cat "$dir/sshd.pid")" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
chmod 755 "$dir"
port=$((22000 + RANDOM % 20000))
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key"
cp "$dir/client_key.pub" "$dir/authorized_keys"
mkdir -p /run/sshd "$dir/bin"
for tool in nvidia-smi dcgmi; do
  printf '#!/bin/sh\necho "stand-in %s via ssh [${SSH_CONNECTION:-none}]: $*"\n' "$tool" \
    >"$dir/bin/$tool"
  chmod +x "$dir/bin/$tool"
done
cat >"$dir/sshd_config" <<CONF
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
SetEnv PATH=$dir/bin:/usr/local/bin:/usr/bin:/bin
CONF
"$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log" || { cat "$dir/sshd.log"; exit 1; }
# The client: node-01 and node-02 are this sshd. A wrapper gives the real
# ssh its config file; the launcher's own arguments pass through unchanged.
cat >"$dir/ssh_config" <<CONF
Host node-01 node-02
  HostName 127.0.0.1
  Port $port
  User root
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  StrictHostKeyChecking accept-new
CONF
mkdir "$dir/client"
printf '#!/bin/sh\nexec %s -F %s "$@"\n' "$(command -v ssh)" "$dir/ssh_config" >"$dir/client/ssh"
chmod +x "$dir/client/ssh"
odd="$dir/it's here"
mkdir "$odd"
cp "$laggard" "$odd/laggard"
printf 'node-01\nnode-02\n' >"$dir/hosts.txt"

PATH="$dir/client:$PATH" "$laggard" confirm --suspect node-01:0 --hosts "$dir/hosts.txt" \
  --launcher ssh --laggard "$odd/laggard" --gpus-per-node 2 --out "$dir/out" | tee "$dir/confirm.out"
fail=0
runs=$(grep -c -- '-> ran' "$dir/confirm.out" || true)
[ "$runs" = 3 ] || { echo "FAIL: $runs of 3 health checks ran through ssh"; fail=1; }
grep -q "stand-in nvidia-smi via ssh \[127.0.0.1 [0-9]* 127.0.0.1 $port\]: -q -i 0" \
  "$dir/out/test-1.txt" || { echo "FAIL: nvidia-smi did not run through sshd"; cat "$dir/out/test-1.txt"; fail=1; }
grep -q "stand-in dcgmi via ssh \[.*\]: diag -r 1 -i 0" "$dir/out/test-3.txt" ||
  { echo "FAIL: the control's dcgmi did not run through sshd"; cat "$dir/out/test-3.txt"; fail=1; }
# The GEMM: the binary in the odd folder ran on both hosts; no GPU here, so
# it says why it timed none (no CUDA runtime, or no driver for it).
for t in 4 5; do
  grep -q "^laggard gemm: \(cannot load the CUDA runtime\|cudaGetDeviceCount\)" "$dir/out/test-$t.txt" ||
    { echo "FAIL: laggard gemm did not run through ssh (test $t)"; cat "$dir/out/test-$t.txt"; fail=1; }
done
[ $fail = 0 ] && echo "PASS: ssh ran every test on its host through a real sshd"
exit $fail
