#!/usr/bin/env bash
# start_slurm.sh - start/stop a private single-node Slurm "cluster" (munged + slurmctld + slurmd)
# for tests. Installs nothing; needs (Debian 12):
#   apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge
#
# Usage:
#   start_slurm.sh DIR          start under DIR; waits until the node is idle; prints on stdout
#                                 SLURM_CONF=DIR/slurm/slurm.conf
#                                 SLURM_NODE=<node name>
#                               (same lines are written to DIR/slurm/env); exit 0
#   start_slurm.sh DIR stop     kill the daemons (also: start_slurm.sh stop DIR)
#   start_slurm.sh DIR status   exit 0 if all three daemons are alive
#
# Clients (sinfo, scontrol, the tool under test) MUST run with SLURM_CONF set to the printed path:
# it selects the controller/ports AND the private munge socket (AuthInfo=socket=...).
#
# Must run as root (slurmd needs it; everything runs as root, SlurmUser=root).
#
# Environment knobs:
#   SLURM_TEST_NODE          node name (default: short hostname; it gets NodeAddr=127.0.0.1)
#   SLURM_TEST_CPUS          CPUs= for the node (default 2; hardware is not checked, config_overrides)
#   SLURM_TEST_GPUS          GPUs the node declares as GRES (default 0: none), each with an
#                            empty file under DIR/slurm/dev as its device (nothing is constrained)
#   SLURM_TEST_CTLD_PORT     slurmctld port (default 6817)
#   SLURM_TEST_SLURMD_PORT   slurmd port (default 6818)
#   SLURM_TEST_TIMEOUT       seconds to wait for the node to become idle (default 30)
set -euo pipefail

die() { echo "start_slurm.sh: $*" >&2; exit 1; }

mode=start
case "${1:-}" in
  start|stop|status) mode=$1; dir=${2:-} ;;
  *) dir=${1:-}; mode=${2:-start} ;;
esac
[ -n "$dir" ] || die "usage: $0 DIR [start|stop|status]"
case "$mode" in start|stop|status) ;; *) die "unknown mode '$mode'";; esac

