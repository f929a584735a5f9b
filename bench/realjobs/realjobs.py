#!/usr/bin/env python3
"""Real-job accuracy: real PyTorch DDP jobs with injected faults, diagnosed by laggard.

For each scenario this runs a real training job (bench/realjobs/ddp_job.py:
Debian's python3-torch, gloo, CPU, one process per rank on this host), with
a fault injected into one or two ranks, then runs `laggard diagnose DIR
--json -` on the files the job wrote (the article's step lines, a step CSV,
torch.profiler traces) and scores the verdict against the job's truth.json.

  bench/realjobs/realjobs.py --laggard build/release/src/laggard            # full set
  bench/realjobs/realjobs.py --laggard ... --quick                           # the test subset
  bench/realjobs/realjobs.py --laggard ... --only compute_2.0 --keep /tmp/rj  # one scenario, files kept
  bench/realjobs/realjobs.py --laggard ... --rescore /tmp/rj                 # re-diagnose kept runs
  bench/realjobs/realjobs.py --laggard ... --pipeline [--quick]              # dp x pp pipeline jobs
  bench/realjobs/realjobs.py --laggard ... --agent --only cpu_hog            # with a live agent

With --agent each DDP job runs beside a real `laggard agent` (the binary
of --laggard): the ranks report their steps to it over UDP (ddp_job.py
--report, python/laggard_step.py, with their pids), it scans the host's
processes each second, and `laggard diagnose` also reads its hardware log
(<run>/agent/hardware*.jsonl: host_proc, host_cpu; not its steps.jsonl, the
ranks' own files carry those steps). A CPU-hog run then records whether the
report quotes the hog's command line (neighbour_named; not scored).
Pipeline jobs run without the agent: pipeline_job.py reports no steps.

Pipeline jobs (--pipeline, pipeline_job.py: GPipe over gloo send / recv, DP
all-reduce per stage, Megatron's layout line in rank 0's log): a last stage
with K x the layers is right when a culprit is that stage (pp_stage, class
imbalance) and no rank is named; a compute-slow rank and healthy runs are
scored as above.

Scoring, per run:
  CPU hog       a busy loop pinned to the last rank's cores (the ranks pinned):
                right when the first culprit is a rank on those cores with
                the cause host_contention;
  fault run     right when the verdict's first culprit is the faulty rank and
                its cause class is the fault's (compute -> compute_slow, data
                or host stall -> host_stall, throttled link -> communication);
                a compute fault named host_contention is right when the job's
                own probe shows that rank's core slower than the fault's
                factor (truth.json host_slowed), and so is another rank named
                host_contention whose core the probe shows slower than the
                fault's factor (the host slowed it more than the fault
                slowed the faulty rank: it is the straggler); a compute fault with no
                culprit named is right when the verdict names the faulty
                rank's CPU-time excess and asks for more steps than the run
                had ("rank R's thread used 1.09x ... run ~N steps to tell"),
                or, with two ranks, for a third rank or the ranks' cores
                swapped (more steps cannot tell one rank's extra work from
                its core's there); on a calm host a compute fault as the
                job measured it (fault_realized: the rank's mean CPU time
                per step over its peers') under 1.05x, inside what healthy
                ranks show, with a no-straggler verdict is not right but
                set aside: the summary also scores the runs without it;
  healthy run   right when there is no culprit, or the culprits are ranks
                the host measurably slowed (host_slowed: the job's probe
                >= 1.05x its peers', or its run-queue wait >= 5% of the
                step over theirs) named host_contention;
                the verdict is not communication_bound, nor job_wide unless
                the machine slowed for every rank (machine_slowed_steps: 3
                or more steps in a row whose ranks' probes ran >= 1.2x
                their own medians, median over the ranks) and the verdict
                says "the machine slowed";
  two faults    right when both faulty ranks are among the culprits;
  throttled link right when the first culprit is that rank (communication), or
                with no rank named, the verdict is communication_bound.
A culprit on a healthy rank is a false culprit, except a rank the host
measurably slowed (host_slowed) named host_contention.

Before and after each job it measures the host's core ratio (slowest /
fastest core with all busy, host_noise.py) and records it in truth.json:
on a host whose cores run at different speeds a "healthy" rank on the slow
one is a real straggler the truth does not know, so the summary splits the
runs into calm (< 1.15x) and unequal ones.

Prints one line per run, then accuracy per fault kind and severity, per
world size and per host state, the false-culprit count, the wall time, and
the reliability of laggard's confidence words (low < 0.5 <= medium < 0.8 <=
high) for the runs that name a culprit: how often the run is right, and how
often its first culprit (the one the confidence is of) is real, a faulty
rank with its fault's cause class or a host-slowed rank named
host_contention, as a false culprit is counted. Exit status: 0; with --quick, 1 when
an asserted run is wrong (the test command runs the quick subset; runs not
asserted yet are printed with their result), 77 when the runtime is missing
(no torch: the test skips).
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_noise  # noqa: E402  (bench/realjobs/host_noise.py)

# A run whose host cores differed by more than this (slowest / fastest, all
# cores busy, measured just before and after the job) has a straggler the
# host made: its ranks run on unequal cores. Reported apart (docs/accuracy.md).
CALM_CORE_RATIO = 1.15

from job_env import ONE_THREAD  # noqa: E402  the jobs' BLAS and threads
JOB = os.path.join(HERE, "ddp_job.py")
PIPELINE_JOB = os.path.join(HERE, "pipeline_job.py")
# Debian's torch is installed for the system interpreter, not a pyenv one.
TORCH_PYTHON = "/usr/bin/python3"
PIN = False  # --pin sets it

# The CPU hog: a busy loop, `python3 -c "while True: pass"`. With --agent
# the agent's process scan lists it with this command line, and a verdict
# that names the neighbour on a rank's cores quotes it (neighbour_named).
HOG_CODE = "while True: pass"

# The agent's host label (--agent). The ranks' files name no host (ddp_job.py
# reports none; rank logs, step CSVs and torch's legacy traces have none), so
# the label is this machine's name, as the agent's own default (gethostname).
AGENT_HOST = socket.gethostname()

CAUSE_OF_KIND = {
    "compute": "compute_slow",
    "data_stall": "host_stall",
    "host_stall": "host_stall",
    "periodic": "host_stall",
    "comm": "communication",
    "hog": "host_stall",
}


class Scenario:
    """One job: world size, faults per rank ({rank: [spec, ...]}), what is expected."""

    def __init__(self, name, kind, severity, world, faults, comm_rank=None,
                 comm_mbit=None, steps=40, asserted=True, layout=None, all_ranks=None,
                 heavy_stage=None, hog_rank=None):
        self.name = name
        # Pipeline jobs (pipeline_job.py): (dp, pp), faults every rank gets
        # (heavy_stage:S:K), and the stage a heavy_stage fault makes heavier.
        self.layout = layout
        self.all_ranks = all_ranks or []
        self.heavy_stage = heavy_stage
        self.kind = kind            # fault kind, "healthy" or "two_faults"
        self.severity = severity    # a label: "2.0x", "50ms", ...
        self.world = world
        self.faults = faults
        self.comm_rank = comm_rank
        self.comm_mbit = comm_mbit
        # A CPU hog (a busy loop) pinned to this rank's cores; the ranks are
        # pinned, and every rank on those cores shares them with the hog.
        self.hog_rank = hog_rank
        self.steps = steps
        # --quick fails only on asserted runs; the others are printed with
        # their result, for the cases laggard does not get right yet.
        self.asserted = asserted

    def truth(self):
        faults = []
        for rank, specs in sorted(self.faults.items()):
            kinds = [s.split(":")[0] for s in specs if not s.startswith("onset")]
            onset = [int(s.split(":")[1]) for s in specs if s.startswith("onset")]
            for k in kinds:
                faults.append({"rank": rank, "kind": k, "spec": specs,
                               "cause_class": CAUSE_OF_KIND[k],
                               "onset_step": onset[0] if onset else 0})
        if self.hog_rank is not None:
            hog_cores = rank_cores(self, self.hog_rank)
            for rank in range(self.world):
                if rank_cores(self, rank) & hog_cores:
                    faults.append({"rank": rank, "kind": "hog",
                                   "spec": [f"busy loop on cores {sorted(hog_cores)}"],
                                   "cause_class": "host_stall", "cause": "host_contention",
                                   "onset_step": 0})
        if self.comm_rank is not None:
            faults.append({"rank": self.comm_rank, "kind": "comm",
                           "spec": [f"tc rate {self.comm_mbit}mbit"],
                           "cause_class": "communication", "onset_step": 0})
        truth = {"scenario": self.name, "kind": self.kind, "severity": self.severity,
                 "world": self.world, "steps": self.steps, "faults": faults}
        if self.layout:
            truth["layout"] = {"dp": self.layout[0], "pp": self.layout[1], "tp": 1}
        if self.heavy_stage is not None:
            truth["heavy_stage"] = self.heavy_stage
        return truth


def scenarios(worlds, quick):
    out = []
    if quick:
        # The healthy run is not asserted (docs/accuracy.md, "The host"):
        # when this host's two cores run at different speeds, a healthy
        # rank on the slow one is a real straggler the truth does not know.
        # The 50 ms data stall was right in all 7 kept 2-rank runs.
        return [Scenario("quick_compute_2.0", "compute", "2.0x", 2, {1: ["compute:2.0"]}),
                Scenario("quick_data_stall_50ms", "data_stall", "50ms", 2,
                         {0: ["data_stall:50"]}),
                Scenario("quick_healthy", "healthy", "-", 2, {}, asserted=False)]
    for w in worlds:
        last = w - 1
        for f in (1.1, 1.2, 1.5, 2.0):
            out.append(Scenario(f"w{w}_compute_{f}", "compute", f"{f}x", w, {last: [f"compute:{f}"]}))
        for ms in (15, 50):
            out.append(Scenario(f"w{w}_data_stall_{ms}ms", "data_stall", f"{ms}ms", w,
                                {0: [f"data_stall:{ms}"]}))
            out.append(Scenario(f"w{w}_host_stall_{ms}ms", "host_stall", f"{ms}ms", w,
                                {last: [f"host_stall:{ms}"]}))
        out.append(Scenario(f"w{w}_periodic_250ms", "periodic", "250ms/5", w,
                            {last: ["periodic:250:5"]}))
        out.append(Scenario(f"w{w}_onset_compute_2.0", "compute", "2.0x@mid", w,
                            {last: ["compute:2.0", "onset:20"]}))
        if w >= 4:
            out.append(Scenario(f"w{w}_two_faults", "two_faults", "1.5x+50ms", w,
                                {1: ["compute:1.5"], last: ["host_stall:50"]}))
        out.append(Scenario(f"w{w}_comm_100mbit", "comm", "100mbit", w, {},
                            comm_rank=last, comm_mbit=100))
        out.append(Scenario(f"w{w}_cpu_hog", "hog", "busy loop", w, {}, hog_rank=last))
        # Healthy controls outnumber each fault kind: a false culprit is the
        # error a user trusts least.
        for i in range(3 if w == 2 else 2 if w == 4 else 1):
            out.append(Scenario(f"w{w}_healthy_{i}", "healthy", "-", w, {}))
    return out


def pipeline_scenarios(quick):
    """dp x pp jobs (pipeline_job.py): a heavier stage, a slow worker, healthy."""
    out = []
    for dp, pp in ((2, 2),) if quick else ((2, 2), (2, 3)):
        w = dp * pp
        tag = f"dp{dp}pp{pp}"
        last_stage = pp - 1
        for k in ((3,) if quick else (2, 3)):
            out.append(Scenario(f"{tag}_heavy_stage_{k}x", "heavy_stage", f"{k}x layers", w, {},
                                layout=(dp, pp), all_ranks=[f"heavy_stage:{last_stage}:{k}"],
                                heavy_stage=last_stage))
        for f in ((3.0,) if quick else (2.0, 3.0)):
            out.append(Scenario(f"{tag}_compute_{f}", "compute", f"{f}x", w, {1: [f"compute:{f}"]},
                                layout=(dp, pp)))
        for i in range(1 if quick else 2):
            out.append(Scenario(f"{tag}_healthy_{i}", "healthy", "-", w, {}, layout=(dp, pp),
                                asserted=not quick))
    return out


def have_torch():
    if not os.path.exists(TORCH_PYTHON):
        return False
    r = subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed as d; "
                        "assert d.is_gloo_available()"], capture_output=True)
    return r.returncode == 0


class Netns:
    """A network namespace behind a veth pair with a tc rate limit both ways (root only)."""

    def __init__(self, tag, mbit):
        self.ns = f"lgrj{tag}"
        self.host_if = f"lgh{tag}"
        self.ns_if = f"lgn{tag}"
        self.host_ip = f"10.213.{tag}.1"
        self.ns_ip = f"10.213.{tag}.2"
        self.mbit = mbit

    def sh(self, *cmd):
        subprocess.run(cmd, check=True, capture_output=True)

    def __enter__(self):
        self.sh("ip", "netns", "add", self.ns)
        self.sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        self.sh("ip", "link", "set", self.ns_if, "netns", self.ns)
        self.sh("ip", "addr", "add", f"{self.host_ip}/24", "dev", self.host_if)
        self.sh("ip", "link", "set", self.host_if, "up")
        nx = ["ip", "netns", "exec", self.ns]
        self.sh(*nx, "ip", "addr", "add", f"{self.ns_ip}/24", "dev", self.ns_if)
        self.sh(*nx, "ip", "link", "set", self.ns_if, "up")
        self.sh(*nx, "ip", "link", "set", "lo", "up")
        rate = ["tbf", "rate", f"{self.mbit}mbit", "burst", "32kbit", "latency", "50ms"]
        self.sh("tc", "qdisc", "add", "dev", self.host_if, "root", *rate)
        self.sh(*nx, "tc", "qdisc", "add", "dev", self.ns_if, "root", *rate)
        return self

    def __exit__(self, *exc):
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Agent:
    """A real `laggard agent` beside one job (--agent): step reports on a
    local UDP port, a process scan each second, its logs and its stdout and
    stderr (agent.out) in <out_dir>/agent. start() waits until its /healthz
    answers 200; stop() sends SIGTERM and waits, killing it after 10 s."""

    def __init__(self, laggard, out_dir):
        self.laggard = laggard
        self.dir = os.path.join(out_dir, "agent")
        self.report_addr = "127.0.0.1:%d" % free_udp_port()
        self.proc = None
        self._out = None

    def start(self, timeout_s=20):
        """True once /healthz answers; False when the agent exits or stays
        silent for timeout_s (agent.out says why)."""
        os.makedirs(self.dir, exist_ok=True)
        out_path = os.path.join(self.dir, "agent.out")
        self._out = open(out_path, "w")
        self.proc = subprocess.Popen(
            [self.laggard, "agent", "--listen", "127.0.0.1:0", "--udp", self.report_addr,
             "--interval", "0.5s", "--proc-scan", "1s", "--log-dir", self.dir,
             "--host", AGENT_HOST],
            stdout=self._out, stderr=subprocess.STDOUT)
        # Its first stdout line names the HTTP port it bound (--listen port 0):
        # "laggard agent: serving http://127.0.0.1:PORT/metrics; ...".
        url = None
        deadline = time.time() + timeout_s
        while time.time() < deadline and self.proc.poll() is None:
            if url is None:
                with open(out_path) as f:
                    m = re.search(r"serving (http://[^\s/]+)/metrics", f.read())
                url = m.group(1) + "/healthz" if m else None
            if url is not None:
                try:
                    if urllib.request.urlopen(url, timeout=1).status == 200:
                        return True
                except OSError:
                    pass
            time.sleep(0.1)
        return False

    def tail(self):
        """The end of the agent's stdout and stderr, for a message."""
        try:
            with open(os.path.join(self.dir, "agent.out")) as f:
                return f.read().strip()[-300:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._out is not None:
            self._out.close()
            self._out = None


def agent_logs(out_dir):
    """The agent's hardware log files of a run (--agent), oldest rotation
    included; empty for a run without the agent."""
    return sorted(glob.glob(os.path.join(out_dir, "agent", "hardware*.jsonl")))


def neighbour_named(report):
    """Whether any text of the diagnose report quotes the CPU hog's command line."""
    return HOG_CODE in json.dumps(report)


def rank_cores(sc, rank):
    """The cores a pinned rank runs on: rank r on core r mod cores, or its
    share of them when the ranks are fewer than the cores."""
    cores = sorted(os.sched_getaffinity(0))
    if sc.world <= len(cores):
        return {c for i, c in enumerate(cores) if i % sc.world == rank % len(cores)}
    return {cores[rank % len(cores)]}


def run_job(sc, out_dir, port, seed, timeout_s, agent_laggard=None):
    """Runs the job's ranks, beside a `laggard agent` (agent_laggard: its
    binary) for a DDP job when given; returns (ok, message, agent_ran)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "truth.json"), "w") as f:
        json.dump(sc.truth(), f, indent=1)
    netns = None
    if sc.comm_rank is not None:
        if os.geteuid() != 0:
            return None, "skipped: a throttled link needs root (netns + tc)", False
        netns = Netns(port % 200 + 20, sc.comm_mbit)
        netns.__enter__()
    procs = []
    hog = None
    agent = None
    try:
        # The agent first, so that its process scan sees the hog from the start.
        if agent_laggard and not sc.layout:
            agent = Agent(agent_laggard, out_dir)
            if not agent.start():
                return None, f"skipped: the agent did not come up: {agent.tail()}", False
        if sc.hog_rank is not None:
            hog = subprocess.Popen(
                [sys.executable, "-c", HOG_CODE],
                preexec_fn=lambda cores=rank_cores(sc, sc.hog_rank): os.sched_setaffinity(0, cores))
        for rank in range(sc.world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(sc.world),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **ONE_THREAD)
            cmd = [TORCH_PYTHON, PIPELINE_JOB if sc.layout else JOB, "--out", out_dir,
                   "--steps", str(sc.steps), "--seed", str(seed)]
            if sc.layout:
                cmd += ["--dp", str(sc.layout[0]), "--pp", str(sc.layout[1])]
            if agent is not None:
                cmd += ["--report", agent.report_addr]
            for spec in sc.all_ranks + sc.faults.get(rank, []):
                cmd += ["--fault", spec]
            if netns:
                env["MASTER_ADDR"] = netns.host_ip
                if rank == sc.comm_rank:
                    env["GLOO_SOCKET_IFNAME"] = netns.ns_if
                    cmd = ["ip", "netns", "exec", netns.ns] + cmd
                else:
                    env["GLOO_SOCKET_IFNAME"] = netns.host_if
            err = open(os.path.join(out_dir, f"stderr_rank{rank}.txt"), "w")
            # --pin: each rank on its own core(s), as each rank of a real job
            # has its own GPU. Off by default: this host's cores differ in
            # speed by up to 2x, and a pinned rank stays on a slow core for
            # the whole run (healthy ranks 1.44-1.6x apart; unpinned, the
            # scheduler moves them and they stay within 1.09x when the host
            # is calm: docs/accuracy.md).
            pin = None
            if PIN or sc.hog_rank is not None:
                pin = lambda mine=rank_cores(sc, rank): os.sched_setaffinity(0, mine)
            procs.append((subprocess.Popen(cmd, env=env, stdout=err, stderr=err,
                                           preexec_fn=pin), err))
        deadline = time.time() + timeout_s
        ok = True
        for p, err in procs:
            try:
                rc = p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                rc = "timeout"
            err.close()
            ok = ok and rc == 0
        for rank in range(sc.world):
            path = os.path.join(out_dir, f"stderr_rank{rank}.txt")
            if ok and os.path.getsize(path) == 0:
                os.remove(path)
        return ok, "" if ok else "job failed: see stderr_rank*.txt in " + out_dir, agent is not None
    finally:
        for p, _ in procs:
            if p.poll() is None:
                p.kill()
        if hog is not None:
            hog.kill()
            hog.wait()
        if agent is not None:
            agent.stop()
        if netns:
            netns.__exit__()


def diagnose(laggard, out_dir):
    files = sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir)
                   if f.endswith((".log", ".csv", ".json")) and f != "truth.json"
                   and not f.startswith("report"))
    # The agent's hardware log (--agent), not its steps.jsonl: the ranks'
    # own files carry those steps.
    files += agent_logs(out_dir)
    r = subprocess.run([laggard, "diagnose", *files, "--json", "-", "--quiet"],
                       capture_output=True, text=True)
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        f.write(r.stdout)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return {"error": f"laggard exited {r.returncode}: {r.stderr.strip()[:300]}"}


def first_right(truth, report, run_right):
    """Whether the verdict's first culprit, the one first_confidence() is of,
    is a real one: a faulty rank with its fault's cause class (a hog's: the
    host), or a rank the host measurably slowed, named for its host; a
    culprit of the whole job (no rank) is as right as the run. None without
    a culprit."""
    culprits = report.get("verdict", {}).get("culprits", []) if "error" not in report else []
    if not culprits:
        return None
    first = culprits[0]
    if first.get("rank") is None:
        return run_right
    if (str(first["rank"]) in truth.get("host_slowed", {})
            and first.get("cause") == "host_contention"):
        return True
    for f in truth["faults"]:
        if f["rank"] != first["rank"]:
            continue
        if f["kind"] == "hog":
            return first.get("cause") == "host_contention"
        if first["cause_class"] == f["cause_class"]:
            return True
    return False


SLOWER_CORE_PROBE = 1.2


def slower_core(truth, report):
    """(the ranks on a core measured >= SLOWER_CORE_PROBE slower, outside hog
    and link runs and not faulty; the ranks the verdict named host_contention)."""
    if truth["kind"] in ("hog", "comm") or "error" in report:
        return [], []
    faulty = {f["rank"] for f in truth.get("faults", [])}
    slow = [int(r) for r, v in truth.get("host_slowed", {}).items()
            if v.get("probe_ratio", 1) >= SLOWER_CORE_PROBE and int(r) not in faulty]
    named = [c["rank"] for c in report["verdict"]["culprits"]
             if c.get("rank") is not None and c.get("cause") == "host_contention"]
    # A communication-bound verdict names them in its summary ("a smaller
    # problem beside it: rank 0 (vm) (host_stall: host_contention, +7%)").
    smaller = re.search(r"a smaller problem beside it: (.*)", report["verdict"].get("summary", ""))
    if smaller and report["verdict"]["status"] == "communication_bound":
        named += [int(r) for r, cause in
                  re.findall(r"rank (\d+)(?: \([^):,]*\))? \(([^)]*)\)", smaller.group(1))
                  if ": host_contention" in cause]
    return slow, named


def beside_not_named(report):
    """Ranks a communication-bound verdict said beside the network for their
    CPU time alone, not named ("; beside it, not named: rank 1 (vm) (...):
    its thread's ..."): no culprits, counted apart."""
    summary = report.get("verdict", {}).get("summary", "") if "error" not in report else ""
    m = re.search(r"; beside it, not named: (.*?): its thread's", summary)
    return [int(r) for r in re.findall(r"rank (\d+)", m.group(1))] if m else []


def first_confidence(report):
    """The confidence of the verdict's first culprit; None without one."""
    culprits = report.get("verdict", {}).get("culprits", []) if "error" not in report else []
    return culprits[0].get("confidence") if culprits else None


def score(truth, report):
    """Returns (right, false_culprits, words) for one run."""
    if "error" in report:
        return False, 0, report["error"]
    v = report["verdict"]
    culprits = [c for c in v["culprits"] if c.get("rank") is not None]
    faulty = {f["rank"] for f in truth["faults"]}
    # A rank the host measurably slowed (host_slowed), named for its host,
    # is a real straggler the host made, in any run: never a false culprit.
    slowed = {int(r) for r in truth.get("host_slowed", {})}
    # A communication-bound verdict says the ranks it set aside as "a
    # smaller problem beside it": they are named, and scored as culprits.
    smaller = re.search(r"a smaller problem beside it: (.*)", v.get("summary", ""))
    if smaller and v["status"] == "communication_bound":
        # "rank 0 (vm) (host_stall: ...)" where the rank's host is known.
        for rank, cause in re.findall(r"rank (\d+)(?: \([^):,]*\))? \(([^)]*)\)", smaller.group(1)):
            culprits = culprits + [{"rank": int(rank), "cause_class": cause.split(":")[0],
                                    "cause": cause.split(": ")[1].split(",")[0]
                                    if ": " in cause else None, "smaller": True}]
    false_culprits = sum(1 for c in culprits if c["rank"] not in faulty
                         and not (c["rank"] in slowed and c.get("cause") == "host_contention"))
    got = ", ".join(f"rank {c['rank']} {c['cause_class']}"
                    + (f"/{c['cause']}" if c.get('cause') else "") for c in culprits) or "no culprit"
    words = f"{v['status']}: {got}"
    if truth["kind"] == "heavy_stage":
        # The stage, as an imbalance of the job: no rank of it is faulty.
        stage = [c for c in v["culprits"] if c.get("pp_stage") == truth["heavy_stage"]
                 and c.get("rank") is None and c["cause_class"] == "imbalance"]
        got = ", ".join(f"stage {c.get('pp_stage')} {c['cause_class']}" if c.get("rank") is None
                        else f"rank {c['rank']} {c['cause_class']}" for c in v["culprits"])
        return bool(stage) and not culprits, len(culprits), f"{v['status']}: {got or 'no culprit'}"
    if truth["kind"] == "healthy":
        # A rank the host measurably slowed (its own probe or run-queue
        # wait, host_slowed in truth.json) is a real straggler the host
        # made: named with the host as the cause, it is right.
        host_named = [c for c in culprits if c["rank"] in slowed
                      and c.get("cause") == "host_contention"]
        false_culprits = len(culprits) - len(host_named)
        # A job-wide slowdown is right when the machine measurably slowed
        # for every rank (machine_slowed_steps) and the verdict says so.
        machine = (v["status"] == "job_wide" and truth.get("machine_slowed_steps")
                   and "the machine slowed" in v.get("summary", ""))
        return (false_culprits == 0 and (v["status"] not in ("job_wide", "communication_bound")
                                         or bool(machine)),
                false_culprits, words)
    culprits = [c for c in culprits if not c.get("smaller")]  # beside the network
    if truth["kind"] == "two_faults":
        named = {c["rank"] for c in culprits}
        return faulty <= named, false_culprits, words
    if truth["kind"] == "hog":
        # Every rank on the hog's cores is slowed alike: the first culprit is
        # one of them, with the host as the cause.
        if not culprits:
            return False, false_culprits, words
        first = culprits[0]
        return (first["rank"] in faulty and first.get("cause") == "host_contention",
                false_culprits, words)
    want = truth["faults"][0]
    if want["kind"] == "comm" and not culprits:
        # A ring runs at its slowest link: every rank's transfers slow
        # alike, and traces alone cannot place the link: then the verdict
        # is communication-bound, not job_wide.
        return v["status"] == "communication_bound", false_culprits, words
    if not culprits:
        # A mild compute fault the run has too few steps to tell from noise:
        # right when the verdict names the faulty rank's excess and asks for
        # more steps than the run had, with the number it needs.
        asked = re.search(r"rank (\d+)'s thread used [0-9.]+x .*run ~(\d+) steps to tell",
                          v.get("summary", ""))
        if (asked and want["kind"] == "compute" and int(asked.group(1)) == want["rank"]
                and int(asked.group(2)) > truth["steps"]):
            return True, false_culprits, words + f" (asks for ~{asked.group(2)} steps)"
        # With two ranks more steps cannot tell one rank's extra work from
        # its core's (a probe does not feel all that slows a GEMM): right
        # when the verdict names the faulty rank's excess and asks for the
        # run that can, a third rank or the ranks' cores swapped.
        swap = re.search(r"rank (\d+)'s thread used [0-9.]+x its peer's .*compare with a third "
                         r"rank, or swap the ranks' cores", v.get("summary", ""))
        if (swap and want["kind"] == "compute" and truth["world"] == 2
                and int(swap.group(1)) == want["rank"]):
            return True, false_culprits, words + " (asks for a third rank or swapped cores)"
        realized = truth.get("fault_realized")
        if (want["kind"] == "compute" and realized is not None
                and realized < 1 + REALIZED_FLOOR and v["status"] == "no_straggler"
                and (truth.get("host_core_ratio") or CALM_CORE_RATIO) < CALM_CORE_RATIO
                and want["rank"] not in slowed):
            # The fault as the job measured it is inside the floor: its rank's
            # CPU time per step over its peers' is within what healthy ranks on
            # the same calm host show. Not right: set aside, and the summary
            # scores the rest without it (SET_ASIDE in the words).
            return False, false_culprits, words + (f" (fault measured {realized:.3f}x: inside the "
                                                   f"{100 * REALIZED_FLOOR:.0f}% floor, "
                                                   f"{SET_ASIDE})")
        return False, false_culprits, words
    first = culprits[0]
    if first.get("cause") == "host_contention" and want["kind"] == "compute":
        # The rank named sat on a core the job measured slower by more than
        # the fault's own factor: the faulty rank itself, or another rank
        # the host slowed more than the fault slowed the faulty one (then
        # that rank is the step's slowest, and the job waits for it).
        factor = float(want["spec"][0].split(":")[1])
        slowed_by = truth.get("host_slowed", {})
        probe = slowed_by.get(str(first["rank"]), {}).get("probe_ratio", 1)
        if first["rank"] == want["rank"]:
            return probe >= factor, false_culprits, words
        # Another rank: slower than the faulty rank's fault and core together.
        own = slowed_by.get(str(want["rank"]), {}).get("probe_ratio", 1)
        if probe >= factor * max(1.0, own):
            return True, false_culprits, words
    return (first["rank"] == want["rank"] and first["cause_class"] == want["cause_class"],
            false_culprits, words)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--laggard", required=True, help="the laggard binary")
    p.add_argument("--quick", action="store_true", help="3 two-rank runs (the test subset)")
    p.add_argument("--pipeline", action="store_true",
                   help="dp x pp pipeline jobs (pipeline_job.py) instead of DDP jobs")
    p.add_argument("--worlds", default="2,4,8")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", default="", help="run scenarios whose name contains this")
    p.add_argument("--keep", default="", help="write each run's files under this folder")
    p.add_argument("--json", default="", help="write every run's result to this file")
    p.add_argument("--timeout", type=int, default=300, help="seconds per job")
    p.add_argument("--pin", action="store_true",
                   help="pin rank r to core r mod cores (default: the ranks float over the cores)")
    p.add_argument("--rescore", default="",
                   help="re-diagnose the runs kept under this folder (no jobs are run)")
    p.add_argument("--agent", action="store_true",
                   help="run a real `laggard agent` (the --laggard binary) beside each DDP job: "
                        "the ranks report their steps to it, diagnose also reads its hardware "
                        "log (pipeline jobs run without it)")
    a = p.parse_args()
    if a.rescore:
        return rescore(a)
    global PIN
    PIN = a.pin

    if not have_torch():
        print("SKIP: no torch with gloo for /usr/bin/python3 "
              "(install Debian's python3-torch)")
        return 77
    worlds = [int(w) for w in a.worlds.split(",")]
    runs = pipeline_scenarios(a.quick) if a.pipeline else scenarios(worlds, a.quick)
    runs = [s for s in runs if a.only in s.name]
    reps = 1 if a.quick else a.reps
    if a.agent and any(s.layout for s in runs):
        print("--agent: pipeline jobs run without the agent (pipeline_job.py reports no steps)")
    root = a.keep or tempfile.mkdtemp(prefix="laggard-realjobs-")
    results = []
    t_start = time.time()
    port = 29600 + os.getpid() % 1000
    total = len(runs) * reps
    for rep in range(reps):
        for sc in runs:
            port += 1
            out_dir = os.path.join(root, f"{sc.name}_r{rep}")
            shutil.rmtree(out_dir, ignore_errors=True)
            t0 = time.time()
            before = host_core_ratio()
            ok, msg, agent_ran = run_job(sc, out_dir, port, seed=rep, timeout_s=a.timeout,
                                         agent_laggard=a.laggard if a.agent else None)
            core_ratio = max(before, host_core_ratio())
            record_core_ratio(out_dir, core_ratio)
            if ok is None:
                print(f"[{len(results) + 1}/{total}] {sc.name} rep {rep}: {msg}", flush=True)
                results.append({"scenario": sc.name, "rep": rep, "skipped": msg,
                                "agent": agent_ran})
                continue
            confidence = None
            first_ok = None
            named = None
            if ok:
                report = diagnose(a.laggard, out_dir)
                # truth.json as record_core_ratio() left it: with what the
                # job's own tables measured (host_slowed, machine_slowed_steps).
                with open(os.path.join(out_dir, "truth.json")) as f:
                    truth = json.load(f)
                right, false_culprits, words = score(truth, report)
                confidence = first_confidence(report)
                first_ok = first_right(truth, report, right)
                if sc.kind == "hog":
                    named = neighbour_named(report)
            else:
                right, false_culprits, words = False, 0, msg
            mark = "right" if right else ("WRONG" if sc.asserted else "wrong (not asserted)")
            print(f"[{len(results) + 1}/{total}] {sc.name} rep {rep}: {mark} ({words}) "
                  f"{time.time() - t0:.0f} s, host cores {core_ratio:.2f}x", flush=True)
            record = {"scenario": sc.name, "kind": sc.kind, "severity": sc.severity,
                      "world": sc.world, "rep": rep, "right": right,
                      "asserted": sc.asserted, "host_core_ratio": core_ratio,
                      "false_culprits": false_culprits, "verdict": words,
                      "confidence": confidence, "first_right": first_ok, "agent": agent_ran}
            if sc.kind == "hog":
                record["neighbour_named"] = named
            if ok and truth.get("fault_realized") is not None:
                record["fault_realized"] = truth["fault_realized"]
            record["set_aside"] = ok and words.endswith(f"{SET_ASIDE})")
            if ok and beside_not_named(report):
                record["beside_not_named"] = beside_not_named(report)
            if ok and slower_core(truth, report)[0]:
                record["slower_core"], record["named_host"] = slower_core(truth, report)
            results.append(record)
    wall = time.time() - t_start
    summarize(results, wall, root, a)
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    if a.quick and any(r["asserted"] and not r["right"] for r in results if "skipped" not in r):
        return 1
    return 0


def host_core_ratio():
    """Slowest / fastest core of this host with every core busy (host_noise.py)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return 1.0
    med = {c: sorted(t)[len(t) // 2] for c, t in host_noise.run(cores, 3).items()}
    return max(med.values()) / min(med.values())


# A rank the host slowed, as the job measured it (steps_rank<R>.csv of
# ddp_job.py): its probe's median >= this times the other ranks' median, or
# its run-queue wait over theirs >= HOST_SLOWED_WAIT of its step.
HOST_SLOWED_PROBE = 1.05
HOST_SLOWED_WAIT = 0.05


def host_slowed(out_dir, world):
    """{rank: what shows it} for the ranks the host slowed, from the job's own tables."""
    import csv
    import statistics
    per = {}
    for rank in range(world):
        path = os.path.join(out_dir, f"steps_rank{rank}.csv")
        if not os.path.exists(path):
            return {}
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r.get("cpu_probe_us") and r.get("cpu_wait_ms")]
        if len(rows) < 5:
            return {}
        per[rank] = tuple(statistics.median(float(r[k]) for r in rows)
                          for k in ("cpu_probe_us", "cpu_wait_ms", "step_time_ms"))
    out = {}
    for rank, (probe, wait, step) in per.items():
        others = [v for r, v in per.items() if r != rank]
        if not others:
            continue
        probe_ratio = probe / statistics.median(o[0] for o in others)
        wait_share = (wait - statistics.median(o[1] for o in others)) / step
        if probe_ratio >= HOST_SLOWED_PROBE or wait_share >= HOST_SLOWED_WAIT:
            out[str(rank)] = {"probe_ratio": round(probe_ratio, 3),
                              "wait_share": round(wait_share, 3)}
    return out


