#!/bin/bash
# Slurm TaskProlog: "export" lines printed here enter every task's
# environment, so python/laggard_step.py finds the node's agent.
echo "export LAGGARD_STEP_ADDR=unix:/run/laggard/steps.sock"
