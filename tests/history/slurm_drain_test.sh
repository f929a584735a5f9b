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
. "$here/slurm_test_up.sh" slurm_drain sinfo scontrol

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