# A compute fault's size as the job measured it (steps_rank<R>.csv of
# ddp_job.py): the faulty rank's mean CPU time per step (its thread's, the
# first two steps left out) over the median of its peers'; None for a
# fault from mid-run, two faults or missing tables. A GEMM scaled 1.1x
# makes 1.02-1.10x of the whole step's CPU time (d38, d39); healthy ranks
# on a calm host read up to 1.06x (d38-d39, 112 ranks; one 2-rank 1.11x).
# Under 1 + REALIZED_FLOOR, on a calm host and a core the host did not
# slow, the fault is inside the floor: a no-straggler verdict for it is
# set aside (not right; the summary scores the other runs apart).
REALIZED_FLOOR = 0.05
SET_ASIDE = "set aside"


def fault_realized(out_dir, truth):
    """The faulty rank's CPU time per step over its peers', as measured."""
    import csv
    import statistics
    faults = truth.get("faults", [])
    if (len(faults) != 1 or faults[0]["kind"] != "compute" or faults[0].get("onset_step", 0)
            or truth["world"] < 2):
        return None
    means = {}
    for rank in range(truth["world"]):
        path = os.path.join(out_dir, f"steps_rank{rank}.csv")
        if not os.path.exists(path):
            return None
        with open(path) as f:
            cpu = [float(r["cpu_ms"]) for r in csv.DictReader(f)
                   if r.get("cpu_ms") and int(r["step"]) >= 2]
        if len(cpu) < 5:
            return None
        means[rank] = statistics.mean(cpu)
    rank = faults[0]["rank"]
    peers = [m for r, m in means.items() if r != rank]
    return round(means[rank] / statistics.median(peers), 4)


