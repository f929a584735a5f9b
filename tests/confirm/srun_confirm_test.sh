#!/usr/bin/env bash
# `laggard confirm --launcher srun` through a real single-node Slurm (munged,
# slurmctld, slurmd started by tests/history/start_slurm.sh; node node-01):
# a GPU suspect named by hand, node-01:0, whose health checks (nvidia-smi -q
# and dcgmi diag on GPU 0, dcgmi diag on GPU 1 as the control) and its GEMM
# (laggard gemm --gpus all) srun runs on node-01, each asking for the
# node's 8 GPUs (declared as GRES). Stand-in nvidia-smi and
# dcgmi on PATH (srun passes the environment) print what they were asked,
# so the test sees srun ran each planned command on the node, within its
# limit, output saved. Skips (77) without root or the Slurm packages, or
# when the cluster takes over 60 s to start.
#
#   srun_confirm_test.sh LAGGARD_BINARY
set -euo pipefail
laggard=$1
here=$(cd "$(dirname "$0")" && pwd)
# Eight GPUs declared as GRES: srun allocates a GPU test's host whole.
export SLURM_TEST_GPUS=8
. "$here/../history/slurm_test_up.sh" srun_confirm srun sinfo

mkdir "$dir/bin"
for tool in nvidia-smi dcgmi; do
  printf '#!/bin/sh\necho "stand-in %s on $(hostname) job ${SLURM_JOB_ID:-none}: $*"\n' "$tool" \
    >"$dir/bin/$tool"
  chmod +x "$dir/bin/$tool"
done
export PATH="$dir/bin:$PATH"
printf 'node-01\n' >"$dir/hosts.txt"

"$laggard" confirm --suspect node-01:0 --hosts "$dir/hosts.txt" --launcher srun \
  --laggard "$laggard" --out "$dir/out" | tee "$dir/confirm.out"
fail=0
runs=$(grep -c -- '-> ran' "$dir/confirm.out" || true)
[ "$runs" = 3 ] || { echo "FAIL: $runs of 3 srun tests ran (the suspect's two, a control)"; fail=1; }
grep -q -- "srun --nodes=1 --ntasks=1 --exclusive --gpus-per-node=8 --nodelist=node-01 --time=1 nvidia-smi" "$dir/confirm.out" ||
  { echo "FAIL: no srun command line for nvidia-smi"; fail=1; }
grep -q "stand-in nvidia-smi on .* job [0-9]*: -q -i 0" "$dir/out/test-1.txt" ||
  { echo "FAIL: nvidia-smi did not run under a Slurm job"; cat "$dir/out/test-1.txt"; fail=1; }
grep -q "stand-in dcgmi on .* job [0-9]*: diag -r 1 -i 0" "$dir/out/test-2.txt" ||
  { echo "FAIL: dcgmi did not run under a Slurm job"; cat "$dir/out/test-2.txt"; fail=1; }
# The GEMM ran under Slurm too; no GPU here, so it says why it timed none
# (no CUDA runtime, or no driver for it).
grep -q "^laggard gemm: \(cannot load the CUDA runtime\|cudaGetDeviceCount\)" "$dir/out/test-4.txt" ||
  { echo "FAIL: laggard gemm --gpus did not run under a Slurm job"; cat "$dir/out/test-4.txt"; fail=1; }
[ -f "$dir/out/confirmation.json" ] || { echo "FAIL: no confirmation.json"; fail=1; }
[ $fail = 0 ] && echo "PASS: srun ran the suspect's health checks on node-01"
exit $fail
