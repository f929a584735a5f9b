#!/usr/bin/env python3
"""`laggard confirm --launcher local` against a real CPU hog, and without it.

The report is a real PyTorch DDP job's (tests/data/realjobs/w2_cpu_hog: a busy
loop pinned to rank 1's core, ranks pinned one per core; laggard names rank 1,
host contention). Per repetition:

  hog      a busy loop pinned to the suspect's core, as during the job, while
           `laggard confirm REPORT --launcher local --rank-cores 0:0,1:1`
           times the GEMM of core 1 against core 0: expected "confirmed";
  no hog   the same with the host quiet: expected "refuted".

Each repetition also measures how far apart the two cores run with nothing
else on them (host_noise.py's pinned loop): this VM's cores drift apart by
themselves (1.1x to 1.8x), and a core slower by itself is a real slow core
that the GEMM rightly reports. Prints one line per run and the totals.

  bench/realjobs/confirm_hog.py --laggard build/release/src/laggard [--reps 6]

Exit 1 when a hog run is not confirmed or a quiet run is confirmed (ctest
realjobs_confirm_hog runs it with --reps 2); 77 without cores 0 and 1 or
OpenBLAS.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host_noise  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(REPO, "tests", "data", "realjobs", "w2_cpu_hog")


def core_ratio():
    """Core 1's time over core 0's for the same pinned loop, both busy."""
    times = host_noise.run([0, 1], 3)
    med = {c: sorted(t)[len(t) // 2] for c, t in times.items()}
    return med[1] / med[0]


def confirm(laggard, report, out_dir):
    r = subprocess.run([laggard, "confirm", report, "--launcher", "local", "--rank-cores",
                        "0:0,1:1", "--out", out_dir, "--json"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"laggard confirm failed: {r.stderr}")
    test = json.loads(r.stdout)["tests"][0]
    run = test.get("run", {})
    return run.get("verdict"), run.get("figures"), run.get("state")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--laggard", default=os.path.join(REPO, "build", "release", "src", "laggard"))
    ap.add_argument("--reps", type=int, default=6)
    a = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        print("SKIP: needs cores 0 and 1")
        return 77
    tmp = tempfile.mkdtemp(prefix="confirm-hog-")
    report = os.path.join(tmp, "report.json")
    subprocess.run([a.laggard, "diagnose", RUN, "--json", report, "-q"], check=True,
                   stdout=subprocess.DEVNULL)
    want = {"hog": "confirmed", "no hog": "refuted"}
    right = {k: 0 for k in want}
    false_confirms = 0
    for rep in range(a.reps):
        for case in ("hog", "no hog"):
            ratio = core_ratio()
            hog = None
            if case == "hog":
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                       preexec_fn=lambda: os.sched_setaffinity(0, {1}))
            try:
                verdict, figures, state = confirm(a.laggard, report, os.path.join(tmp, f"{rep}"))
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
            if state != "ran":
                print(f"SKIP: laggard gemm could not run: {state} {figures}")
                return 77
            ok = verdict == want[case]
            right[case] += ok
            false_confirms += case == "no hog" and verdict == "confirmed"
            print(f"rep {rep + 1} {case:6} cores 1/0 {ratio:.2f}x  {state} {verdict}: {figures}"
                  f"  {'ok' if ok else 'MISS'}", flush=True)
    for case in want:
        print(f"{case}: {want[case]} in {right[case]} of {a.reps}")
    return 0 if right["hog"] == a.reps and not false_confirms else 1


if __name__ == "__main__":
    sys.exit(main())