MACHINE_SLOWED_PROBE = 1.2   # every rank's probe over its own run median
MACHINE_SLOWED_STEPS = 3     # consecutive steps


def machine_slowed(out_dir, world):
    """Steps in which the machine itself ran slower for every rank: runs of
    >= MACHINE_SLOWED_STEPS steps where the median over the ranks of each
    rank's probe, over its own median, is >= MACHINE_SLOWED_PROBE."""
    import csv
    import statistics
    rises = collections.defaultdict(list)
    for rank in range(world):
        path = os.path.join(out_dir, f"steps_rank{rank}.csv")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r.get("cpu_probe_us")]
        if len(rows) < 5:
            return []
        med = statistics.median(float(r["cpu_probe_us"]) for r in rows)
        for r in rows:
            rises[int(r["step"])].append(float(r["cpu_probe_us"]) / med)
    slow = sorted(st for st, v in rises.items()
                  if len(v) == world and statistics.median(v) >= MACHINE_SLOWED_PROBE)
    out, run = [], []
    for st in slow + [None]:
        if run and (st is None or st != run[-1] + 1):
            if len(run) >= MACHINE_SLOWED_STEPS:
                out.extend(run)
            run = []
        if st is not None:
            run.append(st)
    return out


def record_core_ratio(out_dir, ratio):
    path = os.path.join(out_dir, "truth.json")
    with open(path) as f:
        truth = json.load(f)
    truth["host_core_ratio"] = round(ratio, 3)
    truth["host_slowed"] = host_slowed(out_dir, truth["world"])
    truth["machine_slowed_steps"] = machine_slowed(out_dir, truth["world"])
    truth["fault_realized"] = fault_realized(out_dir, truth)
    with open(path, "w") as f:
        json.dump(truth, f, indent=1)


