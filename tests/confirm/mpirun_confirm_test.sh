#!/usr/bin/env bash
# `laggard confirm --launcher mpirun` through Open MPI's real mpirun, on
# this machine under three names (its host name, localhost, 127.0.0.1):
# the report blames the host name's network; the plan's triangle of
# all_reduce_perf runs goes through mpirun with each host's process count;
# a stand-in all_reduce_perf prints a real nccl-tests output from
# ../shared/corpus (rank 0 only, as nccl-tests does), its bandwidth columns
# scaled by STANDIN_SLOW for the suspect's pairs (3 processes: 1 on the
# suspect, 2 on its partner). Read back, the slow pairs confirm the node;
# unscaled, they refute it. A stand-in ibstat prints a real H100 host's
# ports from the corpus (8 rails Active, unused Ethernet ports Down): the
# node, not one NIC. Skips (77) without mpirun or the corpus.
#
#   mpirun_confirm_test.sh LAGGARD_BINARY CORPUS_DIR
set -euo pipefail
laggard=$1
corpus=$2/nccl_tests/all_reduce_perf_8xH200_single_8G_azure_nccl2.19.3.txt
ibstat=$2/ib_eth/gpud_ibstat.47.0.h100.some.down.0.txt

if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77
fi
for f in "$corpus" "$ibstat"; do
  if [ ! -f "$f" ]; then echo "SKIP: $f not found (the shared corpus is not here)"; exit 77; fi
done

dir=$(mktemp -d /tmp/laggard-confirm-mpi-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
host=$(hostname)

mkdir "$dir/bin"
cat >"$dir/bin/all_reduce_perf" <<STANDIN
#!/bin/sh
# Stand-in for nccl-tests: rank 0 prints the corpus output.
[ "\${OMPI_COMM_WORLD_RANK:-0}" = 0 ] || exit 0
scale=1
[ "\${OMPI_COMM_WORLD_SIZE:-0}" = 3 ] && scale=\${STANDIN_SLOW:-1}
awk -v s="\$scale" '
  /^# Avg bus bandwidth/ { printf "# Avg bus bandwidth    : %.3f\n", \$NF * s; next }
  /^ *[0-9]/ && NF >= 13 { printf "%12s  %12s  %8s  %6s  %6s  %7.0f  %6.2f  %6.2f  %5s  %7.0f  %6.2f  %6.2f  %5s\n", \$1, \$2, \$3, \$4, \$5, \$6 / s, \$7 * s, \$8 * s, \$9, \$10 / s, \$11 * s, \$12 * s, \$13; next }
  { print }' "$corpus"
STANDIN
chmod +x "$dir/bin/all_reduce_perf"
printf '#!/bin/sh\ncat "%s"\n' "$ibstat" >"$dir/bin/ibstat"
chmod +x "$dir/bin/ibstat"
export PATH="$dir/bin:$PATH"

cat >"$dir/report.json" <<REPORT
{"schema": "laggard.report/1",
 "verdict": {"status": "straggler", "summary": "verdict: $host's network is slow",
             "culprits": [{"host": "$host", "cause_class": "communication", "confidence": 0.7}]},
 "ranks": [{"rank": 0, "host": "$host"}, {"rank": 1, "host": "localhost"},
           {"rank": 2, "host": "localhost"}, {"rank": 3, "host": "127.0.0.1"},
           {"rank": 4, "host": "127.0.0.1"}]}
REPORT

fail=0
check() {  # check SLOW EXPECTED_VERDICT
  STANDIN_SLOW=$1 "$laggard" confirm "$dir/report.json" --launcher mpirun --nccl-tests "$dir/bin" \
    --out "$dir/out-$1" >"$dir/out-$1.txt" 2>&1 || true
  cat "$dir/out-$1.txt"
  local runs
  runs=$(grep -c -- '-> ran' "$dir/out-$1.txt" || true)
  if [ "$runs" != 4 ]; then echo "FAIL: $runs of 4 mpirun tests ran (slow $1)"; fail=1; fi
  if ! grep -q -- "-np 3 -H $host:1,127.0.0.1:2" "$dir/out-$1.txt"; then
    echo "FAIL: the suspect's pair did not go to mpirun with each host's processes"; fail=1
  fi
  if ! grep -q "^host $host: $2" "$dir/out-$1.txt"; then
    echo "FAIL: expected 'host $host: $2' (slow $1)"; fail=1
  fi
}
check 0.4 "confirmed (node) .*the node, not one NIC"
check 1 "refuted"
[ $fail = 0 ] && echo "PASS: mpirun ran the triangle; slow pairs confirmed the node, fast refuted it"
exit $fail