if [ "$mode" = start ]; then mkdir -p "$dir"; fi
[ -d "$dir" ] || die "no such directory: $dir"
dir=$(cd "$dir" && pwd -P)
case "$dir" in *[[:space:]\'\"\\]*) die "DIR must not contain whitespace, quotes or backslashes: $dir";; esac

S="$dir/slurm"
conf="$S/slurm.conf"
run="$S/run"
sock="$S/munge/run/munge.socket.2"     # must fit in sun_path (107 bytes)
pids=("$run/slurmd.pid" "$run/slurmctld.pid" "$run/munged.pid")

# PID from a pid file, only if that process still is the daemon named by the file
# (guards against a stale pid file whose PID was reused by something else).
pid_of() {
  local pf=$1 pid
  [ -s "$pf" ] || return 1
  pid=$(cat "$pf")
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$(basename "$pf" .pid)" ] || return 1
  echo "$pid"
}
alive() { pid_of "$1" >/dev/null; }

stop_all() {
  # SIGTERM all daemons at once (each takes ~2 s to exit on its own), wait up to 5 s, then SIGKILL.
  local pf pid i live=()
  for pf in "${pids[@]}"; do
    pid=$(pid_of "$pf") || continue
    if kill -TERM "$pid" 2>/dev/null; then live+=("$pid"); fi
  done
  for i in $(seq 1 50); do
    [ ${#live[@]} -gt 0 ] || break
    local still=()
    for pid in "${live[@]}"; do kill -0 "$pid" 2>/dev/null && still+=("$pid"); done
    live=("${still[@]+"${still[@]}"}")
    [ ${#live[@]} -gt 0 ] || break
    sleep 0.1
  done
  for pid in "${live[@]+"${live[@]}"}"; do
    echo "start_slurm.sh: pid $pid ignored SIGTERM for 5 s; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -f "${pids[@]}"
}

case "$mode" in
  stop) stop_all; exit 0 ;;
  status)
    for pf in "${pids[@]}"; do alive "$pf" || exit 3; done
    cat "$S/env"; exit 0 ;;
esac

# ---------------- start ----------------
[ "$(id -u)" -eq 0 ] || die "must run as root"
for b in munged slurmctld slurmd sinfo scontrol; do
  command -v "$b" >/dev/null || die "$b not found (apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge)"
done

# Don't let the caller's Slurm environment leak in (SLURM_CONF of a real cluster, etc.).
for v in $(env | sed -n 's/^\(SLURM_[A-Z_]*\)=.*/\1/p'); do
  case "$v" in SLURM_TEST_*) ;; *) unset "$v";; esac
done

node=${SLURM_TEST_NODE:-$(hostname -s 2>/dev/null || echo localhost)}
cpus=${SLURM_TEST_CPUS:-2}
ctld_port=${SLURM_TEST_CTLD_PORT:-6817}
slurmd_port=${SLURM_TEST_SLURMD_PORT:-6818}
timeout=${SLURM_TEST_TIMEOUT:-30}
[ ${#sock} -le 107 ] || die "munge socket path too long (${#sock} > 107): $sock; use a shorter DIR"

if alive "$run/slurmctld.pid" || alive "$run/slurmd.pid" || alive "$run/munged.pid"; then
  echo "start_slurm.sh: daemons from a previous start are alive; restarting" >&2
  stop_all
fi

# munged refuses group/other-writable dirs on the key/socket/log paths, and requires every
# ancestor of the socket dir to be world-executable (mktemp -d gives 0700): fix DIR itself.
chmod a+x "$dir"
mkdir -p "$S"/{state,spool,log,run} "$S/munge"/{etc,run,lib,log}
chmod 755 "$S" "$S/munge" "$S/munge/run"        # non-root clients must reach the socket
chmod 700 "$S/munge/etc" "$S/munge/lib" "$S/munge/log" "$S/state"
key="$S/munge/etc/munge.key"
if [ ! -s "$key" ]; then
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$key" 2>&1 >&2 || die "mungekey failed"
  else
    dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
  fi
  chmod 600 "$key"
fi

gpus=${SLURM_TEST_GPUS:-0}
gres_node=
[ "$gpus" -gt 0 ] && gres_node=" Gres=gpu:$gpus"
cat >"$conf" <<EOF
# generated by start_slurm.sh - single-node test cluster, everything under $S
ClusterName=laggardtest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Trust the configured CPUs/memory instead of probing the (container) hardware.
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
SlurmdTimeout=300
SlurmctldTimeout=120
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node CPUs=$cpus State=UNKNOWN$gres_node
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
if [ "$gpus" -gt 0 ]; then
  sed -i "1a GresTypes=gpu" "$conf"
  # Slurm drops a GPU without a device file; empty files stand in (nothing
  # constrains devices here: task/none).
  mkdir -p "$S/dev"
  for ((g = 0; g < gpus; g++)); do : >"$S/dev/nvidia$g"; done
  printf 'NodeName=%s Name=gpu File=%s/dev/nvidia[0-%d]\n' "$node" "$S" $((gpus - 1)) \
    >"$(dirname "$conf")/gres.conf"
fi

export SLURM_CONF="$conf"

fail() {
  echo "start_slurm.sh: $*" >&2
  for f in "$S/munge/log/munged.log" "$S/log/slurmctld.log" "$S/log/slurmd.log"; do
    [ -f "$f" ] && { echo "---- tail $f" >&2; tail -n 20 "$f" >&2; }
  done
  stop_all
  exit 1
}

munged --socket="$sock" --key-file="$key" --pid-file="$run/munged.pid" \
       --log-file="$S/munge/log/munged.log" --seed-file="$S/munge/lib/munged.seed" \
       --num-threads=2 >&2 || fail "munged failed to start"
# munged forks only after the socket is listening, but be defensive.
for i in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "munge socket $sock did not appear"

# -c: clean start, ignore any state saved by a previous run in DIR.
slurmctld -c -i >&2 || fail "slurmctld failed to start"
slurmd -N "$node" >&2 || fail "slurmd failed to start"

deadline=$((SECONDS + timeout))
state=
while [ $SECONDS -lt $deadline ]; do
  state=$(sinfo -h -N -n "$node" -o '%T' 2>/dev/null || true)
  case "$state" in idle|idle~|mixed|allocated) break ;; esac
  # A daemon that died after forking (e.g. port already in use) -> fail fast.
  for pf in "${pids[@]}"; do
    alive "$pf" || { sleep 0.3; alive "$pf" || fail "$(basename "$pf" .pid) is not running"; }
  done
  sleep 0.2
done
case "$state" in
  idle|idle~|mixed|allocated) ;;
  *) fail "node $node did not become idle within ${timeout}s (state: '${state:-no answer}')" ;;
esac

printf 'SLURM_CONF=%s\nSLURM_NODE=%s\n' "$conf" "$node" | tee "$S/env"
