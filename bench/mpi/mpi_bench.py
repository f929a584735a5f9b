#!/usr/bin/env python3
"""diagnose --mpi against one process, on a simulated trace-heavy run.

Simulates a run (default 8 nodes x 8 GPUs, 5 profiled steps: 64 Kineto
traces), then times, in one sitting and alternating, `laggard diagnose
--threads 1` and `mpirun -n P laggard diagnose --mpi --threads 1` for each P
given. Prints min / median / max wall time of the rounds, the speed-up of the
medians, the peak RSS of process 0 (GNU time's max over the job's processes
is per process), the bytes gathered and the machine's steal time, and checks
the JSON reports are the same.

  mpi_bench.py --laggard build/release/src/laggard [--nodes 8 --gpus 8
      --trace-steps 5 --rounds 3 --procs 2]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time


def steal_jiffies():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]), sum(int(x) for x in fields[1:])


def timed(cmd, cwd):
    start = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M"] + cmd, cwd=cwd,
                       capture_output=True, text=True)
    wall = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-1000:]}")
    rss = [int(x) for x in re.findall(r"maxrss_kb=(\d+)", r.stderr)]
    gathered = re.search(r"gathered ([\d.]+) MB", r.stderr)
    return wall, r.stdout, max(rss) if rss else 0, gathered.group(1) if gathered else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--laggard", required=True)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--trace-steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--procs", type=int, nargs="+", default=[2])
    a = ap.parse_args()
    laggard = os.path.abspath(a.laggard)
    tmp = tempfile.mkdtemp(prefix="laggard-mpi-bench-")
    try:
        subprocess.run([laggard, "simulate", "-o", "sim", "--nodes", str(a.nodes),
                        "--gpus-per-node", str(a.gpus), "--steps", str(a.steps), "--seed", "3",
                        "--trace-steps", str(a.trace_steps), "--fault", "thermal@node-01:2:25%"],
                       cwd=tmp, check=True, capture_output=True)
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp) for f in fs)
        print(f"run: {a.nodes * a.gpus} ranks, {size / 1e6:.1f} MB "
              f"({a.trace_steps} profiled steps per rank)")
        mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            mpirun.append("--allow-run-as-root")
        configs = [("1 process x 1 thread", [laggard, "diagnose", "sim", "--threads", "1",
                                              "--json", "-"])]
        for p in a.procs:
            configs.append((f"mpirun -n {p} x 1 thread",
                            mpirun + ["-n", str(p), laggard, "diagnose", "--mpi", "sim",
                                      "--threads", "1", "--json", "-"]))
        walls = {name: [] for name, _ in configs}
        facts = {}
        reference = None
        steal0, total0 = steal_jiffies()
        for _ in range(a.rounds):
            for name, cmd in configs:
                wall, out, rss, gathered = timed(cmd, tmp)
                walls[name].append(wall)
                facts[name] = (rss, gathered)
                if reference is None:
                    reference = out
                elif out != reference:
                    raise SystemExit(f"{name}: the JSON report differs from one process's")
        steal1, total1 = steal_jiffies()
        base = statistics.median(walls[configs[0][0]])
        print(f"{'configuration':<26} {'min s':>7} {'median s':>9} {'max s':>7} {'speed-up':>9} "
              f"{'peak RSS MB':>12} {'gathered MB':>12}")
        for name, _ in configs:
            w = walls[name]
            rss, gathered = facts[name]
            print(f"{name:<26} {min(w):7.3f} {statistics.median(w):9.3f} {max(w):7.3f} "
                  f"{base / statistics.median(w):8.2f}x {rss / 1024:12.1f} {gathered:>12}")
        print(f"steal: {100.0 * (steal1 - steal0) / max(1, total1 - total0):.1f}% of CPU time; "
              "reports identical")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
