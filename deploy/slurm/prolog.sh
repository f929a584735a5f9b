#!/bin/bash
# Slurm Prolog: a laggard agent for the job on each of its nodes
# (docs/agent.md, "Deployment"). In slurm.conf:
#
#   Prolog=/etc/slurm/prolog.d/laggard.sh        # this file, mode 0755
#   Epilog=/etc/slurm/epilog.d/laggard.sh        # epilog.sh
#   TaskProlog=/etc/slurm/task_prolog.d/laggard.sh   # task_prolog.sh
#   PrologFlags=Alloc                            # run at allocation, on every node
#
# For nodes given whole to one job (the usual case for training). The agent
# is labelled job=$SLURM_JOB_ID and logs to /var/log/laggard/job-<id>, which
# `laggard diagnose` reads after the job. A node that already runs the
# systemd agent (deploy/systemd) is left alone. Never fails the job: a
# monitor that cannot start is not a reason to drain the node.

LAGGARD=${LAGGARD:-/usr/local/bin/laggard}
RUN_DIR=/run/laggard
PIDFILE=$RUN_DIR/agent.pid

[ -x "$LAGGARD" ] || exit 0
mkdir -p "$RUN_DIR" && chmod 0755 "$RUN_DIR"
if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
  exit 0  # an agent is already running
fi
if systemctl is-active --quiet laggard-agent 2>/dev/null; then
  exit 0
fi
LOG_DIR=/var/log/laggard/job-$SLURM_JOB_ID
mkdir -p "$LOG_DIR"
setsid "$LAGGARD" agent --listen 0.0.0.0:9400 --unix "$RUN_DIR/steps.sock" \
  --log-dir "$LOG_DIR" --job "$SLURM_JOB_ID" --host "$(hostname -s)" \
  >"$LOG_DIR/agent.out" 2>&1 </dev/null &
echo $! >"$PIDFILE"
echo "$SLURM_JOB_ID" >"$RUN_DIR/agent.job"
exit 0
