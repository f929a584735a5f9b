#!/usr/bin/env python3
"""Confirmation read-back on simulated clusters: node vs NIC vs fabric vs nothing.

Each draw simulates a cluster (`laggard simulate --all-pair-tests`: every node
pair's nccl-tests all_reduce_perf output and every host's ibstat, from the
simulator's link model) with one of four truths, names a suspect host as a
diagnosis or a user would, and lets `laggard confirm --suspect HOST --hosts
switch-map.csv --results RUN --json` plan its tests and read them back from
the simulated outputs:

  node     the host itself is slow on the network, its ports all Active:
           socket_fallback (NCCL over TCP), nvlink_down (one GPU's NVLinks),
           pcie_downgrade (one GPU's link at x4 or less); suspect: that host.
           Right: confirmed, locus node.
  nic      one of its rails: nic_degraded (the port at 200 or 100 Gb/s) or
           ib_port_down; suspect: that host. Right: confirmed, locus nic.
  fabric   shared_switch_congestion on one leaf switch (its uplinks carry
           another job: pairs leaving the switch slow, pairs inside it not),
           severity 0.4-0.7, present while the tests run; suspect: a host
           under it. Right: locus fabric
           (or switch), the host not confirmed.
  nothing  no fault; suspect: a random host. Right: refuted.

Real pairs of one cluster differ more than the simulator's (its times vary
by 1%): --noise F (default 0.1) scales each pair's whole table by a factor
drawn from [1-F, 1+F] before the read-back, so a healthy pair may run 18%
below another.

Anything else is wrong (a confirmed node on a healthy host is a false
culprit, counted apart).

--bisect: the suspicion names no host (`--suspect all`: a network slow as a
whole), so confirm bisects the hosts a round at a time. Each round's tests
(the halves still suspected, then single hosts with a cleared one) are
simulated with `--group-tests` on the same cluster and read back, until
the answer comes (a file keeps its noise factor across rounds). Truths
node, nic (right: confirmed, the faulty host), fabric (right: locus fabric,
nobody confirmed) and nothing (right: refuted); clusters of 4 to 33 nodes;
checked: at most 2·ceil(log2 N) runs. Also checked: at most 3 benchmark runs planned per
suspect. Clusters: 8, 12 or 16 nodes of 4 GPUs, 4 nodes per leaf switch.

Usage
  bench/confirm/confirm_accuracy.py --laggard build/release/src/laggard [--draws 200] [--seed 1]
      [--noise 0.1] [--bisect] [--keep DIR]
Exit 0 when at least 95% (--min-right) of the draws are right, no healthy
host is confirmed and no suspect took more runs than its bound; 1
otherwise, 2 on a tool error.
"""

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

CLASSES = ["node", "nic", "fabric", "nothing"]


def draw(rng, index, bisect=False):
    nodes = rng.choice(list(range(4, 34)) if bisect else [8, 12, 16])
    g = 4
    host = rng.randrange(nodes)
    name = f"node-{host:02d}"
    truth = CLASSES[index % 4]
    fault = None
    suspect = name
    if truth == "node":
        kind = rng.choice(["socket_fallback", "nvlink_down", "pcie_downgrade"])
        if kind == "socket_fallback":
            fault = f"socket_fallback@{name}"
        elif kind == "nvlink_down":
            fault = f"nvlink_down@{name}:{rng.randrange(g)}"
        else:
            fault = f"pcie_downgrade@{name}:{rng.randrange(g)}:{rng.uniform(0.75, 0.9):.2f}"
    elif truth == "nic":
        nic = f"mlx5_{rng.randrange(g)}"
        if rng.random() < 0.5:
            fault = f"ib_port_down@{name}:{nic}"
        else:
            fault = f"nic_degraded@{name}:{nic}:{rng.choice([0.5, 0.75])}"
    elif truth == "fabric":
        if nodes <= 4:  # one switch: no test leaves it, so no congestion to see
            nodes = 5
        switches = nodes // 4  # full switches of 4 (a last partial one is left out)
        s = rng.randrange(switches)
        # Present while the tests run (every step: period 1).
        fault = (f"shared_switch_congestion@node-{4 * s:02d}..node-{4 * s + 3:02d}:"
                 f"{rng.uniform(0.4, 0.7):.2f},period=1,duration=1")
        suspect = f"node-{4 * s + rng.randrange(4):02d}"
    if bisect:
        suspect = "all"
    return {"nodes": nodes, "gpus": g, "truth": truth, "fault": fault, "suspect": suspect,
            "host": name, "seed": rng.randrange(1 << 30)}


def answer(conf):
    """The class the read-back names, from its confirmation entry."""
    verdict, locus = conf.get("verdict"), conf.get("locus")
    if verdict == "confirmed" and locus in ("node", "nic"):
        return locus
    if locus in ("fabric", "switch"):
        return "fabric"
    if verdict == "refuted" and not locus:
        return "nothing"
    return f"{verdict}/{locus}"


