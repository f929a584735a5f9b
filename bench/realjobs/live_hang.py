#!/usr/bin/env python3
"""A real PyTorch DDP job that hangs, watched live by a real `laggard agent`.

One `laggard agent` (UDP step intake, no GPU) and a W-rank DDP job
(bench/realjobs/ddp_job.py: Debian's python3-torch, gloo, CPU) whose ranks
report every step to the agent through python/laggard_step.py, as a user's
job would. One rank hangs for good at a given step:

  after    after the step's all-reduce and optimizer, before its step ends
           (ddp_job.py hang_after:S): the other ranks report step S and
           block in step S+1's all-reduce. The agent must raise
           laggard_rank_stalled{rank=R} within 2 x the median step time +
           10 s of the hung rank's last report, and never for another rank.
  before   before its forward (hang_before:S): every rank's last step is
           S-1, so the steps cannot name a rank. No rank may be raised.
  die      its process raises before its forward and exits (die:S): as
           `before` for the steps; the others lose their connections to it
           at once (not by the timeout). No rank may be raised.

The process group's timeout is --timeout-s (default 30 s), so the waiting
ranks end with gloo's own timeout error in their stderr, kept beside the
step logs; the hung rank is then killed. Finally `laggard diagnose` reads
the job's files offline (step logs and the real stderr) and its verdict is
printed; it is not scored here (docs/accuracy.md says what it gave).

  bench/realjobs/live_hang.py --laggard build/release/src/laggard            # both kinds
  bench/realjobs/live_hang.py --laggard ... --kind after --keep /tmp/hang     # files kept

Exit status: 0 when every check held, 1 when one failed, 77 when torch is
missing (the test skips).
"""

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from job_env import ONE_THREAD  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHON = "/usr/bin/python3"  # Debian's python3-torch, as realjobs.py