def rescore(a):
    """Scores every kept run under a.rescore with a.laggard, from its truth.json."""
    t_start = time.time()
    results = []
    dirs = sorted(d for d in os.listdir(a.rescore)
                  if a.only in d and os.path.exists(os.path.join(a.rescore, d, "truth.json")))
    for i, d in enumerate(dirs):
        out_dir = os.path.join(a.rescore, d)
        with open(os.path.join(out_dir, "truth.json")) as f:
            truth = json.load(f)
        if "host_slowed" not in truth:  # kept before the job's tables measured it
            truth["host_slowed"] = host_slowed(out_dir, truth["world"])
        if "machine_slowed_steps" not in truth:
            truth["machine_slowed_steps"] = machine_slowed(out_dir, truth["world"])
        if "fault_realized" not in truth:
            truth["fault_realized"] = fault_realized(out_dir, truth)
        report = diagnose(a.laggard, out_dir)
        right, false_culprits, words = score(truth, report)
        print(f"[{i + 1}/{len(dirs)}] {d}: {'right' if right else 'WRONG'} ({words})", flush=True)
        record = {"scenario": truth["scenario"], "kind": truth["kind"],
                  "severity": truth["severity"], "world": truth["world"], "rep": d,
                  "right": right, "asserted": True,
                  "host_core_ratio": truth.get("host_core_ratio"),
                  "false_culprits": false_culprits, "verdict": words,
                  "confidence": first_confidence(report),
                  "first_right": first_right(truth, report, right),
                  "agent": bool(agent_logs(out_dir))}
        if truth["kind"] == "hog":
            record["neighbour_named"] = neighbour_named(report)
        if truth.get("fault_realized") is not None:
            record["fault_realized"] = truth["fault_realized"]
        record["set_aside"] = "error" not in report and words.endswith(f"{SET_ASIDE})")
        if beside_not_named(report):
            record["beside_not_named"] = beside_not_named(report)
        if slower_core(truth, report)[0]:
            record["slower_core"], record["named_host"] = slower_core(truth, report)
        results.append(record)
    summarize(results, time.time() - t_start, a.rescore, a)
    return 0