def add_noise(run, rng, noise, factors):
    """Each test's table scaled by one factor: time / f, bandwidths x f. A
    file keeps its factor across the rounds of a bisection (`factors`), as a
    result already measured would."""
    folder = os.path.join(run, "nccl-tests")
    for name in sorted(os.listdir(folder)):
        f = factors.setdefault(name, rng.uniform(1 - noise, 1 + noise))
        path = os.path.join(folder, name)
        lines = []
        with open(path) as fh:
            for line in fh:
                w = line.split()
                if len(w) == 13 and w[0].isdigit():
                    line = (f"{w[0]:>12}  {w[1]:>12}  {w[2]:>8}  {w[3]:>6}  {w[4]:>6}  "
                            f"{float(w[5]) / f:7.1f}  {float(w[6]) * f:6.2f}  {float(w[7]) * f:6.2f}  "
                            f"{w[8]:>5}  {float(w[9]) / f:7.1f}  {float(w[10]) * f:6.2f}  "
                            f"{float(w[11]) * f:6.2f}  {w[12]:>5}\n")
                lines.append(line)
        with open(path, "w") as fh:
            fh.writelines(lines)


def simulate(laggard, d, out, groups, bisect):
    cmd = [laggard, "simulate", "-q", "-o", out, "--nodes", str(d["nodes"]), "--gpus-per-node",
           str(d["gpus"]), "--nodes-per-switch", "4", "--steps", "30", "--seed", str(d["seed"]),
           "--no-traces", "--no-hardware", "--no-nccl-debug", "--no-effects", "--step-format",
           "none"]
    if not bisect:
        cmd.append("--all-pair-tests")
    for g in groups:
        cmd += ["--group-tests", g]
    if d["fault"]:
        cmd += ["--fault", d["fault"]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"simulate failed: {' '.join(cmd)}\n{r.stderr}")


def confirm(laggard, d, out):
    cmd = [laggard, "confirm", "--suspect", d["suspect"], "--hosts",
           os.path.join(out, "switch-map.csv"), "--results", out, "--json", "--gpus-per-node",
           str(d["gpus"])]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"confirm failed: {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout)


def run_one(laggard, d, work, rng, noise, bisect):
    out = os.path.join(work, "run")
    shutil.rmtree(out, ignore_errors=True)
    groups = []
    factors = {}
    for _ in range(12):  # rounds; a bisection of 32 hosts takes 5
        simulate(laggard, d, out, groups, bisect)
        if noise > 0:
            add_noise(out, rng, noise, factors)
        doc = confirm(laggard, d, out)
        todo = ["+".join(t["hosts"]) for t in doc["tests"]
                if t.get("role") == "half" and (t.get("run") or {}).get("state") == "not run"]
        if not bisect or not todo:
            break
        groups += todo
    runs = sum(1 for t in doc["tests"] if t["kind"] in ("communication", "compute"))
    conf = doc["confirmation"][0] if doc["confirmation"] else {}
    got = answer(conf)
    if bisect and got in ("node", "nic") and conf.get("host") != d["host"]:
        got = f"wrong host {conf.get('host')}"
    if bisect and got == "node" and d["truth"] == "nic":
        got = "nic"  # a bisection finds the host; which part of it is the triangle's to say
    return got, conf, runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--laggard", required=True)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--noise", type=float, default=0.1,
                    help="each pair's figures scaled by a factor in [1-F, 1+F] (default 0.1)")
    ap.add_argument("--bisect", action="store_true",
                    help="the suspicion names no host: confirm bisects (node, nic, nothing)")
    ap.add_argument("--min-right", type=float, default=0.95,
                    help="the share right for exit 0 (default 0.95; a short regression run may "
                         "ask less)")
    ap.add_argument("--keep", help="keep each wrong draw's run folder here")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="laggard-confirm-acc-")
    classes = CLASSES
    tally = {c: [0, 0] for c in classes}
    false_culprits, over_bound, wrong = 0, 0, []
    start = time.time()
    try:
        for i in range(a.draws):
            d = draw(rng, i, a.bisect)
            try:
                got, conf, runs = run_one(a.laggard, d, work, rng, a.noise, a.bisect)
            except (RuntimeError, json.JSONDecodeError) as e:
                print(f"draw {i}: {e}", file=sys.stderr)
                return 2
            tally[d["truth"]][1] += 1
            bound = 2 * math.ceil(math.log2(d["nodes"])) if a.bisect else 3
            over_bound += runs > bound
            if got == d["truth"]:
                tally[d["truth"]][0] += 1
            else:
                wrong.append((i, d, got, conf.get("figures", "")))
                if (d["truth"] in ("nothing", "fabric") and got in ("node", "nic")) or \
                        got.startswith("wrong host"):
                    false_culprits += 1
                if a.keep:
                    shutil.copytree(os.path.join(work, "run"), os.path.join(a.keep, f"draw{i}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    right = sum(v[0] for v in tally.values())
    print(f"confirm read-back{' by bisection' if a.bisect else ''}, {a.draws} simulated draws "
          f"(seed {a.seed}, noise {a.noise}), "
          f"{time.time() - start:.0f} s")
    print("| truth | draws | right |")
    print("|---|---|---|")
    for c in classes:
        print(f"| {c} | {tally[c][1]} | {tally[c][0]} |")
    print(f"right: {right} of {a.draws} ({100.0 * right / max(1, a.draws):.1f}%); "
          f"healthy hosts confirmed: {false_culprits}; over the runs' bound "
          f"({'2·ceil(log2 N)' if a.bisect else 3}): {over_bound}")
    for i, d, got, figures in wrong:
        print(f"  wrong: draw {i} {d['truth']} ({d['fault']}, suspect {d['suspect']}, "
              f"{d['nodes']} nodes): {got} — {figures}")
    ok = right >= a.min_right * a.draws and false_culprits == 0 and over_bound == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