def free_port(kind=socket.SOCK_STREAM):
    """A port free now on 127.0.0.1 for a socket of `kind` (TCP or UDP)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    try:
        return urllib.request.urlopen(url, timeout=1).read().decode()
    except OSError:
        return ""


def samples(text, metric):
    """{rank: value} of a per-rank metric in an exposition."""
    out = {}
    for m in re.finditer(r'^%s\{([^}]*)\} (\S+)$' % re.escape(metric), text, re.M):
        rank = re.search(r'rank="(\d+)"', m.group(1))
        if rank:
            out[int(rank.group(1))] = float(m.group(2))
    return out


def run_case(a, kind, work):
    out = os.path.join(work, kind)
    os.makedirs(out, exist_ok=True)
    http_port, udp_port = free_port(), free_port(socket.SOCK_DGRAM)
    agent = subprocess.Popen(
        [a.laggard, "agent", "--listen", "127.0.0.1:%d" % http_port, "--udp",
         "127.0.0.1:%d" % udp_port, "--host", "node-0", "--sysfs-root", "off",
         "--interval", "0.5", "--log-dir", os.path.join(out, "agent")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ranks = []
    try:
        url = "http://127.0.0.1:%d/metrics" % http_port
        for _ in range(100):
            if scrape(url):
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the agent did not come up")
        # The reference BLAS, one compute thread per rank (realjobs.py).
        env = dict(os.environ, WORLD_SIZE=str(a.world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(free_port()), **ONE_THREAD)
        for r in range(a.world):
            cmd = [TORCH_PYTHON, os.path.join(HERE, "ddp_job.py"), "--out", out,
                   "--steps", str(a.hang_step + 200), "--profile-steps", "2",
                   "--timeout-s", str(a.timeout_s), "--report", "127.0.0.1:%d" % udp_port]
            if r == a.rank:
                cmd += ["--fault", ("die:%d" % a.hang_step) if kind == "die"
                        else "hang_%s:%d" % (kind, a.hang_step)]
            err = open(os.path.join(out, "rank%d.stderr" % r), "w")
            ranks.append(subprocess.Popen(cmd, env=dict(env, RANK=str(r)), stdout=err,
                                          stderr=subprocess.STDOUT))
        # Watch the agent until the waiting ranks give up (the group's timeout).
        started = time.time()
        first_alert = {}   # rank -> time its laggard_rank_stalled first read 1
        last_report = {}   # rank -> (step, the agent's receipt time)
        waiting = [p for r, p in enumerate(ranks) if r != a.rank]
        while time.time() - started < a.timeout_s + 120:
            text = scrape(url)
            now = time.time()
            steps = samples(text, "laggard_step_last")
            seen = samples(text, "laggard_step_last_report_timestamp_seconds")
            for r, t in seen.items():
                last_report[r] = (int(steps.get(r, -1)), t)
            for r, v in samples(text, "laggard_rank_stalled").items():
                if v == 1 and r not in first_alert:
                    first_alert[r] = now
            if all(p.poll() is not None for p in waiting):
                break
            time.sleep(0.2)
        durations = []
        log = os.path.join(out, "rank%d.log" % (1 if a.rank == 0 else 0))
        if not os.path.exists(log):
            print("%s: the job wrote no step log; its stderr:" % kind)
            with open(os.path.join(out, "rank0.stderr")) as f:
                print(f.read()[-2000:])
            return False
        with open(log) as f:
            for line in f:
                m = re.search(r"time ([\d.]+)s", line)
                if m:
                    durations.append(float(m.group(1)))
        median = statistics.median(durations) if durations else 0
        budget = 2 * median + 10
        hung_step, hung_at = last_report.get(a.rank, (-1, 0))
        others = sorted({s for r, (s, _) in last_report.items() if r != a.rank})
        print("%s: rank %d hung at step %d; its last report: step %d; the others' last: %s; "
              "median step %.3f s" % (kind, a.rank, a.hang_step, hung_step, others, median))
        ok = True
        if kind == "after":
            lat = first_alert[a.rank] - hung_at if a.rank in first_alert else None
            print("  laggard_rank_stalled{rank=%d}: %s (target <= %.1f s)"
                  % (a.rank, "%.1f s after its last report" % lat if lat is not None else "never",
                     budget))
            ok &= lat is not None and lat <= budget
        false = sorted(r for r in first_alert if kind != "after" or r != a.rank)
        print("  other ranks raised: %s" % (false or "none"))
        ok &= not false
        codes = [p.poll() for p in waiting]
        print("  waiting ranks' exit codes: %s (gloo's timeout after %g s)" % (codes, a.timeout_s))
        return ok
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
            p.wait()
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a stuck agent is killed, not left behind
            agent.kill()
            agent.wait()


def diagnose(a, work, kind):
    out = os.path.join(work, kind)
    files = sorted(os.path.join(out, f) for f in os.listdir(out)
                   if f.endswith(".log") or f.endswith(".stderr"))
    r = subprocess.run([a.laggard, "diagnose", "--quiet"] + files, capture_output=True, text=True,
                       timeout=120)
    first = r.stdout.strip().splitlines()[:1]
    print("  offline `laggard diagnose` of the logs and stderr: exit %d: %s"
          % (r.returncode, first[0] if first else r.stderr.strip()[:300]))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--laggard", required=True)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--rank", type=int, default=2, help="the rank that hangs")
    p.add_argument("--hang-step", type=int, default=40)
    p.add_argument("--timeout-s", type=float, default=30)
    p.add_argument("--kind", choices=["after", "before", "die", "both"], default="both",
                   help="both: after and before (the test's)")
    p.add_argument("--keep", default=None, help="keep the job's files here")
    a = p.parse_args()
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch.distributed as d; "
                            "assert d.is_available() and d.is_gloo_available()"],
                           capture_output=True) if os.path.exists(TORCH_PYTHON) else None
    if probe is None or probe.returncode != 0:
        print("SKIPPED: no torch with gloo for %s (install Debian's python3-torch; "
              "scripts/dev.sh test does as root)" % TORCH_PYTHON)
        return 77
    work = a.keep or tempfile.mkdtemp(prefix="laggard-live-hang-")
    ok = True
    try:
        for kind in (["after", "before"] if a.kind == "both" else [a.kind]):
            ok &= run_case(a, kind, work)
            diagnose(a, work, kind)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("PASSED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
