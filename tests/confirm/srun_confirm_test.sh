#!/usr/bin/env bash
# `laggard confirm --launcher srun` through a real single-node Slurm (munged,
# slurmctld, slurmd started by tests/history/start_slurm.sh; node node-01):
# a GPU suspect named by hand, node-01:0, whose health checks (nvidia-smi -q
# and dcgmi diag on GPU 0, dcgmi diag on GPU 1 as the control) srun runs on
# node-01. Stand-in nvidia-smi and
# dcgmi on PATH (srun passes the environment) print what they were asked,
# so the test sees srun ran each planned command on the node, within its
# limit, output saved. Skips (77) without root or the Slurm packages, or
# when the cluster takes over 60 s to start.
#
#   srun_confirm_test.sh LAGGARD_BINARY
set -euo pipefail
laggard=$1
here=$(cd "$(dirname "$0")" && pwd)
start_slurm=$here/../history/start_slurm.sh

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: srun_confirm needs root (slurmd runs as root)"; exit 77
fi
for b in munged slurmctld slurmd srun sinfo; do
  if ! command -v "$b" >/dev/null; then
    echo "SKIP: $b not found (apt-get install slurmctld slurmd slurm-client munge)"; exit 77
  fi
done

dir=$(mktemp -d /tmp/laggard-srun-XXXXXX)
cleanup() { "$start_slurm" "$dir" stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT

export SLURM_TEST_NODE=node-01 SLURM_TEST_TIMEOUT=60
export SLURM_TEST_CTLD_PORT=$((18817 + RANDOM % 1000)) SLURM_TEST_SLURMD_PORT=$((19817 + RANDOM % 1000))
start=$SECONDS
if ! env_lines=$("$start_slurm" "$dir" 2>"$dir/start.err"); then
  if [ $((SECONDS - start)) -ge 60 ]; then
    echo "SKIP: Slurm did not start within 60 s"; cat "$dir/start.err"; exit 77
  fi
  echo "FAIL: Slurm did not start"; cat "$dir/start.err"; exit 1
fi
export SLURM_CONF=$(echo "$env_lines" | sed -n 's/^SLURM_CONF=//p')
echo "slurm up in $((SECONDS - start)) s: $(sinfo -h -N -o '%N %T')"

mkdir "$dir/bin"
for tool in nvidia-smi dcgmi; do
  printf '#!/bin/sh\necho "stand-in %s on $(hostname) job ${SLURM_JOB_ID:-none}: $*"\n' "$tool" \
    >"$dir/bin/$tool"
  chmod +x "$dir/bin/$tool"
done
export PATH="$dir/bin:$PATH"
printf 'node-01\n' >"$dir/hosts.txt"

"$laggard" confirm --suspect node-01:0 --hosts "$dir/hosts.txt" --launcher srun \
  --out "$dir/out" | tee "$dir/confirm.out"
fail=0
runs=$(grep -c -- '-> ran' "$dir/confirm.out" || true)
[ "$runs" = 3 ] || { echo "FAIL: $runs of 3 srun tests ran (the suspect's two, a control)"; fail=1; }
grep -q -- "srun --nodes=1 --ntasks=1 --nodelist=node-01 --time=1 nvidia-smi" "$dir/confirm.out" ||
  { echo "FAIL: no srun command line for nvidia-smi"; fail=1; }
grep -q "stand-in nvidia-smi on .* job [0-9]*: -q -d PERFORMANCE" "$dir/out/test-1.txt" ||
  { echo "FAIL: nvidia-smi did not run under a Slurm job"; cat "$dir/out/test-1.txt"; fail=1; }
grep -q "stand-in dcgmi on .* job [0-9]*: diag -r 1 -i 0" "$dir/out/test-2.txt" ||
  { echo "FAIL: dcgmi did not run under a Slurm job"; cat "$dir/out/test-2.txt"; fail=1; }
[ -f "$dir/out/confirmation.json" ] || { echo "FAIL: no confirmation.json"; fail=1; }
[ $fail = 0 ] && echo "PASS: srun ran the suspect's health checks on node-01"
exit $fail
