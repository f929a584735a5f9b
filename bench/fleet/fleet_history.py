#!/usr/bin/env python3
"""Fleet-history benchmark: many simulated jobs on one fleet, then `laggard history`.

What it does
  1. Plans --jobs jobs on a fleet of --fleet-nodes nodes (fleet-00 .. fleet-63).
     Each job runs on --nodes-per-job distinct random fleet nodes x --gpus-per-node
     GPUs, 150-200 steps, its own simulator seed and start time. Ground truth:
       * chronic GPU fleet-07 GPU 3 and fleet-41 GPU 5: when the node is in the
         job, with p=0.85 a `thermal` fault on that GPU (severity ~0.25);
       * flaky link fleet-22 mlx5_1: when in the job, with p=0.7 an
         `nic_degraded` fault on it (the port trains at a lower rate);
       * transient slowness: with p=0.15 per job, one random GPU of another node
         of the job (not one of the three above) gets `thermal` or
         `clocks_locked`.
  2. For each job: `laggard simulate` (node-00..node-NN, job-local GPU UUIDs),
     then rewrites the run folder to fleet identities: every host token node-XX
     (file contents and paths) becomes the fleet name of the job's node XX,
     every simulated GPU UUID becomes a fleet UUID derived from (fleet node,
     GPU index) only, GPU serial numbers likewise, the switch map gets the fleet's
     leaf switches. The first rewritten run is checked with `laggard inspect`
     and `laggard diagnose --json` (hosts and UUIDs must be the fleet ones).
  3. `laggard diagnose RUN --record --history DB --job-id sim:<n> -q --json ...`
     per job, then `laggard history --json` and `laggard history drain`.
  4. Scores: chronic parts vs truth (2 GPU UUIDs + the NIC), false chronic
     parts, drained hosts vs {fleet-07, fleet-41, fleet-22}, recorded jobs by
     verdict status, per-job verdict mismatches against the injected faults,
     wall time. Exit 1 when the chronic set or the drain set differs from the
     truth, 2 on a setup/tool error.

Usage
  python3 bench/fleet/fleet_history.py [--jobs 200] [--seed 1] [--keep DIR]
      [--json OUT] [--laggard PATH] [--workers 2]

Without --keep, scratch data goes to a temporary folder ($TMPDIR) and is
deleted at the end.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_LAGGARD = os.path.join(REPO_ROOT, "build", "release", "src", "laggard")

BAD_GPUS = [(7, 3), (41, 5)]          # (fleet node, GPU index): chronic thermal
BAD_GPU_P = 0.85
BAD_NIC = (22, "mlx5_1")              # fleet node, NIC: flaky link
BAD_NIC_P = 0.7
TRANSIENT_P = 0.15
SERIAL_BASE = 1654423000000           # the simulator's serial numbering

UUID_RE = re.compile(r"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# A host token: node-<digits>, not preceded by a letter/digit, not followed by a digit
# (so node-01 never matches inside node-010 or xnode-01; `_node-01_` in file names does).
HOST_RE = re.compile(r"(?<![A-Za-z0-9])node-\d+(?![0-9])")


# ----------------------------------------------------------------------------- names


def fleet_name(f):
    return "fleet-%02d" % f


def fleet_leaf(f):
    return "leaf-%02d" % (f // 8)


def fleet_uuid(f, g):
    """Deterministic GPU UUID of fleet node f, GPU g (same format as nvidia-smi's)."""
    h = hashlib.sha256(("laggard-fleet/%s/gpu%d" % (fleet_name(f), g)).encode()).hexdigest()
    return "GPU-%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


def fleet_serial(f, g):
    return str(SERIAL_BASE + 97 * f + 13 * g)


def nic_key(f, nic):
    return "nic:%s/%s port 1" % (fleet_name(f), nic)


# ----------------------------------------------------------------------------- laggard


class ToolError(Exception):
    pass


_EXEC_RETRIES = 10


def run_laggard(laggard, args, ok_rcs=(0,), timeout=600):
    """Runs laggard; waits 30 s and retries while the binary is missing or cannot exec
    (it may be relinked while we run)."""
    for attempt in range(_EXEC_RETRIES + 1):
        try:
            if not os.path.isfile(laggard) or not os.access(laggard, os.X_OK):
                raise FileNotFoundError(laggard)
            p = subprocess.run([laggard] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=timeout)
        except (FileNotFoundError, PermissionError, OSError) as e:
            if attempt == _EXEC_RETRIES:
                raise ToolError("cannot run %s: %s" % (laggard, e))
            print("  laggard unavailable (%s); retrying in 30 s" % e, file=sys.stderr, flush=True)
            time.sleep(30)
            continue
        # 126/127: exec failed in a wrapper; negative: killed by a signal (a binary
        # replaced under us can crash on start). Retry those, report the rest.
        if p.returncode in (126, 127) or (p.returncode < 0 and attempt < 2):
            if attempt == _EXEC_RETRIES:
                break
            print("  laggard exited %d (%s); retrying in 30 s" % (p.returncode, p.stderr.strip()[:200]),
                  file=sys.stderr, flush=True)
            time.sleep(30)
            continue
        if p.returncode not in ok_rcs:
            raise ToolError("laggard %s: exit %d\n%s%s" % (" ".join(args), p.returncode, p.stdout[-2000:],
                                                           p.stderr[-2000:]))
        return p
    raise ToolError("laggard %s: could not run" % " ".join(args))


# ----------------------------------------------------------------------------- plan


def plan_jobs(args):
    """The whole scenario, deterministic from --seed."""
    rng = random.Random(args.seed)
    bad_nodes = {f for f, _ in BAD_GPUS} | {BAD_NIC[0]}
    base = args.start_time
    jobs = []
    t = base
    for n in range(1, args.jobs + 1):
        nodes = rng.sample(range(args.fleet_nodes), args.nodes_per_job)
        steps = rng.randint(args.min_steps, args.max_steps)
        t += rng.randint(2 * 3600, 6 * 3600)  # jobs follow each other every 2-6 h
        faults = []  # (spec with job-local names, part key, origin)
        for f, g in BAD_GPUS:
            if f in nodes and g < args.gpus_per_node and rng.random() < BAD_GPU_P:
                sev = round(rng.uniform(0.22, 0.28), 3)
                faults.append({"spec": "thermal@node-%02d:%d:%s" % (nodes.index(f), g, sev),
                               "part": "gpu:" + fleet_uuid(f, g), "host": fleet_name(f),
                               "origin": "chronic_gpu", "kind": "thermal"})
        f, nic = BAD_NIC
        if f in nodes and rng.random() < BAD_NIC_P:
            faults.append({"spec": "nic_degraded@node-%02d:%s:0.5" % (nodes.index(f), nic),
                           "part": nic_key(f, nic), "host": fleet_name(f),
                           "origin": "flaky_nic", "kind": "nic_degraded"})
        if rng.random() < TRANSIENT_P:
            others = [x for x in nodes if x not in bad_nodes]
            if others:
                tf = rng.choice(others)
                g = rng.randrange(args.gpus_per_node)
                kind = rng.choice(["thermal", "clocks_locked"])
                sev = round(rng.uniform(0.15, 0.3), 3)
                faults.append({"spec": "%s@node-%02d:%d:%s" % (kind, nodes.index(tf), g, sev),
                               "part": "gpu:" + fleet_uuid(tf, g), "host": fleet_name(tf),
                               "origin": "transient", "kind": kind})
        jobs.append({"n": n, "job_id": "sim:%d" % n, "nodes": nodes, "steps": steps,
                     "sim_seed": args.seed * 100003 + n, "start_time": t, "faults": faults})
    return jobs


def simulate_args(job, args, out):
    a = ["simulate", "--nodes", str(len(job["nodes"])), "--gpus-per-node", str(args.gpus_per_node),
         "--steps", str(job["steps"]), "--seed", str(job["sim_seed"]), "--start-time", str(job["start_time"]),
         "--step-format", args.step_format, "--no-traces", "--no-effects", "--threads", "1", "-q", "-o", out]
    for fl in job["faults"]:
        a += ["--fault", fl["spec"]]
    return a


# ----------------------------------------------------------------------------- rewrite


def _gpu_ids_of_host(hostdir):
    """[(gpu index, uuid, serial)] from the host's nvidia-smi -q (index from Minor Number,
    else order), cross-checked against nvidia-smi-query.csv when present."""
    out = []
    qpath = os.path.join(hostdir, "nvidia-smi-q.txt")
    if os.path.exists(qpath):
        cur = None
        with open(qpath, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                s = line.strip()
                if re.match(r"^GPU [0-9A-Fa-f]{8}:", s):
                    cur = {"index": len(out), "uuid": None, "serial": None}
                    out.append(cur)
                elif cur is not None and ":" in s:
                    k, v = [x.strip() for x in s.split(":", 1)]
                    if k == "GPU UUID":
                        cur["uuid"] = v
                    elif k == "Serial Number" and cur["serial"] is None and re.fullmatch(r"\d+", v):
                        cur["serial"] = v
                    elif k == "Minor Number" and v.isdigit():
                        cur["index"] = int(v)
    csv = os.path.join(hostdir, "nvidia-smi-query.csv")
    if os.path.exists(csv):
        by_index = {}
        with open(csv, encoding="utf-8", errors="replace") as fh:
            hdr = [h.strip() for h in fh.readline().split(",")]
            ii, iu = hdr.index("index"), hdr.index("uuid")
            for line in fh:
                cols = [c.strip() for c in line.split(",")]
                if len(cols) > max(ii, iu):
                    by_index.setdefault(int(cols[ii]), cols[iu])
        if not out:
            out = [{"index": i, "uuid": u, "serial": None} for i, u in sorted(by_index.items())]
        for g in out:
            if g["index"] in by_index and by_index[g["index"]] != g["uuid"]:
                raise ToolError("%s: GPU %d has UUID %s in -q but %s in the query CSV" %
                                (hostdir, g["index"], g["uuid"], by_index[g["index"]]))
    return [(g["index"], g["uuid"], g["serial"]) for g in out if g["uuid"]]


def rewrite_run(run, nodes, gpus_per_node):
    """Rewrites a simulated run folder in place to fleet identities. Returns the maps."""
    host_map = {"node-%02d" % i: fleet_name(f) for i, f in enumerate(nodes)}
    uuid_map, serial_map = {}, {}
    for i, f in enumerate(nodes):
        hostdir = os.path.join(run, "node-%02d" % i)
        ids = _gpu_ids_of_host(hostdir)
        if len(ids) != gpus_per_node:
            raise ToolError("%s: %d GPUs found, %d expected" % (hostdir, len(ids), gpus_per_node))
        for g, u, s in ids:
            uuid_map[u] = fleet_uuid(f, g)
            if s:
                serial_map[s] = fleet_serial(f, g)

    def host_sub(m):
        t = m.group(0)
        if t not in host_map:
            raise ToolError("%s: host token %s is not one of the job's nodes" % (run, t))
        return host_map[t]

    def uuid_sub(m):
        t = m.group(0)
        if t not in uuid_map:
            raise ToolError("%s: unknown GPU UUID %s" % (run, t))
        return uuid_map[t]

    serial_re = re.compile(r"^(\s*Serial Number\s*:\s*)(\d+)\s*$", re.M)

    def serial_sub(m):
        return m.group(1) + serial_map.get(m.group(2), m.group(2))

    # 1. contents
    for dirpath, _, files in os.walk(run):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as fh:
                raw = fh.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue  # binary (gzip'd traces are not written here: --no-traces)
            new = HOST_RE.sub(host_sub, text)
            new = UUID_RE.sub(uuid_sub, new)
            if name.startswith("nvidia-smi-q"):
                new = serial_re.sub(serial_sub, new)
            if name == "switch-map.csv":
                lines = new.splitlines()
                new = "\n".join([lines[0]] + ["%s,%s" % (l.split(",")[0], fleet_leaf(int(l.split(",")[0][6:])))
                                               for l in lines[1:] if l.strip()]) + "\n"
            if new != text:
                with open(p, "w", encoding="utf-8") as fh:
                    fh.write(new)
    # truth.json: the switch table follows the fleet's leaves
    tp = os.path.join(run, "truth.json")
    truth = json.load(open(tp))
    sw = {}
    for f in nodes:
        sw.setdefault(fleet_leaf(f), []).append(fleet_name(f))
    truth["switches"] = {k: sorted(v) for k, v in sorted(sw.items())}
    truth["fleet"] = {"nodes": [fleet_name(f) for f in nodes],  # job node index -> fleet node
                      "leaves": {fleet_name(f): fleet_leaf(f) for f in nodes}}
    with open(tp, "w") as fh:
        json.dump(truth, fh, indent=2)
    # 2. paths (deepest first, so a folder is renamed after its contents)
    for dirpath, dirs, files in os.walk(run, topdown=False):
        for name in files + dirs:
            new = HOST_RE.sub(host_sub, name)
            if new != name:
                os.rename(os.path.join(dirpath, name), os.path.join(dirpath, new))
    # 3. nothing of the simulator's identities is left
    for dirpath, dirs, files in os.walk(run):
        for name in files + dirs:
            if HOST_RE.search(name):
                raise ToolError("%s: path still names a simulator host: %s" % (run, name))
        for name in files:
            text = open(os.path.join(dirpath, name), encoding="utf-8", errors="replace").read()
            m = HOST_RE.search(text)
            if m:
                raise ToolError("%s/%s: still names %s" % (dirpath, name, m.group(0)))
            for u in UUID_RE.findall(text):
                if u in uuid_map:
                    raise ToolError("%s/%s: still holds simulator UUID %s" % (dirpath, name, u))
    return host_map, uuid_map


def check_rewritten(laggard, run, job, gpus_per_node):
    """`laggard inspect` and `laggard diagnose --json` must see the fleet hosts and UUIDs."""
    want_hosts = {fleet_name(f) for f in job["nodes"]}
    want_uuids = {(fleet_name(f), g): fleet_uuid(f, g) for f in job["nodes"] for g in range(gpus_per_node)}
    p = run_laggard(laggard, ["inspect", run, "--json", "-"])
    ins = json.loads(p.stdout)
    seen_hosts = set()
    for fl in ins["files"]:
        seen_hosts.update(fl.get("hosts") or [])
    if seen_hosts != want_hosts:
        raise ToolError("inspect %s: hosts %s, expected %s" % (run, sorted(seen_hosts), sorted(want_hosts)))
    rep_path = os.path.join(os.path.dirname(run), os.path.basename(run) + ".check.json")
    run_laggard(laggard, ["diagnose", run, "-q", "--json", rep_path])
    rep = json.load(open(rep_path))
    os.remove(rep_path)
    got = {(g["host"], g["gpu"]): g.get("uuid") for g in rep["hardware"]["gpus"]}
    if got != want_uuids:
        bad = sorted(set(got.items()) ^ set(want_uuids.items()))[:6]
        raise ToolError("diagnose %s: GPU identities differ from the fleet's: %s" % (run, bad))
    rank_hosts = {r["host"] for r in rep["ranks"]}
    if rank_hosts != want_hosts:
        raise ToolError("diagnose %s: rank hosts %s, expected %s" % (run, sorted(rank_hosts), sorted(want_hosts)))
    text = subprocess.run([laggard, "inspect", run], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True).stdout
    return {"run": run, "inspect_hosts": sorted(seen_hosts), "diagnose_gpus": len(got),
            "inspect_lines": [l for l in text.splitlines() if "nvidia-smi-q" in l][:2],
            "sample_gpu": {"host": fleet_name(job["nodes"][0]), "gpu": 0,
                           "uuid": got[(fleet_name(job["nodes"][0]), 0)]}}


# ----------------------------------------------------------------------------- per job


def culprit_parts(verdict, uuid_of):
    """Part keys a verdict's culprits name (as history keys them), with confidence."""
    parts = []
    for c in verdict.get("culprits") or []:
        if c.get("nic"):
            key = "nic:%s/%s" % (c.get("host"), c["nic"])
        elif c.get("gpu") is not None and c.get("host"):
            key = "gpu:" + uuid_of.get((c["host"], c["gpu"]), "%s/%s" % (c["host"], c["gpu"]))
        elif c.get("host"):
            key = "host:" + c["host"]
        elif c.get("rank") is not None:
            key = "rank:%d" % c["rank"]
        else:
            key = "job"
        parts.append({"part": key, "confidence": c.get("confidence"), "cause": c.get("cause"),
                      "cause_class": c.get("cause_class"), "rank": c.get("rank")})
    return parts


def run_job(job, args, runs_dir, db, keep_runs):
    run = os.path.join(runs_dir, "job-%04d" % job["n"])
    if os.path.exists(run):
        shutil.rmtree(run)
    t0 = time.monotonic()
    run_laggard(args.laggard, simulate_args(job, args, run))
    t1 = time.monotonic()
    rewrite_run(run, job["nodes"], args.gpus_per_node)
    t2 = time.monotonic()
    rep_path = run + ".report.json"
    p = run_laggard(args.laggard, ["diagnose", run, "--record", "--history", db, "--job-id", job["job_id"],
                                   "-q", "--json", rep_path])
    t3 = time.monotonic()
    rep = json.load(open(rep_path))
    verdict = rep["verdict"]
    uuid_of = {(g["host"], g["gpu"]): g.get("uuid") for g in rep.get("hardware", {}).get("gpus", []) if g.get("uuid")}
    named = culprit_parts(verdict, uuid_of)
    injected = {fl["part"] for fl in job["faults"]}
    named_ok = {x["part"] for x in named if (x["confidence"] or 0) >= args.min_confidence}
    res = dict(job)
    res.update({
        "run": run if keep_runs else None,
        "status": verdict.get("status"),
        "verdict_line": p.stdout.strip().splitlines()[-1] if p.stdout.strip() else verdict.get("summary"),
        "recorded": p.stderr.strip(),
        "culprits": named,
        "missed": sorted(injected - named_ok),
        "extra": sorted(named_ok - injected),
        "simulate_cmd": "laggard " + " ".join(simulate_args(job, args, "run-%d" % job["n"])).replace(" -q", ""),
        "times": {"simulate": t1 - t0, "rewrite": t2 - t1, "diagnose": t3 - t2},
    })
    if not keep_runs:
        shutil.rmtree(run, ignore_errors=True)
        os.remove(rep_path)
    return res


# ----------------------------------------------------------------------------- main


def parse_drain(text):
    hosts, lines = [], []
    for line in text.splitlines():
        m = re.search(r"scontrol update NodeName=(\S+) State=DRAIN", line)
        if m:
            hosts.append(m.group(1))
            lines.append(line.strip())
    return hosts, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--laggard", default=DEFAULT_LAGGARD, help="laggard binary (default: %(default)s)")
    ap.add_argument("--keep", metavar="DIR", help="write runs, reports and the history store here and keep them")
    ap.add_argument("--seed", type=int, default=1, help="scenario seed (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=200, help="jobs to simulate (default %(default)s)")
    ap.add_argument("--fleet-nodes", type=int, default=64, help="fleet size (default %(default)s)")
    ap.add_argument("--nodes-per-job", type=int, default=4, help="nodes per job (default %(default)s)")
    ap.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (default %(default)s)")
    ap.add_argument("--min-steps", type=int, default=150)
    ap.add_argument("--max-steps", type=int, default=200)
    ap.add_argument("--start-time", type=int, default=1764000000, help="first job's start, Unix s")
    ap.add_argument("--min-confidence", type=float, default=0.5,
                    help="a culprit counts at this confidence in the per-job score (history's default)")
    ap.add_argument("--step-format", choices=["article", "csv", "jsonl"], default="article",
                    help="simulated step logs (default %(default)s: no wall clock in them, so the history dates "
                         "each job by when it was recorded; csv/jsonl carry timestamps from --start-time)")
    ap.add_argument("--workers", type=int, default=2, help="jobs simulated/diagnosed at once (default %(default)s)")
    ap.add_argument("--json", metavar="OUT", help="write the machine-readable result here")
    args = ap.parse_args()
    if args.fleet_nodes <= max(max(f for f, _ in BAD_GPUS), BAD_NIC[0]):
        ap.error("--fleet-nodes must be > %d (the truth's nodes)" % max(max(f for f, _ in BAD_GPUS), BAD_NIC[0]))
    if not (1 <= args.nodes_per_job <= args.fleet_nodes) or args.jobs < 1:
        ap.error("bad --nodes-per-job / --jobs")
    args.laggard = os.path.abspath(args.laggard)

    wall0 = time.monotonic()
    if args.keep:
        scratch = os.path.abspath(args.keep)
        os.makedirs(scratch, exist_ok=True)
    else:
        parent = None
        scratch = tempfile.mkdtemp(prefix="fleet-", dir=parent)
    runs_dir = os.path.join(scratch, "runs")
    shutil.rmtree(runs_dir, ignore_errors=True)  # ours: job-NNNN folders of an earlier run
    os.makedirs(runs_dir, exist_ok=True)
    db = os.path.join(scratch, "history.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)

    try:
        return _run(args, scratch, runs_dir, db, wall0)
    except ToolError as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def _run(args, scratch, runs_dir, db, wall0):
    jobs = plan_jobs(args)
    print("fleet-history bench: %d jobs on %d fleet nodes (%d nodes x %d GPUs each), seed %d; scratch %s" %
          (args.jobs, args.fleet_nodes, args.nodes_per_job, args.gpus_per_node, args.seed, scratch), flush=True)
    vp = run_laggard(args.laggard, ["--version"])
    version = vp.stdout.strip()

    # identity check on one rewritten run (a job with a fault when there is one)
    t = time.monotonic()
    probe_job = next((j for j in jobs if j["faults"]), jobs[0])
    probe_run = os.path.join(scratch, "identity-check")
    if os.path.exists(probe_run):
        shutil.rmtree(probe_run)
    run_laggard(args.laggard, simulate_args(probe_job, args, probe_run))
    rewrite_run(probe_run, probe_job["nodes"], args.gpus_per_node)
    ident = check_rewritten(args.laggard, probe_run, probe_job, args.gpus_per_node)
    if not args.keep:
        shutil.rmtree(probe_run, ignore_errors=True)
    print("identity check (%s, %s): inspect hosts %s; diagnose sees %d GPUs with fleet UUIDs, e.g. %s GPU 0 = %s" %
          (probe_job["job_id"], ident["run"], ", ".join(ident["inspect_hosts"]), ident["diagnose_gpus"],
           ident["sample_gpu"]["host"], ident["sample_gpu"]["uuid"]), flush=True)
    t_check = time.monotonic() - t

    # the jobs
    t = time.monotonic()
    results = [None] * len(jobs)
    done = [0]
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.workers)) as ex:
        futs = {ex.submit(run_job, j, args, runs_dir, db, bool(args.keep)): i for i, j in enumerate(jobs)}
        for fu in concurrent.futures.as_completed(futs):
            results[futs[fu]] = fu.result()
            with lock:
                done[0] += 1
                if done[0] % 25 == 0 or done[0] == len(jobs):
                    print("  %d/%d jobs recorded (%.1f s)" % (done[0], len(jobs), time.monotonic() - t), flush=True)
    t_jobs = time.monotonic() - t

    # history
    t = time.monotonic()
    hist = json.loads(run_laggard(args.laggard, ["history", "--history", db, "--json"]).stdout)
    hist_text = run_laggard(args.laggard, ["history", "--history", db]).stdout
    drain_text = run_laggard(args.laggard, ["history", "drain", "--history", db]).stdout
    t_hist = time.monotonic() - t
    if args.keep:
        with open(os.path.join(scratch, "history.json"), "w") as fh:
            json.dump(hist, fh, indent=1)
        with open(os.path.join(scratch, "history.txt"), "w") as fh:
            fh.write(hist_text)
        with open(os.path.join(scratch, "drain.txt"), "w") as fh:
            fh.write(drain_text)

    # ---- score
    truth_parts = {"gpu:" + fleet_uuid(f, g): "%s GPU %d (thermal, p=%.2f)" % (fleet_name(f), g, BAD_GPU_P)
                   for f, g in BAD_GPUS}
    truth_parts[nic_key(*BAD_NIC)] = "%s %s (nic_degraded, p=%.2f)" % (fleet_name(BAD_NIC[0]), BAD_NIC[1], BAD_NIC_P)
    truth_hosts = sorted({fleet_name(f) for f, _ in BAD_GPUS} | {fleet_name(BAD_NIC[0])})
    offenders = hist.get("offenders", [])
    by_key = {o["key"]: o for o in offenders}
    chronic = {o["key"] for o in offenders if o.get("standing") == "chronic"}
    found = sorted(chronic & set(truth_parts))
    missed = sorted(set(truth_parts) - chronic)
    false_chronic = sorted(chronic - set(truth_parts))
    drain_hosts, drain_lines = parse_drain(drain_text)
    drain_set = sorted(set(drain_hosts))

    status_counts = {}
    for r in results:
        status_counts[r["status"]] = status_counts.get(r["status"], 0) + 1

    def part_detail(key):
        inj = [r["job_id"] for r in results if any(fl["part"] == key for fl in r["faults"])]
        named = [r["job_id"] for r in results if any(c["part"] == key and (c["confidence"] or 0) >= args.min_confidence
                                                      for c in r["culprits"])]
        o = by_key.get(key, {})
        return {"key": key, "injected_jobs": len(inj), "named_jobs": len(named),
                "standing": o.get("standing"), "culprit_last": o.get("culprit_last"), "jobs_last": o.get("jobs_last"),
                "culprit_all": o.get("culprit_all"), "jobs_all": o.get("jobs_all"), "unsure": o.get("unsure"),
                "missed_in": [j for j in inj if j not in named]}

    truth_detail = [dict(part_detail(k), truth=truth_parts[k]) for k in sorted(truth_parts)]
    false_detail = []
    for k in false_chronic:
        d = part_detail(k)
        host = by_key[k].get("host")
        if host:
            on = [r for r in results if host in [fleet_name(f) for f in r["nodes"]]]
            d["host_jobs"] = len(on)
            d["host_jobs_by_status"] = {}
            for r in on:
                d["host_jobs_by_status"][r["status"]] = d["host_jobs_by_status"].get(r["status"], 0) + 1
            d["host_faults"] = [{"job_id": r["job_id"], "spec": fl["spec"], "origin": fl["origin"],
                                 "verdict": r["verdict_line"]}
                                for r in on for fl in r["faults"] if fl["host"] == host]
        d["name"] = by_key[k].get("name")
        d["culprit_jobs"] = by_key[k].get("culprit_jobs")
        false_detail.append(d)
    mismatches = [r for r in results if r["missed"] or r["extra"]]
    ok = (set(found) == set(truth_parts) and not false_chronic and drain_set == truth_hosts)
    wall = time.monotonic() - wall0
    sum_t = {k: sum(r["times"][k] for r in results) for k in ("simulate", "rewrite", "diagnose")}

    # ---- print
    print()
    print("laggard: %s (%s)" % (version, args.laggard))
    print("history: %d jobs recorded, %s without straggler, %s undecided; %d offenders listed" %
          (hist.get("jobs", -1), hist.get("jobs_without_straggler"), hist.get("jobs_undecided"), len(offenders)))
    print("verdicts by status: %s" % ", ".join("%s %d" % kv for kv in sorted(status_counts.items())))
    print("chronic parts: %d of %d truth parts found, %d false chronic" % (len(found), len(truth_parts),
                                                                          len(false_chronic)))
    min_jobs = hist.get("thresholds", {}).get("chronic_min_jobs", 3)
    for d in truth_detail:
        d["reachable"] = d["injected_jobs"] >= min_jobs
        print("  %-7s %-60s %s  injected in %d jobs, named in %d; history: %s of last %s (all: %s of %s)%s" %
              ("FOUND" if d["key"] in found else "MISSED", d["key"], d["truth"], d["injected_jobs"], d["named_jobs"],
               d["culprit_last"], d["jobs_last"], d["culprit_all"], d["jobs_all"],
               "" if d["reachable"] else "  [unreachable: injected in fewer than %d jobs]" % min_jobs))
        if d["missed_in"]:
            print("          not named in %s" % ", ".join(d["missed_in"]))
    for d in false_detail:
        print("  FALSE   %-60s %s of last %s (all: %s of %s; not counted %s); culprit jobs %s" %
              (d["key"], d["culprit_last"], d["jobs_last"], d["culprit_all"], d["jobs_all"], d["unsure"],
               d["culprit_jobs"]))
        if "host_jobs" in d:
            print("          the host ran in %d jobs (%s); faults injected on it: %s" %
                  (d["host_jobs"], ", ".join("%s %d" % kv for kv in sorted(d["host_jobs_by_status"].items())),
                   "; ".join("%s %s (%s)" % (x["job_id"], x["spec"], x["origin"]) for x in d["host_faults"]) or "none"))
    rank_fixed = hist.get("rank_fixed", [])
    if rank_fixed:
        print("rank-fixed (truth: none): %s" % "; ".join("rank %d in %d jobs on %d parts" %
                                                        (x["rank"], x["culprit_jobs"], len(x["parts"]))
                                                        for x in rank_fixed))
    print("drain: %s (truth %s) %s" % (", ".join(drain_set) or "none", ", ".join(truth_hosts),
                                       "OK" if drain_set == truth_hosts else "DIFFERS"))
    for l in drain_lines:
        print("  " + l)
    print("per-job verdicts vs injected faults: %d of %d jobs differ (missed or extra culprit at confidence >= %.2f)" %
          (len(mismatches), len(results), args.min_confidence))
    for r in mismatches[:40]:
        print("  %-8s injected %s; missed %s; extra %s" % (r["job_id"], [fl["spec"] for fl in r["faults"]] or "none",
                                                          r["missed"] or "-", r["extra"] or "-"))
        print("           %s" % r["verdict_line"])
    if len(mismatches) > 40:
        print("  ... %d more (see --json)" % (len(mismatches) - 40))
    print("wall time %.1f s: identity check %.1f s, %d jobs %.1f s (%d workers; summed simulate %.1f s, rewrite %.1f s, "
          "diagnose+record %.1f s), history+drain %.2f s" % (wall, t_check, len(results), t_jobs, args.workers,
                                                             sum_t["simulate"], sum_t["rewrite"], sum_t["diagnose"],
                                                             t_hist))
    print("RESULT: %s" % ("PASS" if ok else "FAIL (chronic or drain set differs from the truth)"))

    if args.json:
        out = {
            "schema": "laggard.bench.fleet_history/1", "laggard": args.laggard, "version": version,
            "params": {k: getattr(args, k) for k in ("seed", "jobs", "fleet_nodes", "nodes_per_job", "gpus_per_node",
                                                     "min_steps", "max_steps", "workers", "min_confidence")},
            "scratch": scratch if args.keep else None,
            "pass": ok, "truth_parts": truth_parts, "truth_drain": truth_hosts,
            "chronic_found": found, "chronic_missed": missed, "false_chronic": false_chronic,
            "truth_detail": truth_detail, "false_detail": false_detail,
            "drain_hosts": drain_set, "drain_lines": drain_lines, "rank_fixed": hist.get("rank_fixed", []),
            "mismatched_jobs": [r["job_id"] for r in mismatches],
            "status_counts": status_counts, "history_jobs": hist.get("jobs"),
            "identity_check": ident,
            "wall_s": wall, "phase_s": {"identity_check": t_check, "jobs": t_jobs, "history": t_hist},
            "summed_job_s": sum_t,
            "jobs": results,
        }
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
