#!/usr/bin/env python3
"""How unequal this host's cores are: the noise floor of real-job accuracy.

Times the same pure-Python loop on each core, first one core at a time, then
on all cores at once (each process pinned to its core), and prints each
core's times and the ratio of the slowest core to the fastest. On a host
whose vCPUs share physical cores (SMT siblings) or a hypervisor's time, two
identical processes run at different speeds, and the ranks of a real job
running on them differ by as much: a "healthy" job there has a real, if
accidental, straggler. bench/realjobs reports its accuracy against this
floor (docs/accuracy.md).

  bench/realjobs/host_noise.py [--rounds 3] [--reps 8]
"""

import argparse
import multiprocessing as mp
import os
import statistics
import time


def work(core, reps, out):
    os.sched_setaffinity(0, {core})
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        x = 0
        for i in range(1_000_000):
            x += i * i
        times.append(time.perf_counter() - t)
    out.put((core, times))


def run(cores, reps):
    out = mp.Queue()
    procs = [mp.Process(target=work, args=(c, reps, out)) for c in cores]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    return got


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=8)
    a = p.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    worst = {"alone": 1.0, "together": 1.0}
    for r in range(a.rounds):
        for mode in ("alone", "together"):
            got = {}
            if mode == "alone":
                for c in cores:
                    got.update(run([c], a.reps))
            else:
                got = run(cores, a.reps)
            med = {c: statistics.median(t) for c, t in got.items()}
            ratio = max(med.values()) / min(med.values())
            worst[mode] = max(worst[mode], ratio)
            line = "  ".join(f"cpu{c} {1000 * med[c]:.0f} ms" for c in cores)
            print(f"round {r} {mode:<8} {line}   slowest/fastest {ratio:.2f}x")
    print(f"\nworst slowest/fastest core: alone {worst['alone']:.2f}x, "
          f"all cores busy {worst['together']:.2f}x")


if __name__ == "__main__":
    main()
