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

The issue's scale run (step logs of 16,384 ranks, 3-step traces of 1,024):

  mpi_bench.py --laggard build/release/src/laggard --nodes 2048 --gpus 8 \
      --steps 100 --trace-steps 3 --trace-ranks 0-1023 --rounds 1

Under mpirun each process runs inside GNU time, so the peak RSS is given
per process (process 0 first).
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


# Each process under mpirun in GNU time, its line tagged with its MPI rank.
PER_PROCESS_TIME = ('exec /usr/bin/time -f "maxrss_kb=%M process=$OMPI_COMM_WORLD_RANK" "$@"')


def timed(cmd, cwd):
    start = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-f", "maxrss_kb=%M"] + cmd, cwd=cwd,
                       capture_output=True, text=True)
    wall = time.monotonic() - start
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-1000:]}")
    per = sorted((int(p), int(kb)) for kb, p in
                 re.findall(r"maxrss_kb=(\d+) process=(\d+)", r.stderr))
    rss = [kb for _, kb in per] or [int(x) for x in re.findall(r"maxrss_kb=(\d+)", r.stderr)]
    gathered = re.search(r"gathered ([\d.]+) MB", r.stderr)
    return wall, r.stdout, rss, gathered.group(1) if gathered else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--laggard", required=True)
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--trace-steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--procs", type=int, nargs="+", default=[2])
    ap.add_argument("--trace-ranks", default="", help="only these ranks write traces (0-1023)")
    ap.add_argument("--fault", default="thermal@node-01:2:25%")
    a = ap.parse_args()
    laggard = os.path.abspath(a.laggard)
    tmp = tempfile.mkdtemp(prefix="laggard-mpi-bench-")
    try:
        sim = [laggard, "simulate", "-o", "sim", "--nodes", str(a.nodes), "--gpus-per-node",
               str(a.gpus), "--steps", str(a.steps), "--seed", "3", "--trace-steps",
               str(a.trace_steps), "--fault", a.fault]
        if a.trace_ranks:
            sim += ["--trace-ranks", a.trace_ranks]
        start = time.monotonic()
        subprocess.run(sim, cwd=tmp, check=True, capture_output=True)
        files = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs]
        size = sum(os.path.getsize(f) for f in files)
        traces = [f for f in files if ".pt.trace.json" in f]
        print(f"run: {a.nodes * a.gpus} ranks, {len(files)} files, {size / 1e6:.1f} MB, "
              f"{len(traces)} traces of {a.trace_steps} profiled steps "
              f"({sum(os.path.getsize(f) for f in traces) / 1e6:.1f} MB); "
              f"simulated in {time.monotonic() - start:.1f} s")
        mpirun = ["mpirun", "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            mpirun.append("--allow-run-as-root")
        configs = [("1 process x 1 thread", [laggard, "diagnose", "sim", "--threads", "1",
                                              "--json", "-"])]
        for p in a.procs:
            configs.append((f"mpirun -n {p} x 1 thread",
                            mpirun + ["-n", str(p), "sh", "-c", PER_PROCESS_TIME, "sh",
                                      laggard, "diagnose", "--mpi", "sim", "--threads", "1",
                                      "--json", "-"]))
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
              f"{'gathered MB':>12}  peak RSS MB (per process)")
        for name, _ in configs:
            w = walls[name]
            rss, gathered = facts[name]
            per = rss  # by process, 0 first
            print(f"{name:<26} {min(w):7.3f} {statistics.median(w):9.3f} {max(w):7.3f} "
                  f"{base / statistics.median(w):8.2f}x {gathered:>12}  "
                  f"{' / '.join(f'{kb / 1024:.1f}' for kb in per)}")
        print(f"steal: {100.0 * (steal1 - steal0) / max(1, total1 - total0):.1f}% of CPU time; "
              "reports identical")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
