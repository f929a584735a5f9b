# Sourced by the tests that need a real single-node Slurm (node node-01):
#   . tests/history/slurm_test_up.sh NAME TOOL...
# Skips (77) without root or any of munged, slurmctld, slurmd and the TOOLs,
# or when the cluster takes over 60 s to start; fails (1) when it does not
# start. Sets $dir (a temporary folder, removed with the cluster at exit)
# and exports SLURM_CONF. Ports of its own, so a cluster left by another
# run does not answer.
slurm_name=$1
shift
slurm_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
start_slurm=$slurm_here/start_slurm.sh

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: $slurm_name needs root (slurmd runs as root)"; exit 77
fi
for b in munged slurmctld slurmd "$@"; do
  if ! command -v "$b" >/dev/null; then
    echo "SKIP: $b not found (apt-get install slurmctld slurmd slurm-client munge)"; exit 77
  fi
done

dir=$(mktemp -d "/tmp/laggard-$slurm_name-XXXXXX")
cleanup() { "$start_slurm" "$dir" stop >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap cleanup EXIT

export SLURM_TEST_NODE=node-01 SLURM_TEST_TIMEOUT=60
export SLURM_TEST_CTLD_PORT=$((16817 + RANDOM % 3000)) SLURM_TEST_SLURMD_PORT=$((20817 + RANDOM % 3000))
start=$SECONDS
if ! env_lines=$("$start_slurm" "$dir" 2>"$dir/start.err"); then
  if [ $((SECONDS - start)) -ge 60 ]; then
    echo "SKIP: Slurm did not start within 60 s"; cat "$dir/start.err"; exit 77
  fi
  echo "FAIL: Slurm did not start"; cat "$dir/start.err"; exit 1
fi
SLURM_CONF=$(echo "$env_lines" | sed -n 's/^SLURM_CONF=//p')
export SLURM_CONF
echo "slurm up in $((SECONDS - start)) s: $(sinfo -h -N -o '%N %T')"