# laggard's own words (src/verdict/verdict.h): low < 0.5 <= medium < 0.8 <= high.
RELIABILITY_BINS = [(0.0, 0.5, "low"), (0.5, 0.8, "medium"), (0.8, 1.01, "high")]


def reliability(scored):
    """Prints how often a run that names a culprit with a given confidence is
    right (the whole run: every fault named, nothing false), and how often
    its first culprit, the one the confidence is of, is a real one
    (first_right): a calibrated confidence c is right about c of the time."""
    named = [r for r in scored if r.get("confidence") is not None]
    if not named:
        return
    print("\nfirst culprit's confidence   runs  run right  first culprit right  mean confidence")
    for lo, hi, word in RELIABILITY_BINS:
        rs = [r for r in named if lo <= r["confidence"] < hi]
        if not rs:
            print(f"  {word:<6} [{lo:.2f}, {min(hi, 1.0):.2f}) {0:>7}")
            continue
        k = sum(r["right"] for r in rs)
        firsts = [r for r in rs if r.get("first_right") is not None]
        f = (f"{100.0 * sum(r['first_right'] for r in firsts) / len(firsts):>4.0f}%"
             if firsts else "   -")
        mean = sum(r["confidence"] for r in rs) / len(rs)
        print(f"  {word:<6} [{lo:.2f}, {min(hi, 1.0):.2f}) {len(rs):>7}  {100.0 * k / len(rs):>8.0f}%"
              f"  {f:>19}  {mean:.2f}")
    none = [r for r in scored if r.get("confidence") is None]
    if none:
        print(f"  no culprit named {len(none):>9}  {100.0 * sum(r['right'] for r in none) / len(none):>8.0f}%")


