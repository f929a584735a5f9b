#!/usr/bin/env python3
"""Live integration test of `laggard watch` with real components on loopback.

Starts 4 `laggard agent`s (scripted GPUs: 4 hosts x 2 GPUs; GPU 1 of node-2
starts throttling -- 93 C, SM clock 1500 MHz, HW thermal slowdown -- at a
known time), the Python step helper reporting steps for 8 ranks (rank r on
node-(r//2) GPU r%2; rank 5 computes 30% slower once its GPU throttles; the
job is synchronous, so every rank reports the same step time and only the
compute_s phase shows rank 5), and a
real Prometheus scraping the agents every second. Then runs
`laggard watch --once` every second from the fault's onset until the verdict
names rank 5 / node-2 GPU 1 with cause thermal, and reports how long that
took. Then checks `laggard watch --listen`'s own metrics. Finally rank 5
hangs after the all-reduce of a step, before reporting it (the others report
that step and block in the next all-reduce, a threading.Barrier here): the
node agent's laggard_rank_stalled{rank="5"}, `watch --listen`'s, and the
`watch --once` verdict (status hang, rank 5, cause stalled) must each come
within 2 x the median step time + 10 s of rank 5's last report. Everything
it starts is stopped; nothing listens outside 127.0.0.0/8.

usage: watch_integration_test.py LAGGARD_BINARY PYTHON_HELPER_DIR
Exit 77 (ctest: skipped) when Prometheus is not installed.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

FAULT_AT_S = 25.0     # seconds after the agents start
STEP_S = 0.5
SLOW = 1.3
COMPUTE_SHARE = 0.6  # of a healthy step
HOSTS = 4
GPUS = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_script(host_index):
    gpus = []
    for g in range(GPUS):
        base_temp = 62 + host_index + g
        fields = {
            "temp_c": base_temp, "sm_clock_mhz": 1965 - 5 * g, "sm_clock_max_mhz": 1980,
            "power_w": 610 + 5 * host_index, "power_limit_w": 700, "power_limit_default_w": 700,
            "util_pct": 97, "clock_events": 0, "pcie_gen": 5, "pcie_gen_max": 5,
            "pcie_width": 16, "pcie_width_max": 16,
        }
        if host_index == 2 and g == 1:
            fields["temp_c"] = [{"from_s": 0, "value": base_temp}, {"from_s": FAULT_AT_S, "value": 93}]
            fields["sm_clock_mhz"] = [{"from_s": 0, "value": 1960}, {"from_s": FAULT_AT_S, "value": 1500}]
            fields["clock_events"] = [{"from_s": 0, "value": 0}, {"from_s": FAULT_AT_S, "value": 64}]
        gpus.append({"name": "NVIDIA H100 80GB HBM3",
                     "uuid": "GPU-%08d-0000-0000-0000-%012d" % (host_index, g),
                     "bus_id": "00000000:%02X:00.0" % (0x18 + g), "fields": fields})
    return {"gpus": gpus}


def main():
    laggard, helper_dir = sys.argv[1], sys.argv[2]
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        print("SKIPPED: prometheus is not installed (scripts/dev.sh test installs Debian's "
              "prometheus when run as root)")
        return 77
    sys.path.insert(0, helper_dir)
    import laggard_step  # noqa: E402

    work = tempfile.mkdtemp(prefix="laggard-watch-it-")
    procs = []
    stop = threading.Event()
    # The all-reduce of each step: no rank leaves it before all arrived.
    allreduce = threading.Barrier(HOSTS * GPUS)
    hang = threading.Event()  # rank 5 hangs after its next all-reduce
    last_report = {}
    try:
        agents = []
        t_start = time.time()
        for h in range(HOSTS):
            script = os.path.join(work, "gpus-%d.json" % h)
            with open(script, "w") as f:
                json.dump(gpu_script(h), f)
            http_port, udp_port = free_port(), free_port()
            p = subprocess.Popen(
                [laggard, "agent", "--listen", "127.0.0.1:%d" % http_port,
                 "--udp", "127.0.0.1:%d" % udp_port, "--fake-gpus", script,
                 "--host", "node-%d" % h, "--sysfs-root", "off", "--interval", "0.5"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            procs.append(p)
            agents.append((http_port, udp_port))
        # Wait until every agent serves /metrics.
        for http_port, _ in agents:
            for _ in range(100):
                try:
                    urllib.request.urlopen("http://127.0.0.1:%d/metrics" % http_port, timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                raise RuntimeError("agent on port %d did not come up" % http_port)

        # Steps: one thread per rank, through the real helper. A synchronous
        # job: every rank reports the same step time (each step waits for the
        # slowest rank's all-reduce), so only the compute-only times, reported
        # beside it (compute_s), show which rank is slow.
        def rank_loop(rank):
            host, gpu = rank // GPUS, rank % GPUS
            rep = laggard_step.Reporter(rank=rank, addr="127.0.0.1:%d" % agents[host][1],
                                        gpu=gpu, use_cuda=False)
            step = 0
            while not stop.is_set():
                stop.wait(STEP_S)  # compute
                try:
                    allreduce.wait()
                except threading.BrokenBarrierError:
                    return
                if rank == 5 and hang.is_set():
                    stop.wait()  # hung after the all-reduce, before its step ends
                    return
                faulty = time.time() - t_start >= FAULT_AT_S
                compute = COMPUTE_SHARE * STEP_S * (1 + 0.01 * ((step * 5 + rank * 3) % 5 - 2))
                if rank == 5 and faulty:
                    compute *= SLOW
                seconds = STEP_S * (1 + 0.01 * ((step * 7) % 5 - 2))
                if faulty:
                    seconds += COMPUTE_SHARE * STEP_S * (SLOW - 1)
                rep.step(step, seconds, compute_s=compute)
                last_report[rank] = (step, time.time())
                step += 1

        threads = [threading.Thread(target=rank_loop, args=(r,), daemon=True) for r in range(HOSTS * GPUS)]
        for t in threads:
            t.start()

        prom_port = free_port()
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: laggard-agent\n    static_configs:\n"
                    "      - targets: [%s]\n" % ", ".join("'127.0.0.1:%d'" % a[0] for a in agents))
        prom = subprocess.Popen(
            [prometheus, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % prom_port, "--log.level=warn"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(prom)
        url = "http://127.0.0.1:%d" % prom_port
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("prometheus did not become ready")

        # Before the fault: no culprit.
        time.sleep(max(0.0, FAULT_AT_S - 5 - (time.time() - t_start)))
        before = subprocess.run([laggard, "watch", "--once", "--json", "--window", "20",
                                 "--prometheus", url], capture_output=True, text=True, timeout=60)
        print("before the fault:", before.stdout.strip())
        assert before.returncode == 0, before.stderr
        verdict = json.loads(before.stdout.strip().splitlines()[-1])
        assert verdict["ranks"] == 8, verdict
        assert verdict["gpus"] == 8, verdict
        assert not any(c.get("cause") == "thermal" for c in verdict["culprits"]), verdict

        # After: poll until the verdict names the throttled GPU.
        time.sleep(max(0.0, FAULT_AT_S - (time.time() - t_start)))
        found = None
        while time.time() - t_start < FAULT_AT_S + 60:
            r = subprocess.run([laggard, "watch", "--once", "--json", "--window", "20",
                                "--prometheus", url], capture_output=True, text=True, timeout=60)
            if r.returncode == 0 and r.stdout.strip():
                v = json.loads(r.stdout.strip().splitlines()[-1])
                top = v["culprits"][0] if v["culprits"] else {}
                if (top.get("rank") == 5 and top.get("host") == "node-2" and top.get("gpu") == 1
                        and top.get("cause") == "thermal"):
                    found = (time.time() - t_start - FAULT_AT_S, v)
                    break
            time.sleep(1)
        assert found is not None, "watch never named rank 5 / node-2 GPU 1 thermal"
        print("time from fault onset to verdict: %.1f s (target < 10 s at a 1 s scrape interval)" % found[0])
        print("verdict:", found[1]["summary"])
        assert found[1]["status"] == "straggler"

        # The watcher's own metrics.
        listen = free_port()
        history = os.path.join(work, "history.db")
        w = subprocess.Popen([laggard, "watch", "--window", "20", "--interval", "1", "--duration", "6",
                              "--listen", "127.0.0.1:%d" % listen, "--prometheus", url,
                              "--record", "--history", history, "--job-id", "live-thermal"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(w)
        metrics = ""
        for _ in range(50):
            time.sleep(0.2)
            try:
                metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % listen, timeout=1).read().decode()
                if 'laggard_straggler{rank="5"' in metrics:
                    break
            except OSError:
                pass
        assert re.search(r'laggard_straggler\{rank="5",host="node-2",gpu="1",cause_class="compute_slow",'
                         r'cause="thermal"\} 0\.\d+', metrics), metrics
        assert 'laggard_verdict_status{status="straggler"} 1' in metrics, metrics
        watched, _ = w.communicate(timeout=30)
        assert w.returncode == 0, watched
        assert "recorded job live-thermal" in watched, watched

        # watch --record put the job in the fleet history: the throttled card,
        # culprit in its one job.
        h = subprocess.run([laggard, "history", "--history", history, "--json"],
                           capture_output=True, text=True, timeout=60)
        assert h.returncode == 0, h.stderr
        fleet = json.loads(h.stdout)
        assert fleet["jobs"] == 1, fleet
        cards = [o for o in fleet["offenders"]
                 if o["kind"] == "gpu" and o["host"] == "node-2" and o["gpu"] == 1]
        assert cards and cards[0]["culprit_all"] == 1, fleet["offenders"]
        print("watch --record:", watched.strip().splitlines()[-1], "; the card:", cards[0]["key"])

        # Rank 5 hangs; the others wait in the next all-reduce.
        listen = free_port()
        w = subprocess.Popen([laggard, "watch", "--window", "30", "--interval", "1", "--duration", "60",
                              "--listen", "127.0.0.1:%d" % listen, "--prometheus", url,
                              "--history", history],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append(w)
        hang.set()
        while 5 in last_report and time.time() - last_report[5][1] < 2 * STEP_S:
            time.sleep(0.05)  # rank 5's last report is in
        hung_step, hung_at = last_report[5]
        budget = 2 * (STEP_S + COMPUTE_SHARE * STEP_S * (SLOW - 1)) + 10  # 2 x the median step + 10 s
        agent_url = "http://127.0.0.1:%d/metrics" % agents[2][0]
        seen = {}
        while time.time() - hung_at < budget + 10 and len(seen) < 3:
            now = time.time() - hung_at
            if "agent" not in seen:
                m = urllib.request.urlopen(agent_url, timeout=1).read().decode()
                if re.search(r'laggard_rank_stalled\{host="node-2",rank="5",gpu="1"[^}]*\} 1\n', m):
                    seen["agent"] = now
            if "watch --listen" not in seen:
                try:
                    m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % listen, timeout=1).read().decode()
                    if 'laggard_rank_stalled{rank="5",host="node-2"} 1' in m:
                        seen["watch --listen"] = now
                        # --history: the fleet's series, the card recorded above.
                        assert re.search(r'laggard_culprit_jobs_total\{host="node-2",'
                                         r'gpu_uuid="GPU-00000002-0000-0000-0000-000000000001",'
                                         r'part="[^"]+",cause="compute_slow/thermal"\} 1\n', m), m
                except OSError:
                    pass
            if "watch --once" not in seen:
                r = subprocess.run([laggard, "watch", "--once", "--json", "--window", "30",
                                    "--prometheus", url], capture_output=True, text=True, timeout=60)
                if r.returncode == 0 and r.stdout.strip():
                    v = json.loads(r.stdout.strip().splitlines()[-1])
                    top = v["culprits"][0] if v["culprits"] else {}
                    if v["status"] == "hang" and top.get("rank") == 5 and top.get("cause") == "stalled":
                        seen["watch --once"] = time.time() - hung_at
                        print("hang verdict:", v["summary"])
                        assert [s["rank"] for s in v["stalled"]] == [5], v
                        assert not v["job_stalled"], v
            time.sleep(0.25)
        others = sorted(st for rk, (st, _) in last_report.items() if rk != 5)
        print("rank 5 hung after step %d; the others' last step: %s" % (hung_step, others))
        for what in ("agent", "watch --listen", "watch --once"):
            print("time from rank 5's last report to the stall alert (%s): %s (target <= %.1f s)"
                  % (what, "%.1f s" % seen[what] if what in seen else "never", budget))
        assert all(what in seen and seen[what] <= budget
                   for what in ("agent", "watch --listen", "watch --once")), seen
        print("PASSED")
        return 0
    finally:
        stop.set()
        allreduce.abort()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
