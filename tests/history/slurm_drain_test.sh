#!/usr/bin/env bash
# `laggard history drain --apply` against a real Slurm: a single-node
# cluster (munged, slurmctld, slurmd; tests/history/start_slurm.sh) whose
# node is named node-01. Four simulated jobs are diagnosed and recorded;
# GPU 2 of node-01 throttles in three. drain --apply must drain node-01 with
# laggard's reason, as `sinfo` shows it. Skips (77) without root or the
# Slurm packages (slurmctld slurmd slurm-client munge), or when the cluster
# takes over 60 s to start.
#
#   slurm_drain_test.sh LAGGARD_BINARY
set -euo pipefail
laggard=$1
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: slurm_drain needs root (slurmd runs as root)"; exit 77
fi
for b in munged slurmctld slurmd sinfo scontrol; do
  if ! command -v "$b" >/dev/null; then
    echo "SKIP: $b not found (apt-get install slurmctld slurmd slurm-client munge)"; exit 77
  fi
done

dir=$(mktemp -d /tmp/laggard-slurm-XXXXXX)
cleanup() { "$here/start_slurm.sh" "$dir" stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT

# Ports of their own, so a cluster left by another run does not answer.
export SLURM_TEST_NODE=node-01 SLURM_TEST_TIMEOUT=60
export SLURM_TEST_CTLD_PORT=$((16817 + RANDOM % 1000)) SLURM_TEST_SLURMD_PORT=$((17817 + RANDOM % 1000))
start=$SECONDS
if ! env_lines=$("$here/start_slurm.sh" "$dir" 2>"$dir/start.err"); then
  if [ $((SECONDS - start)) -ge 60 ]; then
    echo "SKIP: Slurm did not start within 60 s"; cat "$dir/start.err"; exit 77
  fi
  echo "FAIL: Slurm did not start"; cat "$dir/start.err"; exit 1
fi
export SLURM_CONF=$(echo "$env_lines" | sed -n 's/^SLURM_CONF=//p')
echo "slurm up in $((SECONDS - start)) s: $(sinfo -h -N -o '%N %T')"

for j in 0 1 2 3; do
  fault=(--fault thermal@node-01:2:0.3)
  [ "$j" = 2 ] && fault=()
  "$laggard" simulate --nodes 2 --gpus-per-node 4 --steps 60 --seed $((10 + j)) --no-traces \
    --no-network --no-nccl-tests --no-nccl-debug --no-effects -q "${fault[@]}" -o "$dir/job$j"
  "$laggard" diagnose "$dir/job$j" --record --history "$dir/h.db" --job-id "slurm:$j" -q
done

"$laggard" history drain --history "$dir/h.db" --apply | tee "$dir/drain.out"
grep -q -- "-> done" "$dir/drain.out" || { echo "FAIL: drain did not run scontrol"; exit 1; }

# A drained idle node reads "drained" (or "draining" while a job runs).
for i in $(seq 1 50); do
  line=$(sinfo -h -N -n node-01 -o '%T|%E')
  case "$line" in drain*) break ;; esac
  sleep 0.1
done
echo "sinfo: $line"
case "$line" in
  drain*"|laggard: GPU 2"*) ;;
  *) echo "FAIL: node-01 is not drained with laggard's reason: $line"; exit 1 ;;
esac
if sinfo -h -N -o '%N %T' | grep -v '^node-01 ' | grep -q drain; then
  echo "FAIL: another node was drained"; exit 1
fi
echo "PASS"
