#!/bin/bash
# Slurm Epilog: stops the agent the prolog started for this job. SIGTERM
# makes it flush its rolling logs and exit 0; they stay in
# /var/log/laggard/job-<id> for `laggard diagnose`.
RUN_DIR=/run/laggard
PIDFILE=$RUN_DIR/agent.pid
[ -f "$PIDFILE" ] || exit 0
[ "$(cat "$RUN_DIR/agent.job" 2>/dev/null)" = "$SLURM_JOB_ID" ] || exit 0
PID=$(cat "$PIDFILE")
kill -TERM "$PID" 2>/dev/null
for _ in $(seq 1 50); do
  kill -0 "$PID" 2>/dev/null || break
  sleep 0.2
done
rm -f "$PIDFILE" "$RUN_DIR/agent.job"
exit 0