def summarize(results, wall, root, a):
    by = collections.OrderedDict()
    for r in results:
        if "skipped" in r:
            continue
        key = (r["kind"], r["severity"])
        n, k = by.get(key, (0, 0))
        by[key] = (n + 1, k + int(r["right"]))
    print("\nkind         severity    runs  right")
    for (kind, sev), (n, k) in by.items():
        print(f"{kind:<12} {sev:<10} {n:>5}  {k:>3} ({100.0 * k / n:.0f}%)")
    scored = [r for r in results if "skipped" not in r]
    healthy = [r for r in scored if r["kind"] == "healthy"]
    false_total = sum(r["false_culprits"] for r in scored)
    right = sum(r["right"] for r in scored)
    print(f"\nall: {right}/{len(scored)} right; healthy runs {len(healthy)}, "
          f"{sum(1 for r in healthy if not r['right'])} wrong; false culprits {false_total}; "
          f"skipped {len(results) - len(scored)}; wall {wall:.0f} s; files in {root}")
    for w in sorted({r["world"] for r in scored}):
        rw = [r for r in scored if r["world"] == w]
        hw = [r for r in rw if r["kind"] == "healthy"]
        print(f"world {w}: {sum(r['right'] for r in rw)}/{len(rw)} right; healthy "
              f"{sum(r['right'] for r in hw)}/{len(hw)}")
    known = [r for r in scored if r.get("host_core_ratio")]
    if known:
        for calm in (True, False):
            rs = [r for r in known if (r["host_core_ratio"] < CALM_CORE_RATIO) == calm]
            hs = [r for r in rs if r["kind"] == "healthy"]
            word = "calm" if calm else "unequal"
            print(f"host {word} (cores {'<' if calm else '>='} {CALM_CORE_RATIO}x): "
                  f"{sum(r['right'] for r in rs)}/{len(rs)} right; healthy "
                  f"{sum(r['right'] for r in hs)}/{len(hs)}; false culprits "
                  f"{sum(r['false_culprits'] for r in rs)}")
    # Ranks on a core the job measured slower (host_slowed probe >= 1.2x its
    # peers'), outside CPU-hog and throttled-link runs, not the faulty rank:
    # how many the verdict named with the host as the cause (issue 45 asks
    # for such a rank named host_contention).
    slow = [(r, k) for r in scored for k in r.get("slower_core", [])]
    if slow:
        named = sum(1 for r, k in slow if k in r.get("named_host", []))
        print(f"ranks on a core measured >= {SLOWER_CORE_PROBE}x slower (no hog, no link fault, "
              f"not faulty): {len(slow)} in {len(set(id(r) for r, _ in slow))} runs; named "
              f"host_contention: {named}")
    aside = [r for r in scored if r.get("set_aside")]
    if aside:
        rest = [r for r in scored if r not in aside]
        print(f"set aside, a compute fault measured inside the {100 * REALIZED_FLOOR:.0f}% floor "
              f"with no straggler said: {len(aside)}; the rest {sum(r['right'] for r in rest)}/"
              f"{len(rest)} right")
    beside = [r for r in scored if r.get("beside_not_named")]
    if beside:
        print(f"ranks said beside the network, not named (CPU time alone): "
              f"{sum(len(r['beside_not_named']) for r in beside)} in {len(beside)} runs")
    # Compute faults from step 0 as the jobs measured them (fault_realized).
    for sev in sorted({r["severity"] for r in scored if r.get("fault_realized") is not None}):
        rs = [r for r in scored if r.get("fault_realized") is not None and r["severity"] == sev]
        inside = [r for r in rs if r["fault_realized"] < 1 + REALIZED_FLOOR]
        floor = [r for r in rs if r.get("set_aside")]
        print(f"compute {sev} as measured: {min(r['fault_realized'] for r in rs):.3f}-"
              f"{max(r['fault_realized'] for r in rs):.3f}x of its peers' CPU time per step; "
              f"{len(inside)} of {len(rs)} inside the {100 * REALIZED_FLOOR:.0f}% floor, "
              f"{len(floor)} set aside with no straggler said; right outside it "
              f"{sum(r['right'] for r in rs if r not in inside)}/{len(rs) - len(inside)}")
    hogs = [r for r in scored if r["kind"] == "hog" and r.get("agent")]
    if hogs:
        named = sum(1 for r in hogs if r.get("neighbour_named"))
        print(f"CPU hog beside the agent: {named}/{len(hogs)} reports name the hog's "
              f"command line ({HOG_CODE!r})")
    reliability(scored)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": results, "wall_s": wall}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
