#!/usr/bin/env python3
"""Start-up and small-input wall time of laggard, hyperfine-style.

Runs `laggard --version` and `laggard diagnose TRACE` (one ~100 MB Kineto
trace) N times each, and prints min / median / max in milliseconds, for
laggard's binary and, with --baseline, another binary side by side, run
alternately so that the machine's drift hits both alike.

  bench/startup/startup_bench.py --laggard build/release/src/laggard \\
      [--baseline OTHER] [--trace FILE] [--runs 30]

Without --trace, one rank's ~100 MB trace is generated with the project's
trace_ingest_bench (--size-gb 0.1, next to the binary's build folder) into
a temporary folder, deleted at the end. Results: docs/performance.md,
"Start-up".
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd):
    start = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - start, rc


def make_trace(laggard, folder):
    bench = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(laggard))),
                         "bench", "trace_ingest_bench")
    if not os.path.exists(bench):
        sys.exit(f"startup_bench: no --trace and no {bench} to make one "
                 "(cmake --build --preset release --target trace_ingest_bench)")
    subprocess.run([bench, "--size-gb", "0.1", "--repeat", "1", "--dir", folder, "--keep"],
                   stdout=subprocess.DEVNULL, check=True)
    found = sorted(glob.glob(os.path.join(folder, "plain", "*", "rank-0.*.json")))
    if not found:
        sys.exit(f"startup_bench: {bench} left no plain trace under {folder}")
    return found[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--laggard", required=True)
    p.add_argument("--baseline", help="another laggard binary, timed alternately")
    p.add_argument("--trace", help="a Kineto trace for `diagnose` (default: ~100 MB, generated)")
    p.add_argument("--runs", type=int, default=30)
    a = p.parse_args()
    if a.runs < 1:
        sys.exit("startup_bench: --runs must be at least 1")
    binaries = [("laggard", a.laggard)] + ([("baseline", a.baseline)] if a.baseline else [])
    for _, b in binaries:
        if not os.access(b, os.X_OK):
            sys.exit(f"startup_bench: {b} is not an executable")
    tmp = None
    trace = a.trace
    if trace is None:
        tmp = tempfile.mkdtemp(prefix="laggard-startup-")
        trace = make_trace(a.laggard, tmp)
    try:
        size = os.path.getsize(trace) / 1e6
        print(f"startup_bench: {a.runs} runs each, trace {trace} ({size:.1f} MB), "
              f"load {os.getloadavg()[0]:.2f}")
        print("| binary | command | min ms | median ms | max ms |")
        print("|---|---|---|---|---|")
        for label, args in (("--version", ["--version"]), ("diagnose", ["diagnose", trace])):
            times = {name: [] for name, _ in binaries}
            for _ in range(a.runs):
                for name, b in binaries:
                    dt, rc = timed([b] + args)
                    if rc != 0:
                        sys.exit(f"startup_bench: {b} {' '.join(args)} exited {rc}")
                    times[name].append(dt * 1000)
            for name, b in binaries:
                t = times[name]
                print(f"| {name} | `{label}` | {min(t):.1f} | {statistics.median(t):.1f} | "
                      f"{max(t):.1f} |")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
